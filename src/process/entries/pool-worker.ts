/** Pool thread entry (piscina): runs one `pool: true` tool call against the shared registry. */
import { workerData } from 'node:worker_threads';
import { runPoolTask, startPoolThread } from '../pool-thread.js';
import type { PoolTask, PoolThreadData } from '../../tools/pool.js';

// Piscina posts its READY once this module has evaluated: everything is loaded by then.
await startPoolThread(workerData as PoolThreadData);

export default function (task: PoolTask): Promise<unknown> {
  return runPoolTask(workerData as PoolThreadData, task);
}
