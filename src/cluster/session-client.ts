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
 * exactly the call it carried (src/ports/ holds that protocol for both ports). Each such problem
 * goes to `onProblem` (the thread's log and `sluice_port_problems_total`).
 */
import type { MessagePort } from 'node:worker_threads';
import { PortClient } from '../ports/client.js';
import { warnProblem } from '../ports/problem.js';
import type { PortProblem, UndeliverableToClient, UndeliverableToHost } from '../ports/problem.js';

export { warnProblem } from '../ports/problem.js';
export type { PortProblem } from '../ports/problem.js';

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
export type ToSessionHost = SessionCall | UndeliverableToHost;

/** What the host tells a worker: an answer, or that the worker's message number `seq` could not be read there. */
export type FromSessionHost =
  | { readonly type: 'answer'; readonly id: number; readonly answer: DirectoryAnswer }
  | UndeliverableToClient;

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

/** How both ends of the session directory's port name it and a failed call in their reports. */
export const kSessionPortWording = { name: 'session directory', failure: 'answers unavailable' } as const;

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

/** Worker side: each call is one message to the supervisor and one back. A closed port answers `unavailable`. */
export class SessionDirectoryClient implements SessionDirectoryAccess {
  readonly #client: PortClient<SessionCall, DirectoryAnswer>;
  readonly #onProblem: PortProblem;

  constructor(port: MessagePort, options: SessionDirectoryClientOptions = {}) {
    this.#onProblem = options.onProblem ?? warnProblem;
    this.#client = new PortClient(port, {
      ...kSessionPortWording,
      timeoutMs: options.callTimeoutMs ?? kDefaultSessionCallTimeoutMs,
      onProblem: this.#onProblem,
      receive: (message) => this.#onMessage(message),
    });
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
    this.#client.close();
  }

  #call(request: SessionCall): Promise<DirectoryAnswer> {
    if (this.#client.closed) return Promise.resolve('unavailable');
    // No session has an id this long: nothing to ask (404). Other bad fields are this thread's bug: 503.
    const op = request.op;
    if (!validCall(request)) return Promise.resolve(op === 'adopt' ? 'missing' : 'unavailable');
    // Every failure of the port (closed, unpostable, unreadable, late) is already reported: 503.
    return this.#client.call(request).catch(() => 'unavailable');
  }

  #onMessage(value: unknown): void {
    const m = (value !== null && typeof value === 'object' ? value : {}) as Record<string, unknown>;
    if (m.type === 'answer' && typeof m.id === 'number' && typeof m.answer === 'string' && kAnswers.has(m.answer)) {
      this.#client.resolve(m.id, m.answer as DirectoryAnswer);
      return;
    }
    // Malformed: a call it names answers unavailable; one it does not name ends at its deadline.
    this.#onProblem('sluice: a malformed message from the session directory was dropped');
    if (m.type === 'answer' && typeof m.id === 'number') this.#client.resolve(m.id, 'unavailable');
  }
}
