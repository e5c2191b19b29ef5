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
  maxTasksPerClient: 10_000_000,
  maxTaskBytes: 2 ** 31 - 1,
  maxStoredBytes: Number.MAX_SAFE_INTEGER,
  maxStoredBytesPerClient: Number.MAX_SAFE_INTEGER,
  maxResultWaitsPerClient: 10_000_000,
  maxResultWaits: 10_000_000,
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
  pair(out, limits, name, 'maxTasksPerClient', 'maxTasks');
  between(out, limits, name, 'maxTasksPerOwner', 'maxTasksPerClient');
  pair(out, limits, name, 'maxTaskBytes', 'maxStoredBytes');
  pair(out, limits, name, 'maxStoredBytesPerClient', 'maxStoredBytes');
  between(out, limits, name, 'maxTaskBytes', 'maxStoredBytesPerClient');
  pair(out, limits, name, 'maxResultWaitsPerClient', 'maxResultWaits');
  return Object.freeze(out);
}

/**
 * Makes `out[small] <= out[large]` for two bounds already under a common one: the one the user left
 * at its default moves to the other (a per-owner bound given above the per-client default raises
 * the per-client bound with it), both given and contradicting is `invalid_option`.
 */
function between(out: Record<keyof TaskLimits, number>, given: Partial<TaskLimits>, name: string, small: keyof TaskLimits, large: keyof TaskLimits): void {
  if (out[small] <= out[large]) return;
  if (given[large] === undefined) out[large] = out[small];
  else pair(out, given, name, small, large);
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
