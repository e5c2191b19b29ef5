/**
 * The default TaskStore: one node's tasks in this thread's memory. The supervisor owns it (workers
 * reach it through remote-store.ts); stdio uses it in-process. Every bound of TaskLimits is
 * enforced here, and every record handed out is a frozen snapshot, so no caller can change the
 * store's state but through its methods.
 */
import { createHmac, randomBytes, timingSafeEqual } from 'node:crypto';
import { SluiceError } from '../errors.js';
import { resolveTaskLimits } from './limits.js';
import type { TaskLimits, TaskStore } from './store.js';
import { isTerminal } from './task.js';
import type { NewTask, TaskChange, TaskError, TaskInputRequest, TaskPage, TaskRecord, TaskStatus } from './task.js';

export interface MemoryTaskStoreOptions {
  /** Epoch-milliseconds clock (tests). Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /**
   * How often expired tasks are deleted. Default min(1 s, `defaultTtlMs` / 4), at least 10 ms. An
   * expired task is unknown to every method at once, whatever this says: it only bounds how long
   * its memory stays held when no one asks for it.
   */
  readonly sweepIntervalMs?: number | undefined;
}

/** What the store holds, for tests and /metrics. */
export interface TaskStoreStats {
  /** Tasks kept (unfinished and finished, not yet expired). */
  readonly tasks: number;
  /** Bytes of their results, errors and input requests/answers (JSON text, UTF-8). */
  readonly bytes: number;
  /** Owners with at least one task kept. */
  readonly owners: number;
}

/** What one client holds: its tasks and their payload bytes, across its sessions. */
interface Usage {
  tasks: number;
  bytes: number;
  /** False for a task created without a client: its own usage, under no per-client bound. */
  readonly bounded: boolean;
}

/** JSON-RPC internal error: what a task fails with when the store ends it (bounds, expiry, a lost runner). */
const kInternalError = -32603;

interface Entry {
  record: TaskRecord;
  /** Creation order across the store: orders an owner's list and positions its cursors. */
  readonly seq: number;
  readonly expiresAt: number;
  /** Every input request key the task ever had: keys are never reused within a task. */
  readonly seenKeys: Set<string>;
  bytes: number;
  /** The client's usage this task counts in (NewTask.client, else its owner). */
  readonly usage: Usage;
  readonly client: string;
}

const kStatuses: ReadonlySet<string> = new Set<TaskStatus>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

type Draft = { -readonly [K in keyof TaskRecord]: TaskRecord[K] };
type Listener = (task: TaskRecord | undefined) => void;

export class MemoryTaskStore implements TaskStore {
  readonly limits: TaskLimits;
  readonly #now: () => number;
  readonly #tasks = new Map<string, Entry>();
  /** Per owner, its tasks in creation order (ascending `seq`). Small: at most `maxTasksPerOwner`. */
  readonly #owners = new Map<string, Entry[]>();
  readonly #watchers = new Map<string, Set<Listener>>();
  /** Per client (principal or address bucket), what its tasks hold: the per-client quotas. */
  readonly #clients = new Map<string, Usage>();
  /** Signs list cursors, so a cursor of another owner (or a made-up one) is refused, not followed. */
  readonly #cursorKey = randomBytes(32);
  readonly #janitor: ReturnType<typeof setInterval>;
  #bytes = 0;
  #seq = 0;
  #closed = false;

  /** `limits`: any subset of TaskLimits over the defaults (checked: `invalid_option`). */
  constructor(limits?: Partial<TaskLimits>, options: MemoryTaskStoreOptions = {}) {
    this.limits = resolveTaskLimits(limits, 'limits');
    this.#now = options.now ?? Date.now;
    const interval = options.sweepIntervalMs ?? Math.max(10, Math.min(1000, Math.floor(this.limits.defaultTtlMs / 4)));
    this.#janitor = setInterval(() => { this.sweep(); }, interval);
    // The janitor alone must not keep a process alive.
    this.#janitor.unref();
  }

  async create(task: NewTask): Promise<TaskRecord> {
    this.#checkOpen();
    checkNewTask(task);
    if (this.#tasks.has(task.taskId)) throw new Error(`task id ${task.taskId} is already in use (ids must be unique random values)`);
    const now = this.#now();
    const { maxTasks, maxTasksPerOwner, maxTasksPerClient, maxStoredBytesPerClient } = this.limits;
    // No client named (a caller that knows none): only the per-owner and node-wide bounds apply.
    const client = typeof task.client === 'string' && task.client !== '' ? task.client : undefined;
    const atClientBound = (): boolean => {
      const usage = client === undefined ? undefined : this.#clients.get(client);
      return usage !== undefined && (usage.tasks >= maxTasksPerClient || usage.bytes >= maxStoredBytesPerClient);
    };
    // At a bound, expired tasks not yet swept must not count against the caller.
    if (this.#tasks.size >= maxTasks || (this.#owners.get(task.owner)?.length ?? 0) >= maxTasksPerOwner || atClientBound()) this.sweep();
    // The client's own bounds first: a client at its quota is told so (and others are unaffected),
    // before it could ever reach the node-wide bound.
    const usage = client === undefined ? undefined : this.#clients.get(client);
    if (usage !== undefined && usage.tasks >= maxTasksPerClient) {
      throw new SluiceError('task_quota_reached', `this client keeps ${usage.tasks} tasks, its limit (maxTasksPerClient ${maxTasksPerClient}); they go when they expire`);
    }
    if (usage !== undefined && usage.bytes >= maxStoredBytesPerClient) {
      throw new SluiceError('task_quota_reached', `this client's tasks hold ${usage.bytes} bytes, its limit (maxStoredBytesPerClient ${maxStoredBytesPerClient})`);
    }
    if (this.#tasks.size >= maxTasks) {
      throw new SluiceError('task_limit_reached', `the server keeps at most ${maxTasks} tasks (maxTasks) and holds that many`);
    }
    if ((this.#owners.get(task.owner)?.length ?? 0) >= maxTasksPerOwner) {
      throw new SluiceError('task_limit_reached', `a client may keep at most ${maxTasksPerOwner} tasks (maxTasksPerOwner) and this one has that many`);
    }
    const requested = task.ttlMs;
    // Only a positive lifetime is a request; anything else gets the default.
    const asked = typeof requested === 'number' && Number.isFinite(requested) && requested >= 1 ? Math.floor(requested) : this.limits.defaultTtlMs;
    const ttlMs = Math.min(asked, this.limits.maxTtlMs);
    const draft: Draft = {
      taskId: task.taskId,
      owner: task.owner,
      dialect: task.dialect,
      toolName: task.toolName,
      runner: task.runner,
      status: 'working',
      createdAt: now,
      lastUpdatedAt: now,
      ttlMs,
      pollIntervalMs: this.limits.pollIntervalMs,
      version: 1,
    };
    if (task.progressToken !== undefined) draft.progressToken = task.progressToken;
    let mineUsage = usage;
    if (mineUsage === undefined) {
      mineUsage = { tasks: 0, bytes: 0, bounded: client !== undefined };
      if (client !== undefined) this.#clients.set(client, mineUsage);
    }
    mineUsage.tasks++;
    const entry: Entry = { record: Object.freeze(draft), seq: ++this.#seq, expiresAt: now + ttlMs, seenKeys: new Set(), bytes: 0, usage: mineUsage, client: client ?? '' };
    this.#tasks.set(task.taskId, entry);
    let mine = this.#owners.get(task.owner);
    if (mine === undefined) this.#owners.set(task.owner, mine = []);
    mine.push(entry);
    this.#notify(task.taskId, entry.record);
    return entry.record;
  }

  async get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    return this.#owned(taskId, owner)?.record;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    this.#checkOpen();
    const now = this.#now();
    const mine = this.#owners.get(owner) ?? [];
    for (const entry of mine.filter((e) => now >= e.expiresAt)) this.#expire(entry);
    const tasks = this.#owners.get(owner) ?? [];
    // Newest first: walk down from `end` (exclusive), the first task older than the cursor's.
    let end = tasks.length;
    if (cursor !== undefined) {
      const after = this.#decodeCursor(owner, cursor);
      end = lowerBound(tasks, after);
    }
    const count = Number.isInteger(limit) && limit > 0 ? limit : 1;
    const start = Math.max(0, end - count);
    const page = tasks.slice(start, end).reverse().map((e) => e.record);
    return start > 0 ? { tasks: page, nextCursor: this.#encodeCursor(owner, tasks[start].seq) } : { tasks: page };
  }

  async update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    const entry = this.#live(taskId);
    if (entry === undefined) return undefined;
    const current = entry.record;
    if (isTerminal(current.status)) return current;
    const next: Draft = { ...current };
    if (change.statusMessage !== undefined) next.statusMessage = String(change.statusMessage);
    if (change.resultJson !== undefined) next.resultJson = String(change.resultJson);
    if (change.error !== undefined) next.error = frozenCopy(change.error);
    if (change.progress !== undefined) next.progress = frozenCopy(change.progress);
    let added = false;
    if (change.addInputRequests !== undefined) {
      const requests: Record<string, TaskInputRequest> = { ...current.inputRequests };
      for (const [key, request] of Object.entries(change.addInputRequests)) {
        // A key once used stays used: an answer can never be taken for a later request.
        if (entry.seenKeys.has(key)) continue;
        entry.seenKeys.add(key);
        requests[key] = request;
        added = true;
      }
      if (added) next.inputRequests = frozenCopy(requests);
    }
    if (change.consumedResponses !== undefined && current.inputResponses !== undefined) {
      const responses: Record<string, unknown> = { ...current.inputResponses };
      for (const key of change.consumedResponses) delete responses[key];
      next.inputResponses = Object.keys(responses).length === 0 ? undefined : Object.freeze(responses);
    }
    if (change.status !== undefined) {
      if (!kStatuses.has(change.status)) throw new TypeError(`not a task status: ${String(change.status)}`);
      next.status = change.status;
    }
    if (isTerminal(next.status)) {
      // Nothing can answer a finished task, nor pick an answer up: let their memory go.
      next.inputRequests = undefined;
      next.inputResponses = undefined;
    } else if (added) {
      next.status = 'input_required';
    }
    return this.#commit(entry, next, change.resultJson !== undefined ? 'result' : 'data');
  }

  async respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined> {
    const entry = this.#owned(taskId, owner);
    if (entry === undefined) return undefined;
    const current = entry.record;
    const outstanding = current.inputRequests;
    if (isTerminal(current.status) || outstanding === undefined || responses === null || typeof responses !== 'object') return current;
    const answered = Object.keys(responses).filter((key) => Object.hasOwn(outstanding, key));
    if (answered.length === 0) return current;
    const requests: Record<string, TaskInputRequest> = { ...outstanding };
    const answers: Record<string, unknown> = { ...current.inputResponses };
    for (const key of answered) {
      delete requests[key];
      answers[key] = frozenCopy(responses[key]);
    }
    const left = Object.keys(requests).length;
    const next: Draft = { ...current, inputRequests: left === 0 ? undefined : Object.freeze(requests), inputResponses: Object.freeze(answers) };
    if (left === 0 && current.status === 'input_required') next.status = 'working';
    return this.#commit(entry, next, 'input');
  }

  async cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined> {
    const entry = this.#owned(taskId, owner);
    if (entry === undefined) return undefined;
    const current = entry.record;
    // The protocol layer decides what a cancel of a finished task answers: it gets the task as is.
    if (isTerminal(current.status)) return current;
    const next: Draft = { ...current, status: 'cancelled', inputRequests: undefined, inputResponses: undefined };
    if (statusMessage !== undefined) next.statusMessage = String(statusMessage);
    return this.#commit(entry, next, 'data');
  }

  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void {
    let listeners = this.#watchers.get(taskId);
    if (listeners === undefined) this.#watchers.set(taskId, listeners = new Set());
    // A wrapper per call, so the same function watched twice is told twice and unwatched once each.
    const own: Listener = (task) => listener(task);
    listeners.add(own);
    return () => {
      const set = this.#watchers.get(taskId);
      if (set === undefined) return;
      set.delete(own);
      if (set.size === 0) this.#watchers.delete(taskId);
    };
  }

  async runnerLost(runner: string, reason: string): Promise<number> {
    this.#checkOpen();
    let failed = 0;
    for (const entry of [...this.#tasks.values()]) {
      if (entry.record.runner !== runner || isTerminal(entry.record.status)) continue;
      if (this.#now() >= entry.expiresAt) {
        this.#expire(entry);
        continue;
      }
      this.#fail(entry, reason);
      failed++;
    }
    return failed;
  }

  /** Deletes every task past its lifetime (the janitor calls it); returns how many. */
  sweep(): number {
    if (this.#closed) return 0;
    const now = this.#now();
    let expired = 0;
    for (const entry of [...this.#tasks.values()]) {
      if (now >= entry.expiresAt && this.#tasks.get(entry.record.taskId) === entry) {
        this.#expire(entry);
        expired++;
      }
    }
    return expired;
  }

  stats(): TaskStoreStats {
    return { tasks: this.#tasks.size, bytes: this.#bytes, owners: this.#owners.size };
  }

  /** Stops the janitor and drops every task (watchers are not told: the server is going away). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#janitor);
    this.#tasks.clear();
    this.#owners.clear();
    this.#clients.clear();
    this.#watchers.clear();
    this.#bytes = 0;
  }

  // ---------------------------------------------------------------------------------------------

  #checkOpen(): void {
    if (this.#closed) throw new SluiceError('transport_closed', 'the task store is closed');
  }

  /** The task unless it is unknown or expired (an expired one is deleted on the way). */
  #live(taskId: string): Entry | undefined {
    this.#checkOpen();
    const entry = this.#tasks.get(taskId);
    if (entry === undefined) return undefined;
    if (this.#now() >= entry.expiresAt) {
      this.#expire(entry);
      return undefined;
    }
    return entry;
  }

  /** `#live`, and the owner's: another owner's task is as unknown. */
  #owned(taskId: string, owner: string): Entry | undefined {
    const entry = this.#live(taskId);
    return entry !== undefined && entry.record.owner === owner ? entry : undefined;
  }

  /**
   * Stores `next` as the task's new version, unless its payload passes a bound: then the task
   * fails instead and the payload is dropped (the runner cannot make the node hold more).
   */
  #commit(entry: Entry, next: Draft, what: 'result' | 'input' | 'data'): TaskRecord {
    const bytes = payloadBytes(next);
    const { maxTaskBytes, maxStoredBytes, maxStoredBytesPerClient } = this.limits;
    if (bytes > maxTaskBytes) return this.#fail(entry, `task ${what} exceeds ${maxTaskBytes} bytes`);
    // The client's own room first: one client's results can fill only its share, never another's.
    if (entry.usage.bounded && entry.usage.bytes - entry.bytes + bytes > maxStoredBytesPerClient) {
      this.sweep();
      if (!this.#tasks.has(entry.record.taskId)) return entry.record;
      if (entry.usage.bytes - entry.bytes + bytes > maxStoredBytesPerClient) {
        return this.#fail(entry, `this client's task storage is full (maxStoredBytesPerClient ${maxStoredBytesPerClient} bytes)`);
      }
    }
    if (this.#bytes - entry.bytes + bytes > maxStoredBytes) {
      // Expired tasks not yet swept must not hold room another task needs.
      this.sweep();
      if (!this.#tasks.has(entry.record.taskId)) return entry.record;
      if (this.#bytes - entry.bytes + bytes > maxStoredBytes) return this.#fail(entry, `task store full (${maxStoredBytes} bytes)`);
    }
    return this.#store(entry, next, bytes);
  }

  /**
   * The store ends the task: `failed` with an internal error, every payload dropped. That error is
   * not counted in the bytes (it is small and one per task, so bounded by `maxTasks`): what is
   * counted never passes `maxStoredBytes`.
   */
  #fail(entry: Entry, message: string): TaskRecord {
    const error: TaskError = Object.freeze({ code: kInternalError, message });
    const next: Draft = {
      ...entry.record, status: 'failed', statusMessage: message, error,
      resultJson: undefined, inputRequests: undefined, inputResponses: undefined,
    };
    return this.#store(entry, next, 0);
  }

  #store(entry: Entry, next: Draft, bytes: number): TaskRecord {
    next.version = entry.record.version + 1;
    next.lastUpdatedAt = this.#now();
    this.#bytes += bytes - entry.bytes;
    entry.usage.bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    entry.record = Object.freeze(compact(next));
    this.#notify(entry.record.taskId, entry.record);
    return entry.record;
  }

  /** Past its lifetime: an unfinished task fails first (its watchers see why), then it is deleted. */
  #expire(entry: Entry): void {
    const { taskId, owner } = entry.record;
    if (!isTerminal(entry.record.status)) this.#fail(entry, 'task expired');
    this.#tasks.delete(taskId);
    const mine = this.#owners.get(owner);
    if (mine !== undefined) {
      const at = lowerBound(mine, entry.seq);
      if (mine[at] === entry) mine.splice(at, 1);
      if (mine.length === 0) this.#owners.delete(owner);
    }
    this.#bytes -= entry.bytes;
    entry.usage.bytes -= entry.bytes;
    entry.bytes = 0;
    if (--entry.usage.tasks === 0 && this.#clients.get(entry.client) === entry.usage) this.#clients.delete(entry.client);
    this.#notify(taskId, undefined);
    this.#watchers.delete(taskId);
  }

  #notify(taskId: string, task: TaskRecord | undefined): void {
    const listeners = this.#watchers.get(taskId);
    if (listeners === undefined) return;
    // A copy: a listener may unwatch (or watch) while being told.
    for (const listener of [...listeners]) {
      try {
        listener(task);
      } catch (error) {
        // The contract says listeners must not throw; one that does must not keep the others from
        // being told, nor leave the store half-changed. Visible, not fatal.
        process.emitWarning(`a task watcher threw: ${error instanceof Error ? error.message : String(error)}`, 'SluiceWarning');
      }
    }
  }

  #mac(owner: string, seq: string): Buffer {
    return createHmac('sha256', this.#cursorKey).update(owner).update('\u0000').update(seq).digest().subarray(0, 12);
  }

  #encodeCursor(owner: string, seq: number): string {
    const position = seq.toString(36);
    return `${position}.${this.#mac(owner, position).toString('base64url')}`;
  }

  #decodeCursor(owner: string, cursor: unknown): number {
    const match = typeof cursor === 'string' ? /^([0-9a-z]{1,11})\.([A-Za-z0-9_-]{16})$/.exec(cursor) : null;
    if (match !== null) {
      const given = Buffer.from(match[2], 'base64url');
      if (given.length === 12 && timingSafeEqual(given, this.#mac(owner, match[1]))) return parseInt(match[1], 36);
    }
    throw new SluiceError('invalid_cursor', 'the cursor is not one this server gave for this list');
  }
}

/** The first index in `entries` (ascending seq) whose seq is at least `seq`. */
function lowerBound(entries: readonly Entry[], seq: number): number {
  let lo = 0;
  let hi = entries.length;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (entries[mid].seq < seq) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

function checkNewTask(task: NewTask): void {
  if (task === null || typeof task !== 'object') throw new TypeError('create needs a task');
  for (const key of ['taskId', 'owner', 'toolName', 'runner'] as const) {
    if (typeof task[key] !== 'string' || task[key] === '') throw new TypeError(`task.${key} must be a non-empty string`);
  }
  if (task.dialect !== 'legacy' && task.dialect !== 'modern') throw new TypeError(`task.dialect must be 'legacy' or 'modern'`);
}

/** Bytes a task makes the node hold for it: its result, error and input requests/answers as UTF-8 JSON. */
function payloadBytes(record: Draft): number {
  let bytes = 0;
  if (record.resultJson !== undefined) bytes += Buffer.byteLength(record.resultJson);
  if (record.error !== undefined) bytes += jsonBytes(record.error);
  if (record.inputRequests !== undefined) bytes += jsonBytes(record.inputRequests);
  if (record.inputResponses !== undefined) bytes += jsonBytes(record.inputResponses);
  return bytes;
}

function jsonBytes(value: unknown): number {
  const text = JSON.stringify(value);
  return text === undefined ? 0 : Buffer.byteLength(text);
}

/** A deep copy, deeply frozen: what a caller passed in can no longer change what the store keeps. */
function frozenCopy<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

function deepFreeze<T>(value: T): T {
  // Typed arrays cannot be frozen (their elements are not properties); JSON never makes them.
  if (ArrayBuffer.isView(value)) return value;
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}

/** The record without its undefined fields (what crosses a thread then matches what `get` gives). */
function compact(draft: Draft): Draft {
  for (const key of Object.keys(draft) as (keyof Draft)[]) if (draft[key] === undefined) delete draft[key];
  return draft;
}
