import type { NewTask, TaskChange, TaskPage, TaskRecord } from './task.js';

/**
 * Where tasks live. Sluice's default (`MemoryTaskStore`) is one node's: it runs in the supervisor
 * and every HTTP worker reaches it over a MessagePort (`TaskStoreClient`), so a task created on one
 * worker is read, answered and cancelled from any other; stdio uses it in-process. Another store
 * (Redis, a database) implements this interface and is given as `createServer({ tasks: { store } })`;
 * it then runs where the default would.
 *
 * Contract, for any implementation:
 * - Every method but `create`, `update`, `runnerLost` and `watch` takes the caller's `owner` and
 *   treats a task of another owner exactly as an unknown one (undefined), so a foreign id reveals
 *   nothing.
 * - `create` resolves only once `get` would find the task (the 2026-07-28 extension sends the
 *   task's id only then), and rejects with a `SluiceError` `task_quota_reached` when the task's
 *   client is at its own bound (`maxTasksPerClient`, `maxStoredBytesPerClient`: checked first), and
 *   `task_limit_reached` past another bound (per owner, node-wide).
 * - Terminal statuses (completed, failed, cancelled) are final: later changes are ignored.
 * - Stores bound what a client can make them keep (tasks and bytes per client across its sessions,
 *   tasks per owner, tasks and bytes in total) and
 *   expire tasks after their TTL; an expired task is as unknown.
 * - `watch` reports every change (and `undefined` when the task is deleted or expires) until the
 *   returned function is called; listeners must not throw.
 */
export interface TaskStore {
  create(task: NewTask): Promise<TaskRecord>;
  get(taskId: string, owner: string): Promise<TaskRecord | undefined>;
  /** The owner's tasks, newest first; `cursor` is one this method returned (anything else: `invalid_cursor`). */
  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage>;
  /** The runner's change (status, result or error, input requests, progress). Undefined: unknown. */
  update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined>;
  /**
   * The client's answers: those whose key is outstanding move from `inputRequests` to
   * `inputResponses` (others are ignored); with none left outstanding the task is `working` again.
   */
  respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined>;
  /** Marks the task `cancelled` unless it is terminal; resolves with the task as it now is. */
  cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined>;
  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void;
  /** The runner is gone (its thread or node died): its unfinished tasks become `failed` with `reason`. Resolves with how many. */
  runnerLost(runner: string, reason: string): Promise<number>;
  close(): Promise<void>;
}

/** Bounds on what clients can make a store keep (SECURITY.md). */
export interface TaskLimits {
  /** Unfinished and finished tasks kept, node-wide. Default 10 000. */
  readonly maxTasks: number;
  /** Tasks one owner (session, principal, anonymous client) may have kept. Default 100. */
  readonly maxTasksPerOwner: number;
  /**
   * Tasks one client may have kept, across all its sessions: its principal when authenticated,
   * else its address bucket (IPv4 address, IPv6 /64). Checked before the node-wide bound, so one
   * client cannot fill the table for the others (429). Default 1 000.
   */
  readonly maxTasksPerClient: number;
  /** Bytes of one task's result, error and input requests/answers (JSON text). Default 1 MiB. */
  readonly maxTaskBytes: number;
  /** Bytes of all tasks' results and input, node-wide. Default 256 MiB. */
  readonly maxStoredBytes: number;
  /** Bytes of one client's tasks' results and input (keyed as `maxTasksPerClient`). Default 32 MiB. */
  readonly maxStoredBytesPerClient: number;
  /**
   * 2025-11-25 `tasks/result` requests one client may keep waiting at once, per HTTP worker
   * thread (node-wide at most workers × this). Past it, 429. Default 100.
   */
  readonly maxResultWaitsPerClient: number;
  /** `tasks/result` requests waiting at once, all clients, per HTTP worker thread. Default 2 000. */
  readonly maxResultWaits: number;
  /** Lifetime when the client asks for none. Default 10 minutes. */
  readonly defaultTtlMs: number;
  /** Longest lifetime granted, whatever the client asks. Default 1 hour. */
  readonly maxTtlMs: number;
  /** The poll interval suggested to clients. Default 250 ms. */
  readonly pollIntervalMs: number;
}

export const kDefaultTaskLimits: TaskLimits = Object.freeze({
  maxTasks: 10_000,
  maxTasksPerOwner: 100,
  maxTasksPerClient: 1_000,
  maxTaskBytes: 1024 * 1024,
  maxStoredBytes: 256 * 1024 * 1024,
  maxStoredBytesPerClient: 32 * 1024 * 1024,
  maxResultWaitsPerClient: 100,
  maxResultWaits: 2_000,
  defaultTtlMs: 10 * 60_000,
  maxTtlMs: 60 * 60_000,
  pollIntervalMs: 250,
});
