/**
 * A generator thread (worker_threads): opens its share of the connections, waits for the common
 * start, runs the loop and posts its Snapshot. Messages: → {type:'ready'} | {type:'open-failed'};
 * ← {type:'go', startEpochMs}; → {type:'tick'} about every second; → {type:'done', snapshot}.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { runLoop } from './loop.js';
import { openTargets } from './targets.js';
import type { WorkerInput } from './targets.js';

const input = workerData as WorkerInput;
const port = parentPort!;

async function main(): Promise<void> {
  let targets;
  try {
    targets = await openTargets(input);
  } catch (error) {
    port.postMessage({ type: 'open-failed', message: (error as Error).message });
    return;
  }
  port.postMessage({ type: 'ready' });
  const go = await new Promise<{ startEpochMs: number }>((resolve) => port.once('message', resolve));
  // Epoch ms → this thread's performance.now() (each thread has its own time origin).
  const startAt = go.startEpochMs - performance.timeOrigin;
  const snapshot = await runLoop(targets, {
    startAt, warmupMs: input.options.warmupMs, durationMs: input.options.durationMs, rate: input.rate,
    cancelAfterMs: input.options.cancelAfterMs, timeoutMs: input.options.timeoutMs, firstId: input.firstId,
    onTick: (requests, errors) => port.postMessage({ type: 'tick', requests, errors }),
  });
  await Promise.all(targets.map((t) => t.close().catch(() => {})));
  port.postMessage({ type: 'done', snapshot });
}

void main();
