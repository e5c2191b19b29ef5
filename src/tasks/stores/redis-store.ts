/**
 * RedisTaskStore: the TaskStore of cluster mode. Every Sluice node's store works on the same Redis
 * keys, so a task created on node A is read, answered and cancelled through B, and A's watchers
 * see it. Its transitions are MemoryTaskStore's, from the same pure functions (tasks/transitions.ts:
 * bounds, byte accounting, lifetimes, owner isolation, terminal finality, answers and their keys),
 * and its cursors theirs (tasks/cursor.ts); what it adds is the cluster: every change is one Lua
 * script (redis-lua.ts, where the keys are listed),
 * `create` resolves once Redis acknowledged the write (a tasks/get on any node then finds it), and
 * a node that stops heartbeating has its unfinished tasks failed by the others.
 *
 * Only `import type` of ioredis here: the node's connection is given in the RedisContext, so this
 * module loads no Redis code of its own.
 */
import { createHash, randomBytes } from 'node:crypto';
import type { Redis } from 'ioredis';
import { SluiceError } from '../../errors.js';
import { integer } from '../../validate.js';
import { encodeCursor, pageSize, parseCursor, verifyCursor } from '../cursor.js';
import type { ParsedCursor } from '../cursor.js';
import { resolveTaskLimits } from '../limits.js';
import { changeFields, createFields, decodeRow, hashOf } from './redis-hash.js';
import type { Row } from './redis-hash.js';
import type { TaskLimits, TaskStore } from '../store.js';
import type { NewTask, TaskChange, TaskPage, TaskRecord } from '../task.js';
import {
  applyCancel, applyRespond, applyUpdate, byteMessages, checkChange, checkNewTask, clientOf, newRecord, refusalError,
} from '../transitions.js';
import type { CreateRefusal, Transition } from '../transitions.js';
import { tellAll } from '../watchers.js';
import type { TaskListener } from '../watchers.js';
import { resubscribeOnReconnect } from '../../cluster/resubscribe.js';
import type { RedisContext } from '../../cluster/contract.js';
import { kScripts } from './redis-lua.js';
import type { ScriptName } from './redis-lua.js';

export interface RedisTaskStoreOptions {
  /**
   * How often this node writes its heartbeat (which lives 3 × this) and sweeps: expired tasks,
   * and the unfinished tasks of nodes whose heartbeat is gone. Default 2000 ms.
   */
  readonly heartbeatMs?: number | undefined;
  /** Epoch-milliseconds clock (tests). Default `Date.now`. */
  readonly now?: (() => number) | undefined;
  /**
   * Longest wait for one Redis round trip before the call rejects with `cluster_unavailable`
   * (a command queued on a reconnecting connection must not hang a request). Default 2000 ms.
   */
  readonly commandTimeoutMs?: number | undefined;
}

/** What a task fails with when the node running it stopped heartbeating. */
export const kNodeStoppedReason = 'the node running this task stopped';

/**
 * How long a task's key outlives its lifetime in Redis. Expiry is decided by the stores' clock
 * (every read and sweep); Redis's own expiry is the backstop for when no node is left to sweep.
 */
const kGraceMs = 60_000;

interface Watch {
  readonly listeners: Set<TaskListener>;
  /** The newest version told, so a change seen both locally and over pub/sub is told once. */
  version: number;
}

interface Script {
  readonly source: string;
  readonly sha: string;
}

const kScriptTable: Readonly<Record<ScriptName, Script>> = Object.fromEntries(
  Object.entries(kScripts).map(([name, source]) => [name, { source, sha: createHash('sha1').update(source).digest('hex') }]),
) as Record<ScriptName, Script>;

/** Failed creates remembered for their tombstone at once (each a task id and a number). */
const kMaxAbandoned = 10_000;

/** Tries of a change computed from a version another node changed meanwhile, before giving up. */
const kMaxRetries = 64;

export class RedisTaskStore implements TaskStore {
  readonly limits: TaskLimits;
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nodeId: string;
  readonly #now: () => number;
  readonly #heartbeatMs: number;
  readonly #timeoutMs: number;
  /** How long shared indexes outlive their last write: past any task's life and any heartbeat. */
  readonly #keepMs: number;
  readonly #watchers = new Map<string, Watch>();
  readonly #timer: ReturnType<typeof setInterval>;
  #subscriber: Redis | undefined;
  /** msgpackr's unpack, loaded with the first watch (the store's import costs nothing else). */
  #unpack: Promise<(message: Buffer) => unknown> | undefined;
  #cursorKey: Buffer | undefined;
  #ticking = false;
  #closed = false;
  /**
   * Since when (this store's clock) every Redis round trip has succeeded; undefined after a failure
   * until the next heartbeat lands. Dead nodes are swept only once this is a heartbeat life plus a
   * beat old: after an outage (Redis stopped, restarted, stalled) every node gets that long to
   * heartbeat again before its tasks could be taken for a dead node's.
   */
  #healthySince: number | undefined;
  /**
   * Tasks whose create failed or timed out here (the client was told so) while Redis may still run
   * it: each is deleted and tombstoned (`<prefix>gone:<id>`, which the create script refuses) at the
   * next heartbeat that can reach Redis, so a create is either stored and run, or does not exist.
   * Id → how long its tombstone lives (the task's key lifetime).
   */
  readonly #abandoned = new Map<string, number>();

  /** `limits`: any subset of TaskLimits over the defaults (checked: `invalid_option`). */
  constructor(ctx: RedisContext, limits?: Partial<TaskLimits>, options: RedisTaskStoreOptions = {}) {
    this.limits = resolveTaskLimits(limits, 'limits');
    this.#redis = ctx.redis;
    this.#prefix = ctx.keyPrefix;
    this.#nodeId = ctx.nodeId;
    if (typeof this.#nodeId !== 'string' || this.#nodeId === '') throw new SluiceError('invalid_option', 'the cluster nodeId must be a non-empty string');
    this.#now = options.now ?? Date.now;
    // setTimeout-sized, as the task limits' lifetimes are.
    this.#heartbeatMs = integer('heartbeatMs', options.heartbeatMs, 2000, 1, 2 ** 31 - 1);
    this.#timeoutMs = integer('commandTimeoutMs', options.commandTimeoutMs, 2000, 1, 2 ** 31 - 1);
    this.#keepMs = this.limits.maxTtlMs + Math.max(kGraceMs, 6 * this.#heartbeatMs);
    this.#timer = setInterval(() => { void this.#tick(); }, this.#heartbeatMs);
    // The heartbeat alone must not keep a process alive.
    this.#timer.unref();
    void this.#tick();
  }

  async create(task: NewTask): Promise<TaskRecord> {
    this.#checkOpen();
    checkNewTask(task);
    const record = newRecord(task, this.limits, this.#now());
    const { maxTasks, maxTasksPerOwner, maxTasksPerClient, maxStoredBytesPerClient } = this.limits;
    const keyMs = record.ttlMs + kGraceMs;
    let reply: unknown;
    try {
      // The bounds are createRefusal's, checked inside the script (counted over every node).
      reply = await this.#run('create', [
        task.taskId, task.owner, this.#nodeOf(task.runner), maxTasks, maxTasksPerOwner, keyMs,
        clientOf(task) ?? '', maxTasksPerClient, maxStoredBytesPerClient, ...createFields(record),
      ]);
    } catch (error) {
      // The script may still run (a stalled Redis answers late; ioredis resends once after a
      // reconnect): the caller runs nothing, so the task must not appear. Unbounded ids are not
      // kept: past kMaxAbandoned the oldest is dropped (its late create, if any, expires with its TTL).
      this.#abandoned.set(task.taskId, keyMs);
      if (this.#abandoned.size > kMaxAbandoned) this.#abandoned.delete(this.#abandoned.keys().next().value!);
      void this.#forgetAbandoned();
      throw error;
    }
    if (Array.isArray(reply) && reply.length === 2) {
      throw refusalError({ bound: String(reply[0]) as CreateRefusal['bound'], held: Number(reply[1]) }, this.limits);
    }
    if (reply === 'gone') throw new SluiceError('cluster_unavailable', `task ${task.taskId} was abandoned after a failed create`);
    if (reply === 'duplicate') throw new Error(`task id ${task.taskId} is already in use (ids must be unique random values)`);
    return this.#told(decodeRow(hashOf(reply))!.record);
  }

  async get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    const row = await this.#read(taskId);
    return row !== undefined && row.record.owner === owner ? row.record : undefined;
  }

  async list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    this.#checkOpen();
    const parsed: ParsedCursor | undefined = cursor === undefined ? undefined : parseCursor(cursor);
    const candidate = (this.#cursorKey ?? randomBytes(32)).toString('base64');
    const position = parsed === undefined ? '' : String(parsed.position);
    const reply = await this.#run('list', [owner, position, Math.min(pageSize(limit), 10_000), candidate]);
    if (!Array.isArray(reply) || reply.length < 2) throw unavailable(new Error('unexpected reply to the list script'));
    // The key comes with the page (one round trip); a cursor that does not verify voids the page.
    const key = Buffer.from(String(reply[0]), 'base64');
    this.#cursorKey = key;
    if (parsed !== undefined) verifyCursor(key, owner, parsed);
    const tasks = (reply.slice(2) as unknown[]).map((flat) => decodeRow(hashOf(flat))?.record).filter((r): r is TaskRecord => r !== undefined);
    const next = String(reply[1]);
    return next === '' ? { tasks } : { tasks, nextCursor: encodeCursor(key, owner, Number(next)) };
  }

  async update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    checkChange(change);
    return this.#change(taskId, undefined, (row) => applyUpdate(row.record, change, new Set(row.seen)));
  }

  async respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined> {
    return this.#change(taskId, owner, (row) => applyRespond(row.record, responses));
  }

  async cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined> {
    return this.#change(taskId, owner, (row) => applyCancel(row.record, statusMessage));
  }

  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void {
    let watch = this.#watchers.get(taskId);
    if (watch === undefined) {
      this.#watchers.set(taskId, watch = { listeners: new Set(), version: 0 });
      this.#subscribe(taskId);
    }
    // A wrapper per call, so the same function watched twice is told twice and unwatched once each.
    const own: TaskListener = (task) => listener(task);
    watch.listeners.add(own);
    return () => {
      const current = this.#watchers.get(taskId);
      if (current === undefined || !current.listeners.delete(own) || current.listeners.size > 0) return;
      this.#watchers.delete(taskId);
      this.#unsubscribe(taskId);
    };
  }

  async runnerLost(runner: string, reason: string): Promise<number> {
    this.#checkOpen();
    return Number(await this.#run('runnerLost', [runner, this.#nodeOf(runner), String(reason)]));
  }

  /**
   * One sweep now (every node runs one each heartbeat): expires what is past its lifetime and
   * fails the unfinished tasks of nodes whose heartbeat is gone. Resolves with the counts.
   */
  async sweep(): Promise<{ expired: number; failed: number }> {
    this.#checkOpen();
    const reply = await this.#run('sweep', [kNodeStoppedReason, '1']);
    const [expired, failed] = Array.isArray(reply) ? reply.map(Number) : [0, 0];
    return { expired: expired ?? 0, failed: failed ?? 0 };
  }

  /**
   * Stops the heartbeat and the sweeps, ends the subscriber connection (the command connection is
   * the node's, left open) and deletes this node's heartbeat, so the other nodes fail its
   * unfinished tasks at their next sweep. Tasks stay in Redis: they belong to the cluster.
   */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    clearInterval(this.#timer);
    this.#watchers.clear();
    this.#subscriber?.disconnect();
    this.#subscriber = undefined;
    try {
      await this.#guard(this.#redis.del(`${this.#prefix}node:${this.#nodeId}`));
    } catch {
      // Redis unreachable: the heartbeat expires on its own (3 × heartbeatMs).
    }
  }

  // ---------------------------------------------------------------------------------------------

  #checkOpen(): void {
    if (this.#closed) throw new SluiceError('transport_closed', 'the task store is closed');
  }

  /** A runner `<nodeId>/<threadId>` runs on that node; a bare thread id, on this one. */
  #nodeOf(runner: string): string {
    const slash = runner.lastIndexOf('/');
    return slash > 0 ? runner.slice(0, slash) : this.#nodeId;
  }

  /** The task if it is known and live; one found past its lifetime is expired on the way. */
  async #read(taskId: string): Promise<Row | undefined> {
    this.#checkOpen();
    const row = decodeRow(await this.#guard(this.#redis.hgetall(`${this.#prefix}task:${taskId}`)));
    if (row === undefined) return undefined;
    if (this.#now() >= row.expiresAt) {
      await this.#run('expire', [taskId]);
      return undefined;
    }
    return row;
  }

  /**
   * Read, compute the transition (transitions.ts), and commit it with one script that writes only
   * if the task is still at the version read: a change another node made meanwhile makes it
   * compute again from the new version, so a terminal status stays final.
   */
  async #change(taskId: string, owner: string | undefined, compute: (row: Row) => Transition | undefined): Promise<TaskRecord | undefined> {
    for (let attempt = 0; attempt < kMaxRetries; attempt++) {
      const row = await this.#read(taskId);
      if (row === undefined || (owner !== undefined && row.record.owner !== owner)) return undefined;
      const step = compute(row);
      if (step === undefined) return row.record;
      const { set, del, bytes } = changeFields(step.next, step.added.length === 0 ? row.seen : [...row.seen, ...step.added]);
      const { maxTaskBytes, maxStoredBytes, maxStoredBytesPerClient } = this.limits;
      // The byte bounds are byteRefusal's, checked inside the script against what Redis holds.
      const reply = await this.#run('commit', [
        taskId, row.record.version, bytes, maxTaskBytes, maxStoredBytes, maxStoredBytesPerClient,
        ...byteMessages(this.limits, step.what), set.length / 2, ...set, ...del,
      ]);
      if (reply === 'retry') continue;
      const done = decodeRow(hashOf(reply));
      return done === undefined ? undefined : this.#told(done.record);
    }
    throw new SluiceError('cluster_unavailable', `task ${taskId} kept changing under this change (${kMaxRetries} tries)`);
  }

  /** Tells this node's watchers of a change it made now (the pub/sub copy then is not told again). */
  #told(record: TaskRecord): TaskRecord {
    this.#deliver(record.taskId, record);
    return record;
  }

  #deliver(taskId: string, record: TaskRecord | undefined): void {
    const watch = this.#watchers.get(taskId);
    if (watch === undefined) return;
    if (record !== undefined) {
      if (record.version <= watch.version) return;
      watch.version = record.version;
    } else {
      this.#watchers.delete(taskId);
      this.#unsubscribe(taskId);
    }
    tellAll(watch.listeners, record);
  }

  /** The one subscriber connection, made on the first watch (its offline queue on: it resubscribes after a reconnect). */
  #sub(): Redis {
    if (this.#subscriber !== undefined) return this.#subscriber;
    const sub = this.#redis.duplicate({ enableOfflineQueue: true, lazyConnect: false, autoResubscribe: false });
    resubscribeOnReconnect(sub, () => [...this.#watchers.keys()].map((taskId) => `${this.#prefix}task:${taskId}`));
    const channelPrefix = `${this.#prefix}task:`;
    const unpack = this.#unpack ??= import('msgpackr').then((m) => m.unpack);
    sub.on('messageBuffer', (channel: Buffer, message: Buffer) => {
      const name = channel.toString();
      if (!name.startsWith(channelPrefix)) return;
      const taskId = name.slice(channelPrefix.length);
      // Callbacks on one promise run in order: messages are told in the order they came.
      void unpack.then((decode) => {
        let record: TaskRecord | undefined;
        if (message.length > 0) {
          try {
            record = decodeRow(hashOf(decode(message)))?.record;
          } catch {
            return; // not a message of this store
          }
          if (record === undefined) return;
        }
        this.#deliver(taskId, record);
      });
    });
    // Reconnection is the connection's business; a failed attempt is no crash.
    sub.on('error', () => {});
    this.#subscriber = sub;
    return sub;
  }

  #subscribe(taskId: string): void {
    if (this.#closed) return;
    this.#sub().subscribe(`${this.#prefix}task:${taskId}`).catch(() => {
      // Redis down: subscribed again when the connection comes back (resubscribeOnReconnect).
    });
  }

  #unsubscribe(taskId: string): void {
    this.#subscriber?.unsubscribe(`${this.#prefix}task:${taskId}`).catch(() => {});
  }

  /**
   * Heartbeat, abandoned creates, then sweep (dead nodes only after the grace that follows any
   * failure: `#healthySince`); a tick still running (slow Redis) makes the next one skip.
   */
  async #tick(): Promise<void> {
    if (this.#ticking || this.#closed) return;
    this.#ticking = true;
    try {
      await this.#run('heartbeat', [this.#nodeId, 3 * this.#heartbeatMs]);
      const now = this.#now();
      this.#healthySince ??= now;
      await this.#forgetAbandoned();
      const settled = now - this.#healthySince >= 4 * this.#heartbeatMs;
      await this.#run('sweep', [kNodeStoppedReason, settled ? '1' : '0']);
    } catch {
      // Redis down: callers see cluster_unavailable; the timer tries again next beat.
    } finally {
      this.#ticking = false;
    }
  }

  /** Deletes and tombstones the tasks of failed creates; those Redis does not take now wait for the next beat. */
  async #forgetAbandoned(): Promise<void> {
    for (const [taskId, keepMs] of [...this.#abandoned]) {
      if (this.#closed) return;
      try {
        await this.#run('forget', [taskId, keepMs]);
        this.#abandoned.delete(taskId);
      } catch {
        return; // Redis still away: the next heartbeat tries again
      }
    }
  }

  /** Runs a script by its hash, loading it when Redis does not know it (first use, or a restarted Redis). */
  async #run(name: ScriptName, args: readonly (string | number)[]): Promise<unknown> {
    const script = kScriptTable[name];
    const argv = [this.#prefix, this.#now(), this.#keepMs, ...args];
    try {
      return await this.#guard(this.#redis.evalsha(script.sha, 0, ...argv));
    } catch (error) {
      const cause = error instanceof SluiceError ? error.cause : error;
      if (!(cause instanceof Error) || !cause.message.includes('NOSCRIPT')) throw error;
      return this.#guard(this.#redis.eval(script.source, 0, ...argv));
    }
  }

  /** A Redis round trip that rejects with `cluster_unavailable` on any failure or after the timeout, never hangs. */
  #guard<T>(promise: Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#healthySince = undefined;
        reject(unavailable(new Error(`no answer from Redis within ${this.#timeoutMs} ms`)));
      }, this.#timeoutMs);
      promise.then(
        (value) => { clearTimeout(timer); resolve(value); },
        (error: unknown) => {
          clearTimeout(timer);
          // A script error is Redis answering (NOSCRIPT included); anything else is the link failing.
          if (!(error instanceof Error && error.name === 'ReplyError')) this.#healthySince = undefined;
          reject(unavailable(error));
        },
      );
    });
  }

}

function unavailable(cause: unknown): SluiceError {
  const message = cause instanceof Error ? cause.message : String(cause);
  return new SluiceError('cluster_unavailable', `the cluster's Redis is unavailable: ${message}`, { cause });
}
