/**
 * Cluster mode: legacy (2025-era) sessions valid on every node, through Redis. Supervisor side:
 * the directory itself (Redis keys, invalidations, DELETE acknowledgements) is session-directory.ts.
 *
 * Each node's shared-memory table stays the cache: a request of a session it holds never leaves the
 * node. A presented id the table lacks is looked up in the directory and adopted (same id, same
 * principal). Coherence: DELETE and logging/setLevel tell every other node, which drops its copy
 * at once (a later request re-adopts, with the new level). While this node's subscriber is down,
 * the copies are revalidated against Redis every `revalidateMs` (default 5 s), and all of them are
 * dropped when it comes back (invalidations were missed).
 * So a node serves a session deleted elsewhere: not at all once the message arrives; at most
 * `revalidateMs` (plus a command's time-out) while only its subscriber is cut; while the node
 * cannot reach Redis at all, until it can again (deletes elsewhere need Redis, so a Redis outage
 * itself deletes nothing). Redis losing its data (an empty restart) ends every session: nodes drop
 * their copies on reconnect and clients get 404, the spec's signal to initialize again.
 *
 * The HTTP workers ask over a MessagePort each (session-client.ts says what the port guarantees).
 */
import type { MessagePort } from 'node:worker_threads';
import type { SessionStore } from '../sessions/store.js';
import type { RedisContext } from './contract.js';
import { DirectoryUnavailable, RedisSessionDirectory } from './session-directory.js';
import type { SessionRecord } from './session-directory.js';
import { kSessionPortWording, validCall } from './session-client.js';
import type { DirectoryAnswer, FromSessionHost, PortProblem, SessionCall, SessionDirectoryAccess } from './session-client.js';
import { PortHost } from '../ports/host.js';

export { DirectoryUnavailable, RedisSessionDirectory, kAckTimeoutMs } from './session-directory.js';
export type { DirectoryEvents, SessionRecord } from './session-directory.js';

const kDefaultRevalidateMs = 5_000;

/** Where the host's log lines go (the server's log sink; its own type, to stay below src/server/). */
export type SessionLog = (level: 'info' | 'warn' | 'error', message: string) => void;

export interface SessionDirectoryHostOptions {
  /** This node's session table (the supervisor's attachment). */
  readonly store: SessionStore;
  readonly idleMs: number;
  readonly log: SessionLog;
  /** How often cached sessions are checked against Redis while invalidations may be missed. Default 5 s. */
  readonly revalidateMs?: number | undefined;
  /**
   * A message on a worker's port that could not be read, or a malformed call (each answered with
   * an error). The supervisor counts these as `sluice_port_problems_total`. Default: a warn line.
   */
  readonly onProblem?: PortProblem | undefined;
  /**
   * Another node ended (DELETE) a session this node held: what of it still runs here is to be
   * cancelled. Told only for sessions in this node's cache when the news came, or dropped from it
   * within an idle period before (see #released).
   */
  readonly onEnded?: ((id: string) => void) | undefined;
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
  readonly #onProblem: PortProblem;
  readonly #revalidateMs: number;
  readonly #onEnded: ((id: string) => void) | undefined;
  readonly #idleMs: number;
  /**
   * Sessions this node held whose copy was dropped (another node's logging/setLevel, a revalidation,
   * the invalidation channel going down), with when: their requests may still run here, so another
   * node's later DELETE still concerns this node, and a copy adopted again names every thread to its
   * DELETE here (SessionStore.adopt's `servedBefore`). Kept for an idle period.
   */
  readonly #released = new Map<string, number>();
  /** Sessions in this node's table that the directory knows: id → the last use pushed to Redis. */
  readonly #cached = new Map<string, number>();
  /** Lookups in flight per id: an invalidation arriving meanwhile makes them read again. */
  readonly #reading = new Map<string, Set<{ invalidated: boolean }>>();
  /** Adoptions in flight, per id and principal: concurrent misses of one session share one. */
  readonly #adopting = new Map<string, Promise<DirectoryAnswer>>();
  readonly #ports = new PortHost();
  readonly #touchTimer: ReturnType<typeof setInterval>;
  readonly #revalidateTimer: ReturnType<typeof setInterval>;
  /** Until when copies are revalidated although the subscriber is up (it may have missed a message while resubscribing). */
  #revalidateUntil = 0;
  #touching = false;
  #revalidating = false;

  constructor(ctx: RedisContext, options: SessionDirectoryHostOptions) {
    this.#store = options.store;
    this.#log = options.log;
    this.#onProblem = options.onProblem ?? ((message) => options.log('warn', message));
    this.#revalidateMs = options.revalidateMs ?? kDefaultRevalidateMs;
    this.#onEnded = options.onEnded;
    this.#idleMs = options.idleMs;
    const touchMs = Math.max(1, Math.floor(options.idleMs / 4));
    this.directory = new RedisSessionDirectory(ctx, options.idleMs + touchMs, {
      invalidated: (id) => this.#invalidated(id),
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

  /**
   * Serves the calls arriving on `port` (one HTTP worker's) until it closes. Every call that can be
   * read is answered, a malformed one with `unavailable`; one that cannot be read ('messageerror')
   * is named back to the worker by its position in the port's order, and that call fails there.
   * `onProblem`: where this port's problems go (default: the host's `onProblem` option).
   */
  attach(port: MessagePort, onProblem: PortProblem = this.#onProblem): void {
    this.#ports.attach<SessionCall, FromSessionHost>(port, {
      ...kSessionPortWording,
      onProblem,
      accept: validCall,
      serve: (call, link) => void this.#serve(call).then((answer) => link.answer(call.id, { type: 'answer', id: call.id, answer })),
      failed: (id) => ({ type: 'answer', id, answer: 'unavailable' }),
    });
  }

  /** Stops the timers, closes the ports and the subscriber (the command connection is the link's). */
  async close(): Promise<void> {
    clearInterval(this.#touchTimer);
    clearInterval(this.#revalidateTimer);
    this.#ports.close();
    await this.directory.close();
  }

  /** Session ids this node's cache holds for the directory (tests, diagnostics). */
  get cached(): number {
    return this.#cached.size;
  }

  /** One call from a port; never rejects (a failure is `unavailable`, logged), so every call is answered. */
  async #serve(call: SessionCall): Promise<DirectoryAnswer> {
    try {
      switch (call.op) {
        case 'register': return await this.register(call.session, call.principal, call.capabilities);
        case 'adopt': return await this.adopt(call.session, call.principal);
        case 'setLogLevel': return await this.setLogLevel(call.session, call.level);
        case 'end': return await this.end(call.session);
      }
    } catch (error) {
      return this.#unavailable(call.op, error);
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
      if (!this.#store.adopt(session, record.principal, record.capabilities, record.logLevel, this.#released.has(session))) return 'full';
      this.#cached.set(session, 0);
      return 'ok';
    }
    return this.#unavailable('find', new Error('the session kept changing while it was read'));
  }

  /**
   * Another node's message: it ended or changed the session. DELETE and logging/setLevel send the
   * same message; Redis tells them apart (a DELETE's DEL comes before its message), and is asked
   * only for a session this node held, the only kind whose requests can run here.
   */
  #invalidated(id: string): void {
    const held = this.#cached.has(id) || this.#released.has(id);
    this.#drop(id);
    const onEnded = this.#onEnded;
    if (!held || onEnded === undefined) return;
    this.#released.set(id, Date.now());
    this.directory.missing([id]).then((gone) => {
      if (gone.length === 0) return;
      this.#released.delete(id);
      onEnded(id);
    }, (error: unknown) => {
      const why = error instanceof Error ? error.message : 'Redis did not answer';
      this.#log('warn', `sluice: cluster sessions: could not tell whether another node's message on a session held here was its DELETE (${why}); what of that session runs here goes on until it ends (a question to its client: until clientRequestTimeoutMs)`);
    });
  }

  /**
   * Another node ended or changed the session (or Redis no longer has it): drop this node's copy.
   * A copy this node held is remembered a while (`#released`): its requests may still run here.
   */
  #drop(id: string): void {
    this.#store.remove(id);
    if (this.#cached.delete(id)) this.#released.set(id, Date.now());
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
    const idleSince = Date.now() - this.#idleMs;
    for (const [id, at] of this.#released) if (at < idleSince) this.#released.delete(id);
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
