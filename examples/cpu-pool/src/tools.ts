import { threadId } from 'node:worker_threads';
import { defineTool } from 'sluice';

type Run = {
  n: number;
  /** The last number checked. */
  reached: number;
  primes: number;
  cancelled: boolean;
  ms: number;
  thread: number;
};

/** The last count_primes run in this thread (module state of the pool thread that ran it). */
let lastRun: Run | undefined;

function isPrime(k: number): boolean {
  if (k < 2) return false;
  for (let d = 2; d * d <= k; d++) if (k % d === 0) return false;
  return true;
}

/**
 * CPU-bound: a loop with no await. `pool: true` runs it in a pool thread, so the HTTP thread keeps
 * answering other requests; the loop polls `ctx.cancelled` (one Atomics.load of shared memory).
 */
export const countPrimes = defineTool<{ n: number }>({
  name: 'count_primes',
  description: 'Counts the primes up to n by trial division (slow on purpose). Stops when cancelled.',
  inputSchema: { type: 'object', properties: { n: { type: 'integer', minimum: 2, maximum: 1e12 } }, required: ['n'] },
  pool: true,
  handler: ({ n }, ctx) => {
    const started = Date.now();
    let primes = 0;
    let k = 2;
    for (; k <= n; k++) {
      if (ctx.cancelled) break;
      if (isPrime(k)) primes++;
    }
    const cancelled = k <= n;
    lastRun = { n, reached: k - 1, primes, cancelled, ms: Date.now() - started, thread: threadId };
    if (cancelled) console.error(`count_primes: cancelled after ${lastRun.ms} ms at ${lastRun.reached} of ${n} (${ctx.reason})`);
    return lastRun;   // after a cancel nobody reads it: the client has gone
  },
});

/** Reports what the last count_primes run in this pool thread did (runs in the pool too). */
export const lastRunTool = defineTool({
  name: 'last_run',
  description: 'What the last count_primes run did: how far it got and whether it was cancelled.',
  inputSchema: { type: 'object', properties: {} },
  pool: true,
  handler: () => lastRun ?? 'no count_primes run in this pool thread yet',
});

export default [countPrimes, lastRunTool];
