/**
 * Cluster mode, worker side of the session directory: what an HTTP thread asks the supervisor
 * (which holds the Redis connection) about legacy sessions, and the MessagePort client that asks
 * it. No Redis code here: this file is all a worker loads. The supervisor's `SessionDirectoryHost`
 * (sessions.ts) answers, over a port per HTTP worker, or directly when the tools run in-process.
 *
 * Only the slow paths come here: initialize, logging/setLevel, DELETE, and a presented session id
 * this node's table does not hold. A request of a session the table holds asks nothing.
 *
 * Nothing on the port may wedge a call, the same rules as the task store's port: every call has a
 * deadline (`callTimeoutMs`, then `unavailable`: a 503 with Retry-After, never a 404), answers are
 * checked before they are believed, and both ends count the messages they post and receive, so a
 * message the far side could not deserialise ('messageerror') is named by its position and fails
 * exactly the call it carried. Each such problem goes to `onProblem` (the thread's log and
 * `sluice_port_problems_total`).
 */
import type { MessagePort } from 'node:worker_threads';

/**
 * - `ok`: done (for `adopt`: the session is now in this node's table);
 * - `missing`: no such session in the directory (or not this principal's): 404;
 * - `full`: this node's session table has no room for it: 503;
 * - `unavailable`: Redis could not be asked: 503 + Retry-After (never a 404: the session may exist).
 */
export type DirectoryAnswer = 'ok' | 'missing' | 'full' | 'unavailable';

/** What an HTTP thread asks of the cluster's session directory. */
export interface SessionDirectoryAccess {
  /** Records a session this node's initialize just created; durable in Redis when it answers `ok`. */
  register(session: string, principal: string, capabilities: number): Promise<DirectoryAnswer>;
  /** A presented id missing from this node's table: found in Redis and bound to `principal` (digest) → adopted. */
  adopt(session: string, principal: string): Promise<DirectoryAnswer>;
  /** logging/setLevel: the level in Redis; every other node drops its cached copy. */
  setLogLevel(session: string, level: number): Promise<DirectoryAnswer>;
  /** DELETE: the session leaves Redis and every node's table. */
  end(session: string): Promise<DirectoryAnswer>;
}

/** A call from a worker; `id` pairs it with its answer. */
export type SessionCall =
  | { id: number; readonly op: 'register'; readonly session: string; readonly principal: string; readonly capabilities: number }
  | { id: number; readonly op: 'adopt'; readonly session: string; readonly principal: string }
  | { id: number; readonly op: 'setLogLevel'; readonly session: string; readonly level: number }
  | { id: number; readonly op: 'end'; readonly session: string };

/** What a worker tells the host: a call, or that the host's message number `seq` (1-based) could not be read here. */
export type ToSessionHost = SessionCall | { readonly op: 'undeliverable'; readonly seq: number };

/** What the host tells a worker: an answer, or that the worker's message number `seq` could not be read there. */
export type FromSessionHost =
  | { readonly type: 'answer'; readonly id: number; readonly answer: DirectoryAnswer }
  | { readonly type: 'undeliverable'; readonly seq: number };

/** Where a port problem is reported (the thread's log and counters). */
export type PortProblem = (message: string) => void;

export interface SessionDirectoryClientOptions {
  /**
   * Longest wait for one answer before the call answers `unavailable`. Default 10 s: above the
   * host's own worst case (three Redis reads of 2 s for an adopt; a DELETE's 2 s + 1 s of acks).
   */
  readonly callTimeoutMs?: number | undefined;
  /** A message that could not cross, a malformed answer, or a call past its deadline. Default: a process warning. */
  readonly onProblem?: PortProblem | undefined;
}

export const kDefaultSessionCallTimeoutMs = 10_000;

/** Longest session id or principal digest carried: ids are 32 characters, digests 32 hex or ''. */
export const kMaxSessionField = 256;

const kAnswers: ReadonlySet<string> = new Set<DirectoryAnswer>(['ok', 'missing', 'full', 'unavailable']);

export const warnProblem: PortProblem = (message) => process.emitWarning(message, 'SluiceWarning');

/** Whether `value` is a call the host can serve: the right fields, of the right types, within bounds. */
export function validCall(value: unknown): value is SessionCall {
  if (value === null || typeof value !== 'object') return false;
  const m = value as Record<string, unknown>;
  if (!Number.isSafeInteger(m.id) || typeof m.session !== 'string' || m.session.length > kMaxSessionField) return false;
  switch (m.op) {
    case 'register': return typeof m.principal === 'string' && m.principal.length <= kMaxSessionField && Number.isSafeInteger(m.capabilities);
    case 'adopt': return typeof m.principal === 'string' && m.principal.length <= kMaxSessionField;
    case 'setLogLevel': return Number.isSafeInteger(m.level);
    case 'end': return true;
    default: return false;
  }
}

interface Pending {
  readonly done: (answer: DirectoryAnswer) => void;
  /** The number of the message that carried the call. */
  readonly seq: number;
  readonly op: SessionCall['op'];
  readonly timer: ReturnType<typeof setTimeout>;
}

/** Worker side: each call is one message to the supervisor and one back. A closed port answers `unavailable`. */
export class SessionDirectoryClient implements SessionDirectoryAccess {
  readonly #port: MessagePort;
  readonly #pending = new Map<number, Pending>();
  /** Pending calls by the number of the message that carried them (what an `undeliverable` names). */
  readonly #bySeq = new Map<number, number>();
  readonly #timeoutMs: number;
  readonly #onProblem: PortProblem;
  #nextId = 0;
  /** Messages posted to the host and received from it ('messageerror's included). */
  #sent = 0;
  #received = 0;
  #closed = false;

  constructor(port: MessagePort, options: SessionDirectoryClientOptions = {}) {
    this.#port = port;
    this.#timeoutMs = options.callTimeoutMs ?? kDefaultSessionCallTimeoutMs;
    this.#onProblem = options.onProblem ?? warnProblem;
    port.on('message', (message: unknown) => {
      this.#received++;
      this.#onMessage(message);
    });
    port.on('messageerror', (error: Error) => {
      const seq = ++this.#received;
      this.#onProblem(`sluice: a message from the session directory could not be read (${error.message}); its call answers unavailable`);
      this.#post({ op: 'undeliverable', seq });
    });
    port.on('close', () => this.#shut());
    // Referenced only while a call waits: an idle client keeps no thread alive.
    port.unref();
  }

  register(session: string, principal: string, capabilities: number): Promise<DirectoryAnswer> {
    return this.#call({ id: 0, op: 'register', session, principal, capabilities });
  }

  adopt(session: string, principal: string): Promise<DirectoryAnswer> {
    return this.#call({ id: 0, op: 'adopt', session, principal });
  }

  setLogLevel(session: string, level: number): Promise<DirectoryAnswer> {
    return this.#call({ id: 0, op: 'setLogLevel', session, level });
  }

  end(session: string): Promise<DirectoryAnswer> {
    return this.#call({ id: 0, op: 'end', session });
  }

  close(): void {
    this.#shut();
    this.#port.close();
  }

  #call(request: SessionCall): Promise<DirectoryAnswer> {
    if (this.#closed) return Promise.resolve('unavailable');
    const id = request.id = ++this.#nextId;
    const op = request.op;
    // No session has an id this long: nothing to ask (404). Other bad fields are this thread's bug: 503.
    if (!validCall(request)) return Promise.resolve(op === 'adopt' ? 'missing' : 'unavailable');
    return new Promise((resolve) => {
      try {
        this.#port.postMessage(request);
      } catch (error) {
        this.#onProblem(`sluice: could not post to the session directory: ${error instanceof Error ? error.message : String(error)}`);
        resolve('unavailable');
        return;
      }
      const seq = ++this.#sent;
      if (this.#pending.size === 0) this.#port.ref();
      const timer = setTimeout(() => {
        this.#onProblem(`sluice: a session directory call (${request.op}) had no answer within ${this.#timeoutMs} ms; it answers unavailable`);
        this.#settle(id, 'unavailable');
      }, this.#timeoutMs);
      timer.unref();
      this.#pending.set(id, { done: resolve, seq, op: request.op, timer });
      this.#bySeq.set(seq, id);
    });
  }

  #post(message: ToSessionHost): void {
    if (this.#closed) return;
    try {
      this.#port.postMessage(message);
      this.#sent++;
    } catch (error) {
      this.#onProblem(`sluice: could not post to the session directory: ${error instanceof Error ? error.message : String(error)}`);
    }
  }

  #settle(id: number, answer: DirectoryAnswer): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    this.#bySeq.delete(pending.seq);
    clearTimeout(pending.timer);
    if (this.#pending.size === 0) this.#port.unref();
    pending.done(answer);
  }

  #onMessage(value: unknown): void {
    const m = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    if (m.type === 'answer' && typeof m.id === 'number' && typeof m.answer === 'string' && kAnswers.has(m.answer)) {
      this.#settle(m.id, m.answer as DirectoryAnswer);
      return;
    }
    if (m.type === 'undeliverable' && typeof m.seq === 'number') {
      const id = this.#bySeq.get(m.seq);
      if (id === undefined) return;
      this.#onProblem(`sluice: the session directory could not read a call (${this.#pending.get(id)?.op}); it answers unavailable`);
      this.#settle(id, 'unavailable');
      return;
    }
    // Malformed: a call it names answers unavailable; one it does not name ends at its deadline.
    this.#onProblem('sluice: a malformed message from the session directory was dropped');
    if (m.type === 'answer' && typeof m.id === 'number') this.#settle(m.id, 'unavailable');
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#bySeq.clear();
    for (const { done, timer } of pending) {
      clearTimeout(timer);
      done('unavailable');
    }
  }
}
