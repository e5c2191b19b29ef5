import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const made: string[] = [];
let hooked = false;

/**
 * A fresh folder under the system's temporary one, removed with its contents when this bench
 * process exits (wrk scripts, request records, profiles: read before the end, never kept).
 */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  if (!hooked) {
    hooked = true;
    process.once('exit', () => { for (const d of made) rmSync(d, { recursive: true, force: true }); });
  }
  return dir;
}
