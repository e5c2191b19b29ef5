/**
 * Cluster mode: the directory of legacy (2025-era) sessions in Redis, and the subscriber that
 * hears other nodes' invalidations. Supervisor side; `SessionDirectoryHost` (sessions.ts) keeps
 * this node's cache coherent with it.
 *
 * Redis holds the directory: `<prefix>session:<id>`, a hash of
 *   p: the principal digest (128 bits of SHA-256 of the principal id, hex; '' anonymous),
 *   c: the declared client capabilities (bits), l: the logging/setLevel level (-1 unset),
 *   t: created (ms since the epoch).
 * Its expiry is last use + idleMs + touch period (idleMs/4): each node pushes the last use it saw
 * (PEXPIREAT … GT) once per touch period, never per request, so the slack is that period.
 *
 * DELETE and logging/setLevel publish `<nodeId> <id>` on `<prefix>sessions`; every other node drops
 * its copy at once and acknowledges on `<prefix>sessions-ack`. Both answer once every node that
 * heard the invalidation has acknowledged, or after kAckTimeoutMs (a node that slow is cut off, and
 * revalidates): a request on another node after the 204 is not served the deleted session, and one
 * after setLevel's answer has the new level.
 *
 * No Redis module is imported here: the connection comes in the RedisContext.
 */
import type { Redis } from 'ioredis';
import type { RedisContext } from './contract.js';
import { resubscribeOnReconnect } from './resubscribe.js';

/** One session as the directory keeps it. */
export interface SessionRecord {
  readonly id: string;
  /** `principalDigest(principal id)`: '' anonymous. */
  readonly principal: string;
  readonly capabilities: number;
  /** Index into the MCP log levels, -1 until logging/setLevel. */
  readonly logLevel: number;
  readonly created: number;
}

/** Longest wait for one Redis command: past it the caller answers 503 rather than hang. */
const kCommandTimeoutMs = 2_000;
/** Longest wait of a DELETE for the other nodes' acknowledgements of its invalidation. */
export const kAckTimeoutMs = 1_000;

/** Longest `<node> <session id>` heard on the invalidation channels. */
const kMaxInvalidation = 1_024;

/** Redis could not be asked (not connected, or no answer in time). */
export class DirectoryUnavailable extends Error {}

/**
 * Only changes if the session still exists (no HSET may recreate a deleted one), then tells the
 * other nodes. Returns 0 when the session does not exist, else 1 + the subscribers its
 * invalidation reached.
 */
const kSetLevelScript = `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'l', ARGV[1])
return 1 + redis.call('PUBLISH', ARGV[2], ARGV[3])`;

export interface DirectoryEvents {
  /** Another node ended or changed session `id`: drop the local copy. */
  invalidated(id: string): void;
  /** The invalidation subscriber went down (false) or came back (true) after being down. */
  subscriber(up: boolean): void;
}

/** The directory in Redis, with its invalidation subscriber. */
export class RedisSessionDirectory {
  readonly #redis: Redis;
  readonly #prefix: string;
  readonly #nodeId: string;
  readonly #channel: string;
  readonly #ttlMs: number;
  readonly #subscriber: Redis;
  readonly #ackChannel: string;
  /** DELETEs of this node waiting for acknowledgements, by session id: each counts the acks it got. */
  readonly #waiting = new Map<string, Set<{ acks: number; check(): void }>>();
  #subscriberUp = false;
  #everUp = false;
  #closing = false;

  /** `ttlMs`: a session's Redis expiry after its last use (idle timeout + touch period). */
  constructor(ctx: RedisContext, ttlMs: number, events: DirectoryEvents) {
    this.#redis = ctx.redis;
    this.#prefix = ctx.keyPrefix;
    this.#nodeId = ctx.nodeId;
    this.#channel = `${ctx.keyPrefix}sessions`;
    this.#ttlMs = ttlMs;
    // A subscriber queues its SUBSCRIBE until connected (the command connection may refuse offline commands).
    const sub = this.#subscriber = ctx.redis.duplicate({ enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: false });
    this.#ackChannel = `${ctx.keyPrefix}sessions-ack`;
    resubscribeOnReconnect(sub, () => [this.#channel, this.#ackChannel]);
    sub.on('message', (channel: string, message: string) => {
      // `<node> <session id>`: anything longer than ids can be is not ours (and must not be acked back, at its size, by every node).
      const space = message.indexOf(' ');
      if (space <= 0 || message.length > kMaxInvalidation) return;
      const node = message.slice(0, space);
      const id = message.slice(space + 1);
      if (channel === this.#ackChannel) {
        if (node !== this.#nodeId) return;
        for (const waiter of this.#waiting.get(id) ?? []) {
          waiter.acks++;
          waiter.check();
        }
        return;
      }
      // Our own changes are already in our table.
      if (channel !== this.#channel || node === this.#nodeId) return;
      events.invalidated(id);
      // Dropped (synchronously): the deleting node may answer its client now.
      ctx.redis.publish(this.#ackChannel, `${node} ${id}`).catch(() => {});
    });
    sub.on('ready', () => {
      this.#subscriberUp = true;
      if (this.#everUp) events.subscriber(true);
      this.#everUp = true;
    });
    sub.on('close', () => {
      // Closed by close() (shutdown): not a lost Redis, nothing to warn about.
      if (!this.#subscriberUp || this.#closing) return;
      this.#subscriberUp = false;
      events.subscriber(false);
    });
    // Connection errors are state changes, reported through `subscriber`; ioredis reconnects.
    sub.on('error', () => {});
    sub.subscribe(this.#channel, this.#ackChannel).catch(() => {
      // Not connected yet: subscribed again when it reconnects (resubscribeOnReconnect).
    });
  }

  /** Whether invalidations are arriving now. */
  get subscriberUp(): boolean {
    return this.#subscriberUp;
  }

  key(id: string): string {
    return `${this.#prefix}session:${id}`;
  }

  /** Records a new session; resolves once Redis has it (before the initialize response goes out). */
  async create(record: SessionRecord): Promise<void> {
    const key = this.key(record.id);
    await this.#run(() => this.#redis.multi()
      .hset(key, { p: record.principal, c: record.capabilities, l: record.logLevel, t: record.created })
      .pexpire(key, this.#ttlMs)
      .exec().then(checkExec));
  }

  /** The session, or undefined; a find is a use (the expiry moves to now + ttl unless it is later already). */
  async find(id: string): Promise<SessionRecord | undefined> {
    const key = this.key(id);
    const replies = await this.#run(() => this.#redis.multi()
      .hgetall(key)
      .call('PEXPIREAT', key, String(Date.now() + this.#ttlMs), 'GT')
      .exec().then(checkExec));
    return parseRecord(id, replies[0]);
  }

  /**
   * logging/setLevel: false when the session no longer exists. Resolves, as `delete` does, once
   * each other node has dropped its copy: the client's next request, on any node, has the new level.
   */
  async setLogLevel(id: string, level: number): Promise<boolean> {
    return this.#acknowledged(id, async () => {
      const reply = Number(await this.#run(() => this.#redis.eval(kSetLevelScript, 1, this.key(id), String(level), this.#channel, `${this.#nodeId} ${id}`)));
      return { value: reply > 0, reached: Math.max(0, reply - 1) };
    });
  }

  /**
   * Refreshes the expiry of sessions this node served: to their last use here + ttl (never
   * shortening another node's later one). Returns the ids no longer in Redis (deleted or expired).
   */
  async touch(sessions: ReadonlyArray<{ readonly id: string; readonly seen: number }>): Promise<string[]> {
    const replies = await this.#run(() => {
      const pipe = this.#redis.pipeline();
      for (const { id, seen } of sessions) pipe.call('PEXPIREAT', this.key(id), String(seen + this.#ttlMs), 'GT').exists(this.key(id));
      return pipe.exec().then(checkExec);
    });
    return sessions.filter((_, i) => replies[i * 2 + 1] === 0).map((s) => s.id);
  }

  /** The ids of `ids` no longer in Redis. */
  async missing(ids: readonly string[]): Promise<string[]> {
    const replies = await this.#run(() => {
      const pipe = this.#redis.pipeline();
      for (const id of ids) pipe.exists(this.key(id));
      return pipe.exec().then(checkExec);
    });
    return ids.filter((_, i) => replies[i] === 0);
  }

  /**
   * Ends a session everywhere: DEL, and the invalidation every other node drops its copy on;
   * resolves once each node that received it has acknowledged (or after kAckTimeoutMs).
   */
  async delete(id: string): Promise<boolean> {
    return this.#acknowledged(id, async () => {
      const replies = await this.#run(() => this.#redis.multi().del(this.key(id)).publish(this.#channel, `${this.#nodeId} ${id}`).exec().then(checkExec));
      return { value: replies[0] === 1, reached: Number(replies[1]) };
    });
  }

  /**
   * Runs `write`, which publishes the invalidation of `id` and says how many subscribers it
   * reached, and resolves with its value once each other node that received it has acknowledged
   * (or after kAckTimeoutMs).
   */
  async #acknowledged<T>(id: string, write: () => Promise<{ readonly value: T; readonly reached: number }>): Promise<T> {
    let expected = Number.POSITIVE_INFINITY;
    let done!: () => void;
    const acked = new Promise<void>((resolve) => { done = resolve; });
    const waiter = { acks: 0, check: () => { if (waiter.acks >= expected) done(); } };
    let set = this.#waiting.get(id);
    if (set === undefined) this.#waiting.set(id, set = new Set());
    set.add(waiter);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const { value, reached } = await write();
      // PUBLISH counts the subscribers it reached, this node's own among them when it is up (acks
      // come back through that one: without it there is nothing to wait for).
      if (this.#subscriberUp && reached > 0) {
        expected = reached - 1;
        waiter.check();
        await Promise.race([acked, new Promise<void>((resolve) => { timer = setTimeout(resolve, kAckTimeoutMs); })]);
      }
      return value;
    } finally {
      clearTimeout(timer);
      set.delete(waiter);
      if (set.size === 0 && this.#waiting.get(id) === set) this.#waiting.delete(id);
    }
  }

  /** Closes the subscriber (the command connection is the link's). */
  async close(): Promise<void> {
    this.#closing = true;
    try {
      await this.#subscriber.quit();
    } catch {
      this.#subscriber.disconnect();
    }
  }

  /** One Redis call, refused at once when not connected and bounded in time (ioredis would queue it). */
  async #run<T>(call: () => Promise<T>): Promise<T> {
    if (this.#redis.status !== 'ready') throw new DirectoryUnavailable(`redis is ${this.#redis.status}`);
    let timer: ReturnType<typeof setTimeout> | undefined;
    const pending = call();
    // When the timeout wins, the command may still fail later ("Connection is closed" once the
    // link drops): that outcome is already answered, and must not surface as an unhandled rejection.
    pending.catch(() => {});
    try {
      return await Promise.race([
        pending,
        new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new DirectoryUnavailable('redis did not answer in time')), kCommandTimeoutMs); }),
      ]);
    } finally {
      clearTimeout(timer);
    }
  }
}

function checkExec(results: Array<[Error | null, unknown]> | null): unknown[] {
  if (results === null) throw new DirectoryUnavailable('transaction aborted');
  return results.map(([error, value]) => {
    if (error !== null) throw error;
    return value;
  });
}

function parseRecord(id: string, raw: unknown): SessionRecord | undefined {
  if (raw === null || typeof raw !== 'object') return undefined;
  const h = raw as Record<string, string | undefined>;
  if (h.p === undefined || h.c === undefined) return undefined; // {}: no such key
  return { id, principal: h.p, capabilities: Number(h.c) | 0, logLevel: Number(h.l ?? -1) | 0, created: Number(h.t ?? 0) };
}
