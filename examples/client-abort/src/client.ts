/**
 * Calls the slow tool and gives up on it twice: once with an AbortController (as a Stop button
 * would), once with a timeout; then lets a short call finish.
 * Usage: node dist/client.js [abort-after-ms] [url]   (defaults: 1000, http://127.0.0.1:3104/mcp)
 */
import { CancelledError, Client, HttpClientTransport } from 'sluice/client';

const abortAfterMs = Number(process.argv[2] ?? 1000);
const url = process.argv[3] ?? 'http://127.0.0.1:3104/mcp';
const client = new Client(new HttpClientTransport({ url }));
const onProgress = (p: { progress: number; total?: number }) => console.log(`  progress ${p.progress}/${p.total}`);

/** Runs one call, printing how it ended; returns 'cancelled' or 'done'. */
async function attempt(label: string, call: () => Promise<Record<string, unknown>>): Promise<'cancelled' | 'done'> {
  const started = Date.now();
  console.log(`${label}:`);
  try {
    const result = await call() as { content: Array<{ text: string }> };
    console.log(`  ${result.content[0].text}`);
    return 'done';
  } catch (error) {
    if (!(error instanceof CancelledError)) throw error;
    // The promise rejects at once, and the server is told (here, 2026-07-28: the request's
    // stream is closed; a 2025 server gets a notifications/cancelled).
    console.log(`  cancelled after ${Date.now() - started} ms: ${error.reason}`);
    return 'cancelled';
  }
}

try {
  // 1. An AbortController: abort() rejects the call with a CancelledError carrying the reason.
  const controller = new AbortController();
  setTimeout(() => controller.abort('the user pressed Stop'), abortAfterMs);
  const first = await attempt(`call 1 (abort after ${abortAfterMs} ms)`, () =>
    client.callTool('slow', { steps: 50 }, { signal: controller.signal, onProgress }));

  // 2. timeoutMs: the same cancel, after that long.
  const second = await attempt('call 2 (timeoutMs: 500)', () =>
    client.callTool('slow', { steps: 50 }, { timeoutMs: 500, onProgress }));

  // 3. A call that finishes well within its timeout.
  const third = await attempt('call 3 (timeoutMs: 5000)', () =>
    client.callTool('slow', { steps: 2 }, { timeoutMs: 5000 }));

  process.exitCode = first === 'cancelled' && second === 'cancelled' && third === 'done' ? 0 : 1;
} finally {
  await client.close();
}
