/**
 * The default TaskStore: one node's tasks in this thread's memory. The supervisor owns it (workers
 * reach it through port-store.ts); stdio uses it in-process. Every bound of TaskLimits is
 * enforced here, and every record handed out is a frozen snapshot, so no caller can change the
 * store's state but through its methods.
 */
import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../errors.js';
import { encodeCursor, pageSize, parseCursor, verifyCursor } from '../cursor.js';
import { resolveTaskLimits } from '../limits.js';
import type { TaskLimits, TaskStore } from '../store.js';
import { isTerminal } from '../task.js';
import type { NewTask, TaskChange, TaskPage, TaskRecord } from '../task.js';
import {
  applyCancel, applyRespond, applyUpdate, byteRefusal, checkChange, checkNewTask, clientOf, createRefusal, expiresAt,
  failedDraft, kExpiredReason, newRecord, payloadBytes, refusalError, stamp,
} from '../transitions.js';
import type { ByteHoldings, CreateRefusal, Draft, Transition } from '../transitions.js';
import { addWatcher, tellAll } from '../watchers.js';
import type { TaskListener } from '../watchers.js';

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

export class MemoryTaskStore implements TaskStore {
  readonly limits: TaskLimits;
  readonly #now: () => number;
  readonly #tasks = new Map<string, Entry>();
  /** Per owner, its tasks in creation order (ascending `seq`). Small: at most `maxTasksPerOwner`. */
  readonly #owners = new Map<string, Entry[]>();
  readonly #watchers = new Map<string, Set<TaskListener>>();
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
    const client = clientOf(task);
    let refusal = this.#refusal(task.owner, client);
    if (refusal !== undefined) {
      // At a bound, expired tasks not yet swept must not count against the caller.
      this.sweep();
      refusal = this.#refusal(task.owner, client);
      if (refusal !== undefined) throw refusalError(refusal, this.limits);
    }
    const record = newRecord(task, this.limits, this.#now());
    let usage = client === undefined ? undefined : this.#clients.get(client);
    if (usage === undefined) {
      usage = { tasks: 0, bytes: 0, bounded: client !== undefined };
      if (client !== undefined) this.#clients.set(client, usage);
    }
    usage.tasks++;
    const entry: Entry = { record, seq: ++this.#seq, expiresAt: expiresAt(record), seenKeys: new Set(), bytes: 0, usage, client: client ?? '' };
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
      const parsed = parseCursor(cursor);
      verifyCursor(this.#cursorKey, owner, parsed);
      end = lowerBound(tasks, parsed.position);
    }
    const start = Math.max(0, end - pageSize(limit));
    const page = tasks.slice(start, end).reverse().map((e) => e.record);
    return start > 0 ? { tasks: page, nextCursor: encodeCursor(this.#cursorKey, owner, tasks[start].seq) } : { tasks: page };
  }

  async update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    checkChange(change);
    const entry = this.#live(taskId);
    if (entry === undefined) return undefined;
    const step = applyUpdate(entry.record, change, entry.seenKeys);
    if (step === undefined) return entry.record;
    for (const key of step.added) entry.seenKeys.add(key);
    return this.#commit(entry, step);
  }

  async respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined> {
    const entry = this.#owned(taskId, owner);
    if (entry === undefined) return undefined;
    const step = applyRespond(entry.record, responses);
    return step === undefined ? entry.record : this.#commit(entry, step);
  }

  async cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined> {
    const entry = this.#owned(taskId, owner);
    if (entry === undefined) return undefined;
    const step = applyCancel(entry.record, statusMessage);
    return step === undefined ? entry.record : this.#commit(entry, step);
  }

  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void {
    return addWatcher(this.#watchers, taskId, listener);
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

  /** What would refuse a create for this owner and client now (counting what is not yet swept). */
  #refusal(owner: string, client: string | undefined): CreateRefusal | undefined {
    const usage = client === undefined ? undefined : this.#clients.get(client);
    const held = { tasks: this.#tasks.size, ownerTasks: this.#owners.get(owner)?.length ?? 0, client: usage };
    return createRefusal(held, this.limits);
  }

  /**
   * Stores the transition's record as the task's new version, unless its payload passes a bound:
   * then the task fails instead and the payload is dropped (the runner cannot make the node hold more).
   */
  #commit(entry: Entry, step: Transition): TaskRecord {
    const bytes = payloadBytes(step.next);
    let refusal = byteRefusal(this.limits, step.what, bytes, this.#held(entry));
    if (refusal?.shared === true) {
      // Expired tasks not yet swept must not hold room another task needs.
      this.sweep();
      if (!this.#tasks.has(entry.record.taskId)) return entry.record;
      refusal = byteRefusal(this.limits, step.what, bytes, this.#held(entry));
    }
    return refusal === undefined ? this.#store(entry, step.next, bytes) : this.#fail(entry, refusal.message);
  }

  /** The payload bytes held beside the task's next version: its own, its client's (unbounded: undefined), the store's. */
  #held(entry: Entry): ByteHoldings {
    return { task: entry.bytes, client: entry.usage.bounded ? entry.usage.bytes : undefined, total: this.#bytes };
  }

  /** The store ends the task (failedDraft): failed, its payload dropped and no longer counted. */
  #fail(entry: Entry, message: string): TaskRecord {
    return this.#store(entry, failedDraft(entry.record, message), 0);
  }

  #store(entry: Entry, next: Draft, bytes: number): TaskRecord {
    this.#bytes += bytes - entry.bytes;
    entry.usage.bytes += bytes - entry.bytes;
    entry.bytes = bytes;
    entry.record = stamp(next, entry.record, this.#now());
    this.#notify(entry.record.taskId, entry.record);
    return entry.record;
  }

  /** Past its lifetime: an unfinished task fails first (its watchers see why), then it is deleted. */
  #expire(entry: Entry): void {
    const { taskId, owner } = entry.record;
    if (!isTerminal(entry.record.status)) this.#fail(entry, kExpiredReason);
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
    if (listeners !== undefined) tellAll(listeners, task);
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
