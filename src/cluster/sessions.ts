/**
 * Cluster mode: legacy (2025-era) sessions valid on every node, through Redis. Supervisor side.
 *
 * Redis holds the directory: `<prefix>session:<id>`, a hash of
 *   p: the principal digest (128 bits of SHA-256 of the principal id, hex; '' anonymous),
 *   c: the declared client capabilities (bits), l: the logging/setLevel level (-1 unset),
 *   t: created (ms since the epoch).
 * Its expiry is last use + idleMs + touch period (idleMs/4): each node pushes the last use it saw
 * (PEXPIREAT … GT) once per touch period, never per request, so the slack is that period.
 *
 * Each node's shared-memory table stays the cache: a request of a session it holds never leaves the
 * node. A presented id the table lacks is looked up here and adopted (same id, same principal).
 * Coherence: DELETE and logging/setLevel publish `<nodeId> <id>` on `<prefix>sessions`; every
 * other node drops its copy at once (a later request re-adopts, with the new level). While this
 * node's subscriber is down, the copies are revalidated against Redis every `revalidateMs`
 * (default 5 s), and all of them are dropped when it comes back (invalidations were missed).
 * A DELETE answers only once every node that heard the invalidation has dropped its copy (each
 * acknowledges on `<prefix>sessions-ack`), or after kAckTimeoutMs (a node that slow is cut off, and
 * revalidates): a request on another node after the 204 is not served the deleted session.
 * So a node serves a session deleted elsewhere: not at all once the message arrives; at most
 * `revalidateMs` (plus a command's time-out) while only its subscriber is cut; while the node
 * cannot reach Redis at all, until it can again (deletes elsewhere need Redis, so a Redis outage
 * itself deletes nothing). Redis losing its data (an empty restart) ends every session: nodes drop
 * their copies on reconnect and clients get 404, the spec's signal to initialize again.
 *
 * No Redis module is imported here: the connection comes in the RedisContext.
 */
import type { MessagePort } from 'node:worker_threads';
import type { Redis } from 'ioredis';
import type { SessionStore } from '../sessions/store.js';
import type { RedisContext } from './contract.js';
import { resubscribeOnReconnect } from './resubscribe.js';
import type { DirectoryAnswer, FromSessionHost, SessionDirectoryAccess, ToSessionHost } from './session-client.js';

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
const kDefaultRevalidateMs = 5_000;
/** Longest wait of a DELETE for the other nodes' acknowledgements of its invalidation. */
export const kAckTimeoutMs = 1_000;

/** Redis could not be asked (not connected, or no answer in time). */
export class DirectoryUnavailable extends Error {}

/** Only changes if the session still exists (no HSET may recreate a deleted one), then tells the other nodes. */
const kSetLevelScript = `if redis.call('EXISTS', KEYS[1]) == 0 then return 0 end
redis.call('HSET', KEYS[1], 'l', ARGV[1])
redis.call('PUBLISH', ARGV[2], ARGV[3])
return 1`;

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
      const space = message.indexOf(' ');
      if (space <= 0) return;
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

  /** logging/setLevel: false when the session no longer exists. */
  async setLogLevel(id: string, level: number): Promise<boolean> {
    const reply = await this.#run(() => this.#redis.eval(kSetLevelScript, 1, this.key(id), String(level), this.#channel, `${this.#nodeId} ${id}`));
    return reply === 1;
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
    let expected = Number.POSITIVE_INFINITY;
    let done!: () => void;
    const acked = new Promise<void>((resolve) => { done = resolve; });
    const waiter = { acks: 0, check: () => { if (waiter.acks >= expected) done(); } };
    let set = this.#waiting.get(id);
    if (set === undefined) this.#waiting.set(id, set = new Set());
    set.add(waiter);
    let timer: ReturnType<typeof setTimeout> | undefined;
    try {
      const replies = await this.#run(() => this.#redis.multi().del(this.key(id)).publish(this.#channel, `${this.#nodeId} ${id}`).exec().then(checkExec));
      // PUBLISH counts the subscribers it reached, this node's own among them when it is up (acks
      // come back through that one: without it there is nothing to wait for).
      if (this.#subscriberUp) {
        expected = Number(replies[1]) - 1;
        waiter.check();
        await Promise.race([acked, new Promise<void>((resolve) => { timer = setTimeout(resolve, kAckTimeoutMs); })]);
      }
      return replies[0] === 1;
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

/** Where the host's log lines go (the server's log sink; its own type, to stay below src/server/). */
export type SessionLog = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface SessionDirectoryHostOptions {
  /** This node's session table (the supervisor's attachment). */
  readonly store: SessionStore;
  readonly idleMs: number;
  readonly log: SessionLog;
  /** How often cached sessions are checked against Redis while invalidations may be missed. Default 5 s. */
  readonly revalidateMs?: number | undefined;
}

/**
 * The supervisor's session service: the directory, this node's cache kept coherent with it, and
 * the answers to its HTTP threads (over a port each, or directly in-process). The only writer that
 * adopts into the table, so one id never gets two rows.
 */
export class SessionDirectoryHost implements SessionDirectoryAccess {
  readonly directory: RedisSessionDirectory;
  readonly #store: SessionStore;
  readonly #log: SessionLog;
  readonly #revalidateMs: number;
  /** Sessions in this node's table that the directory knows: id → the last use pushed to Redis. */
  readonly #cached = new Map<string, number>();
  /** Lookups in flight per id: an invalidation arriving meanwhile makes them read again. */
  readonly #reading = new Map<string, Set<{ invalidated: boolean }>>();
  /** Adoptions in flight, per id and principal: concurrent misses of one session share one. */
  readonly #adopting = new Map<string, Promise<DirectoryAnswer>>();
  readonly #ports = new Map<MessagePort, () => void>();
  readonly #touchTimer: ReturnType<typeof setInterval>;
  readonly #revalidateTimer: ReturnType<typeof setInterval>;
  /** Until when copies are revalidated although the subscriber is up (it may have missed a message while resubscribing). */
  #revalidateUntil = 0;
  #touching = false;
  #revalidating = false;

  constructor(ctx: RedisContext, options: SessionDirectoryHostOptions) {
    this.#store = options.store;
    this.#log = options.log;
    this.#revalidateMs = options.revalidateMs ?? kDefaultRevalidateMs;
    const touchMs = Math.max(1, Math.floor(options.idleMs / 4));
    this.directory = new RedisSessionDirectory(ctx, options.idleMs + touchMs, {
      invalidated: (id) => this.#drop(id),
      subscriber: (up) => this.#subscriberChanged(up),
    });
    this.#touchTimer = setInterval(() => void this.#touch(), touchMs);
    this.#touchTimer.unref();
    this.#revalidateTimer = setInterval(() => void this.#revalidate(), this.#revalidateMs);
    this.#revalidateTimer.unref();
  }

  async register(session: string, principal: string, capabilities: number): Promise<DirectoryAnswer> {
    try {
      await this.directory.create({ id: session, principal, capabilities, logLevel: -1, created: Date.now() });
    } catch (error) {
      return this.#unavailable('create', error);
    }
    this.#cached.set(session, 0);
    return 'ok';
  }

  adopt(session: string, principal: string): Promise<DirectoryAnswer> {
    const key = `${session} ${principal}`;
    let running = this.#adopting.get(key);
    if (running === undefined) {
      running = this.#adopt(session, principal).finally(() => this.#adopting.delete(key));
      this.#adopting.set(key, running);
    }
    return running;
  }

  async setLogLevel(session: string, level: number): Promise<DirectoryAnswer> {
    try {
      if (await this.directory.setLogLevel(session, level)) return 'ok';
    } catch (error) {
      return this.#unavailable('setLogLevel', error);
    }
    this.#drop(session);
    return 'missing';
  }

  async end(session: string): Promise<DirectoryAnswer> {
    try {
      await this.directory.delete(session);
    } catch (error) {
      return this.#unavailable('delete', error);
    }
    this.#cached.delete(session);
    return 'ok';
  }

  /** Serves the calls arriving on `port` (one HTTP worker's) until it closes. */
  attach(port: MessagePort): void {
    const onMessage = (message: ToSessionHost): void => {
      if (message === null || typeof message !== 'object' || typeof message.session !== 'string') return;
      void this.#serve(message).then((answer) => {
        try {
          port.postMessage({ id: message.id, answer } satisfies FromSessionHost);
        } catch {
          // The worker is gone: nobody is waiting.
        }
      });
    };
    const detach = (): void => {
      this.#ports.delete(port);
      port.off('message', onMessage);
      port.off('close', detach);
    };
    this.#ports.set(port, detach);
    port.on('message', onMessage);
    port.on('close', detach);
    port.unref(); // the workers keep the supervisor alive, not these ports
  }

  /** Stops the timers, closes the ports and the subscriber (the command connection is the link's). */
  async close(): Promise<void> {
    clearInterval(this.#touchTimer);
    clearInterval(this.#revalidateTimer);
    for (const [port, detach] of [...this.#ports]) {
      detach();
      port.close();
    }
    await this.directory.close();
  }

  /** Session ids this node's cache holds for the directory (tests, diagnostics). */
  get cached(): number {
    return this.#cached.size;
  }

  #serve(message: ToSessionHost): Promise<DirectoryAnswer> {
    switch (message.op) {
      case 'register': return this.register(message.session, String(message.principal), Number(message.capabilities) | 0);
      case 'adopt': return this.adopt(message.session, String(message.principal));
      case 'setLogLevel': return this.setLogLevel(message.session, Number(message.level) | 0);
      case 'end': return this.end(message.session);
      default: return Promise.resolve('unavailable');
    }
  }

  async #adopt(session: string, principal: string): Promise<DirectoryAnswer> {
    // A read that an invalidation overtook may be stale (the DEL or HSET came after it): read again.
    for (let attempt = 0; attempt < 3; attempt++) {
      const mark = { invalidated: false };
      let marks = this.#reading.get(session);
      if (marks === undefined) this.#reading.set(session, marks = new Set());
      marks.add(mark);
      let record: SessionRecord | undefined;
      try {
        record = await this.directory.find(session);
      } catch (error) {
        return this.#unavailable('find', error);
      } finally {
        marks.delete(mark);
        if (marks.size === 0 && this.#reading.get(session) === marks) this.#reading.delete(session);
      }
      if (mark.invalidated) continue;
      // Another principal presenting the id learns nothing more than from an unknown id.
      if (record === undefined || record.principal !== principal) return 'missing';
      if (!this.#store.adopt(session, record.principal, record.capabilities, record.logLevel)) return 'full';
      this.#cached.set(session, 0);
      return 'ok';
    }
    return this.#unavailable('find', new Error('the session kept changing while it was read'));
  }

  /** Another node ended or changed the session (or Redis no longer has it): drop this node's copy. */
  #drop(id: string): void {
    this.#store.remove(id);
    this.#cached.delete(id);
    for (const mark of this.#reading.get(id) ?? []) mark.invalidated = true;
  }

  #subscriberChanged(up: boolean): void {
    if (!up) {
      this.#log('warn', `sluice: cluster sessions: the invalidation subscriber lost Redis; cached sessions are revalidated every ${this.#revalidateMs} ms until it is back`);
      return;
    }
    // Invalidations may have been missed while it was down: every copy goes, and the next request
    // of each session re-adopts it from Redis (if Redis still has it).
    const dropped = this.#cached.size;
    for (const id of [...this.#cached.keys()]) this.#drop(id);
    this.#revalidateUntil = Date.now() + 2 * this.#revalidateMs;
    this.#log('info', `sluice: cluster sessions: the invalidation subscriber is back; ${dropped} cached session(s) dropped, to be re-read from Redis`);
  }

  async #touch(): Promise<void> {
    if (this.#touching) return;
    const batch: Array<{ id: string; seen: number }> = [];
    for (const [id, pushed] of this.#cached) {
      const seen = this.#store.lastSeen(id);
      if (seen === undefined) this.#cached.delete(id); // swept (idle) or removed: nothing to keep alive
      else if (seen > pushed) batch.push({ id, seen });
    }
    if (batch.length === 0) return;
    this.#touching = true;
    try {
      const gone = new Set(await this.directory.touch(batch));
      for (const { id, seen } of batch) {
        if (gone.has(id)) this.#drop(id);
        else if (this.#cached.has(id)) this.#cached.set(id, seen);
      }
    } catch {
      // Redis down: the next period pushes the same uses again. Meanwhile this node serves its copies.
    } finally {
      this.#touching = false;
    }
  }

  async #revalidate(): Promise<void> {
    if (this.#revalidating || this.#cached.size === 0) return;
    if (this.directory.subscriberUp && Date.now() > this.#revalidateUntil) return;
    this.#revalidating = true;
    try {
      for (const id of await this.directory.missing([...this.#cached.keys()])) this.#drop(id);
    } catch {
      // Redis unreachable: the copies keep serving on this node (degraded) until it is back.
    } finally {
      this.#revalidating = false;
    }
  }

  #unavailable(what: string, error: unknown): 'unavailable' {
    if (!(error instanceof DirectoryUnavailable)) this.#log('error', `sluice: cluster sessions: ${what} failed: ${error instanceof Error ? error.message : String(error)}`);
    return 'unavailable';
  }
}
