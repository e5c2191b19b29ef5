/**
 * Checking `TaskLimits` given by a user (`createServer({ tasks: { limits } })`, `new MemoryTaskStore(limits)`):
 * every bound a positive integer, named in the `invalid_option` error when it is not.
 */
import { SluiceError } from '../errors.js';
import { integer } from '../validate.js';
import { kDefaultTaskLimits } from './store.js';
import type { TaskLimits } from './store.js';

/** The largest value each bound takes: what a timer or a byte count can hold without surprises. */
const kMaxima: Readonly<Record<keyof TaskLimits, number>> = {
  maxTasks: 10_000_000,
  maxTasksPerOwner: 10_000_000,
  maxTaskBytes: 2 ** 31 - 1,
  maxStoredBytes: Number.MAX_SAFE_INTEGER,
  // setTimeout-sized: lifetimes are compared with Date.now(), but a client waits for them too.
  defaultTtlMs: 2 ** 31 - 1,
  maxTtlMs: 2 ** 31 - 1,
  pollIntervalMs: 2 ** 31 - 1,
};

/** `limits` over the defaults, each a positive integer; `name` prefixes the option in errors. */
export function resolveTaskLimits(limits: Partial<TaskLimits> | undefined, name = 'tasks.limits'): TaskLimits {
  if (limits === undefined) return kDefaultTaskLimits;
  if (limits === null || typeof limits !== 'object') throw new SluiceError('invalid_option', `${name} must be an object, got ${String(limits)}`);
  const out = {} as Record<keyof TaskLimits, number>;
  for (const key of Object.keys(kMaxima) as (keyof TaskLimits)[]) {
    out[key] = integer(`${name}.${key}`, limits[key], kDefaultTaskLimits[key], 1, kMaxima[key]);
  }
  for (const key of Object.keys(limits)) {
    if (!Object.hasOwn(kMaxima, key)) throw new SluiceError('invalid_option', `${name}.${key} is not a task limit (known: ${Object.keys(kMaxima).join(', ')})`);
  }
  // A bound under another that only took its default pulls that default down with it; both given
  // and contradicting is an error (a default lifetime past the maximum would be cut on every task).
  pair(out, limits, name, 'defaultTtlMs', 'maxTtlMs');
  pair(out, limits, name, 'maxTasksPerOwner', 'maxTasks');
  pair(out, limits, name, 'maxTaskBytes', 'maxStoredBytes');
  return Object.freeze(out);
}

/** Makes `out[small] <= out[large]`: by lowering `small` when the user left it at its default, else `invalid_option`. */
function pair(out: Record<keyof TaskLimits, number>, given: Partial<TaskLimits>, name: string, small: keyof TaskLimits, large: keyof TaskLimits): void {
  if (out[small] <= out[large]) return;
  if (given[small] === undefined) {
    out[small] = out[large];
    return;
  }
  throw new SluiceError('invalid_option', `${name}.${small} (${out[small]}) must not exceed ${name}.${large} (${out[large]})`);
}
