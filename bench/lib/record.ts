/**
 * Records that bench tools write (what a tool saw, and when, in a file named by its `record`
 * argument: they run in other processes and threads). No side effects on import.
 */
import { existsSync, readFileSync } from 'node:fs';

/** Polls `file` (every millisecond) until `pattern` matches its text; rejects after `timeoutMs`. */
export async function waitForRecord(file: string, pattern: RegExp, timeoutMs = 10_000): Promise<RegExpExecArray> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const m = existsSync(file) ? pattern.exec(readFileSync(file, 'utf8')) : null;
    if (m !== null) return m;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${pattern} in ${file}`);
    await new Promise((r) => setTimeout(r, 1));
  }
}
