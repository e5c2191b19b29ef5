/** Pool thread entry (piscina): runs one `pool: true` tool call against the shared registry. */
import { workerData } from 'node:worker_threads';
import { runPoolTask } from '../src/tools/pool-thread.js';
import type { PoolTask } from '../src/tools/pool.js';

export default function (task: PoolTask): Promise<unknown> {
  return runPoolTask(workerData as { toolsModule: string; registry: import('../src/registry/index.js').RegistryDescriptor }, task);
}
