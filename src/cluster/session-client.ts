/**
 * Cluster mode, worker side of the session directory: what an HTTP thread asks the supervisor
 * (which holds the Redis connection) about legacy sessions, and the MessagePort client that asks
 * it. No Redis code here: this file is all a worker loads. The supervisor's `SessionDirectoryHost`
 * (sessions.ts) answers, over a port per HTTP worker, or directly when the tools run in-process.
 *
 * Only the slow paths come here: initialize, logging/setLevel, DELETE, and a presented session id
 * this node's table does not hold. A request of a session the table holds asks nothing.
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
export type ToSessionHost =
  | { id: number; readonly op: 'register'; readonly session: string; readonly principal: string; readonly capabilities: number }
  | { id: number; readonly op: 'adopt'; readonly session: string; readonly principal: string }
  | { id: number; readonly op: 'setLogLevel'; readonly session: string; readonly level: number }
  | { id: number; readonly op: 'end'; readonly session: string };

export interface FromSessionHost {
  readonly id: number;
  readonly answer: DirectoryAnswer;
}

/** Worker side: each call is one message to the supervisor and one back. A closed port answers `unavailable`. */
export class SessionDirectoryClient implements SessionDirectoryAccess {
  readonly #port: MessagePort;
  readonly #pending = new Map<number, (answer: DirectoryAnswer) => void>();
  #nextId = 0;
  #closed = false;

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (message: FromSessionHost) => {
      const done = this.#pending.get(message.id);
      if (done === undefined) return;
      this.#pending.delete(message.id);
      if (this.#pending.size === 0) this.#port.unref();
      done(message.answer);
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

  #call(request: ToSessionHost): Promise<DirectoryAnswer> {
    if (this.#closed) return Promise.resolve('unavailable');
    const id = request.id = ++this.#nextId;
    return new Promise((resolve) => {
      this.#port.postMessage(request);
      if (this.#pending.size === 0) this.#port.ref();
      this.#pending.set(id, resolve);
    });
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    for (const done of pending) done('unavailable');
  }
}
