/**
 * Legacy-era (initialize/session) HTTP rules: Mcp-Session-Id on every request but initialize,
 * sessions bound to their principal and counted per client, DELETE ending one; and the edge facts
 * of one POST (`HttpEdge`) that `requestInfo` reads. Refusals are `ProtocolError`s.
 */
import type { AuthInfo } from '../../auth/contract.js';
import type { DirectoryAnswer, SessionDirectoryAccess } from '../../cluster/session-client.js';
import type { Classified, EdgeFacts, LegacySession } from '../../protocol/eras/request-info.js';
import { ErrorCode, ProtocolError } from '../../protocol/wire.js';
import { kLogLevels } from '../../tools/context.js';
import { capabilitiesOf, capabilityBits, principalDigest } from '../../sessions/store.js';
import type { SessionLookup } from '../../sessions/store.js';
import type { SessionStore } from '../../sessions/store.js';
import { Counter } from '../../telemetry/counters.js';
import type { ServerCounters } from '../../telemetry/counters.js';
import type { Clients } from './caller.js';
import type { Exchange } from './exchange.js';
import { RetryLater, kSessionNotFound, kSessionRequired, kSessionsFull, kTooManySessions } from './refusals.js';

/**
 * Cluster mode: the session directory (Redis) could not be asked. A 503 with Retry-After, never a
 * 404: the session may well exist, and a 404 would tell the client to drop it.
 */
export const kSessionDirectoryUnavailable = Object.freeze(new RetryLater(ErrorCode.InternalError, 'Service Unavailable: the cluster session directory is unreachable', undefined, 503));

/**
 * Cluster mode: the presented session is not in this node's table; the directory may know it.
 * `resolve` answers this sentinel (a 404 if it ever went out as is), the endpoint then awaits
 * `adopt` and resolves again: the only asynchronous step of a session's resolution.
 */
export const kSessionElsewhere = Object.freeze(new ProtocolError(ErrorCode.InvalidRequest, 'Session not found', undefined, 404));

export interface LegacySessionsOptions {
  readonly store: SessionStore;
  readonly idleMs: number;
  /** Live sessions one client (principal, else address) may hold, node-wide; past it 429. */
  readonly maxPerClient: number;
  readonly counters: ServerCounters;
  /** Cluster mode: the directory sessions are registered in and adopted from; undefined: one node. */
  readonly directory?: SessionDirectoryAccess | undefined;
}

/** The session rules over the shared session store. */
export class LegacySessions {
  readonly store: SessionStore;
  readonly #o: LegacySessionsOptions;
  readonly #directory: SessionDirectoryAccess | undefined;

  constructor(options: LegacySessionsOptions) {
    this.store = options.store;
    this.#o = options;
    this.#directory = options.directory;
  }

  /** Cluster mode (sessions cross nodes through the directory). */
  get clustered(): boolean {
    return this.#directory !== undefined;
  }

  /**
   * Fills `edge`'s session state for a legacy message: initialize (a request) opens a session;
   * anything else (responses included) must present a live one of its principal.
   */
  resolve(edge: HttpEdge, message: Classified): LegacySession | ProtocolError {
    const method = message.kind === 'response' ? undefined : message.method;
    if (method === 'initialize') {
      if (message.kind !== 'request') return edge;
      const created = this.store.create(edge.principalId, capabilityBits(message.params?.capabilities), edge.clientScope(), this.#o.maxPerClient);
      if (!created.ok) {
        if (created.reason === 'table_full') return kSessionsFull;
        this.#o.counters.add(Counter.ClientLimited);
        return kTooManySessions;
      }
      edge.opened = created.id;
      edge.openedCapabilities = capabilityBits(message.params?.capabilities);
      edge.sessionScope = edge.clients.sessionScope(created.id);
      return edge;
    }
    const presented = edge.ex.header('mcp-session-id');
    if (presented === undefined) return kSessionRequired;
    const found = this.store.lookup(presented, edge.principalId, this.#o.idleMs);
    if (!found.ok) return this.#directory === undefined || edge.adoptTried ? kSessionNotFound : kSessionElsewhere;
    edge.sessionScope = edge.clients.sessionScope(presented);
    if (found.logLevel >= 0) edge.logLevel = found.logLevel;
    edge.found = found;
    edge.levelStore = edge;
    edge.clientCapabilities = capabilitiesOf(found.capabilities);
    return edge;
  }

  /**
   * Cluster mode, after `resolve` answered `kSessionElsewhere`: asks the directory for the
   * presented session (bound to this principal) and adopts it into this node's table; `resolve`
   * then finds it. Undefined: adopted; else the refusal (404, or 503 when Redis cannot say).
   */
  async adopt(edge: HttpEdge): Promise<ProtocolError | undefined> {
    edge.adoptTried = true;
    const presented = edge.ex.header('mcp-session-id');
    if (presented === undefined || this.#directory === undefined) return kSessionNotFound;
    return this.#refusal(await this.#directory.adopt(presented, principalDigest(edge.principalId)), Counter.ClusterSessionLookupsFailed);
  }

  /**
   * Cluster mode, before the engine runs a request: what must be in Redis before its response goes
   * out. initialize: the new session (refused with 503 when Redis cannot take it: a session the
   * other nodes cannot see would be silently wrong). logging/setLevel: the level (so a node the
   * next request lands on reads it). Undefined (synchronously) when there is nothing to wait for.
   */
  beforeRequest(edge: HttpEdge, method: string, params: Record<string, unknown> | undefined): Promise<ProtocolError | undefined> | undefined {
    const directory = this.#directory;
    if (directory === undefined) return undefined;
    if (edge.opened !== undefined) return this.#register(directory, edge, edge.opened);
    if (method !== 'logging/setLevel') return undefined;
    const level = kLogLevels.indexOf(params?.level as (typeof kLogLevels)[number]);
    const presented = edge.ex.header('mcp-session-id');
    // An invalid level is the engine's to refuse; nothing to store.
    if (level < 0 || presented === undefined) return undefined;
    return directory.setLogLevel(presented, level).then((answer) => {
      if (answer === 'missing') this.store.remove(presented); // ended elsewhere meanwhile
      return this.#refusal(answer, Counter.ClusterSessionWritesFailed);
    });
  }

  async #register(directory: SessionDirectoryAccess, edge: HttpEdge, id: string): Promise<ProtocolError | undefined> {
    const answer = await directory.register(id, principalDigest(edge.principalId), edge.openedCapabilities);
    if (answer === 'ok') return undefined;
    this.store.remove(id);
    edge.opened = undefined;
    return this.#refusal(answer, Counter.ClusterSessionWritesFailed);
  }

  #refusal(answer: DirectoryAnswer, failure: Counter): ProtocolError | undefined {
    switch (answer) {
      case 'ok': return undefined;
      case 'missing': return kSessionNotFound;
      case 'full': return kSessionsFull;
      case 'unavailable':
        this.#o.counters.add(failure);
        return kSessionDirectoryUnavailable;
    }
  }

  /**
   * DELETE: ends the principal's session `id`; 404 when there is no such live session. Cluster
   * mode: a session this node does not hold is adopted first (so its principal is checked the same
   * way), and it leaves Redis (and so every node) before it leaves this node's table. Answers the
   * threads of this node that served it (`SessionStore.delete`'s bits) when it ended.
   */
  async end(id: string, principalId: string | undefined): Promise<ProtocolError | number> {
    let found = this.store.lookup(id, principalId, this.#o.idleMs);
    const directory = this.#directory;
    if (directory === undefined) return found.ok ? this.store.delete(found) : kSessionNotFound;
    if (!found.ok) {
      const refused = this.#refusal(await directory.adopt(id, principalDigest(principalId)), Counter.ClusterSessionLookupsFailed);
      if (refused !== undefined) return refused;
      found = this.store.lookup(id, principalId, this.#o.idleMs);
      if (!found.ok) return kSessionNotFound;
    }
    const refused = this.#refusal(await directory.end(id), Counter.ClusterSessionWritesFailed);
    if (refused !== undefined) return refused;
    return this.store.delete(found);
  }

  /** A session an initialize opened whose request was then refused goes, unannounced (and from Redis). */
  drop(id: string | undefined): void {
    if (id === undefined) return;
    this.store.remove(id);
    // Nobody learnt the id: should this fail, the record just expires after the idle timeout.
    void this.#directory?.end(id);
  }
}

/**
 * The edge facts of one POST, and its legacy session state once resolved: one object per request
 * (methods on the prototype), which is also what `requestInfo` reads the session from.
 */
export class HttpEdge implements EdgeFacts, LegacySession {
  readonly ex: Exchange;
  readonly clients: Clients;
  readonly principalId: string | undefined;
  readonly headerVersion: string | undefined;
  readonly #sessions: LegacySessions | undefined;
  #clientScope: string | undefined;
  sessionScope: string | undefined;
  logLevel = 0; // legacy: everything until logging/setLevel says otherwise
  /** Itself once a session was found (logging/setLevel then stores the level in it). */
  levelStore: HttpEdge | undefined;
  /** The session found for this request. */
  found: SessionLookup | undefined;
  clientCapabilities: Record<string, unknown> | undefined;
  /** A session this request's initialize opened (announced in the reply; dropped if refused). */
  opened: string | undefined;
  /** Cluster mode: the capability bits of `opened`, for its Redis record. */
  openedCapabilities = 0;
  /** The verified caller (with `auth`): RequestInfo.auth, ctx.auth. */
  auth: AuthInfo | undefined = undefined;
  /** Cluster mode: the directory was already asked for the presented session (a second miss is a 404). */
  adoptTried = false;

  constructor(ex: Exchange, clients: Clients, sessions: LegacySessions | undefined, principalId: string | undefined) {
    this.ex = ex;
    this.clients = clients;
    this.#sessions = sessions;
    this.principalId = principalId;
    this.headerVersion = ex.header('mcp-protocol-version');
  }

  get hasHeaders(): boolean {
    return true;
  }

  get isolateModern(): boolean {
    return true;
  }

  clientScope(): string {
    return this.#clientScope ??= this.clients.scope(this.principalId, this.ex);
  }

  setLogLevel(level: number): void {
    if (this.found !== undefined) this.#sessions?.store.setLogLevel(this.found, level);
  }

  legacySession(message: Classified): LegacySession | ProtocolError {
    return this.#sessions === undefined ? this : this.#sessions.resolve(this, message);
  }
}
