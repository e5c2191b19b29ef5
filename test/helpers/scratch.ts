import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

/** Folders `scratchDir` made for the test file that imported this module (each file has its own copy). */
const made: string[] = [];

// Registered while the importing file is collected, so it belongs to that file: it runs after the
// file's own afterAll hooks (vitest runs "after" hooks in reverse order), once its servers are down.
afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/**
 * A fresh folder under the system's temporary one, removed with its contents once the test file
 * that made it has finished. Without it every suite run left a few hundred folders behind, the
 * quickstart's npm install alone about 270 MB.
 */
export function scratchDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
