/**
 * PLACEHOLDER (branch clusterlink): the Redis task store is being written on another branch; this
 * file only keeps this branch compiling and is replaced at merge. It refuses to be constructed, so
 * cluster mode with tasks on and no user store fails visibly at listen() instead of pretending.
 */
import { SluiceError } from '../errors.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import type { RedisContext } from './contract.js';

// Declaration merging gives the placeholder the TaskStore type the real class will implement; no
// method exists, and none can be reached, since the constructor throws.
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export interface RedisTaskStore extends TaskStore {}
// eslint-disable-next-line @typescript-eslint/no-unsafe-declaration-merging
export class RedisTaskStore {
  constructor(_ctx: RedisContext, _limits: TaskLimits) {
    throw new SluiceError('invalid_option', 'RedisTaskStore: not built yet');
  }
}
