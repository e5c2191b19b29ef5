/**
 * Legacy-era (initialize/session) HTTP rules: Mcp-Session-Id on every request but initialize,
 * sessions bound to their principal and counted per client, DELETE ending one; and the edge facts
 * of one POST (`HttpEdge`) that `requestInfo` reads. Refusals are `ProtocolError`s.
 */
import type { Classified, EdgeFacts, LegacySession } from '../../protocol/eras/request-info.js';
import type { ProtocolError } from '../../protocol/wire.js';
import { capabilitiesOf, capabilityBits } from '../../sessions/store.js';
import type { SessionStore } from '../../sessions/store.js';
import { Counter } from '../../telemetry/counters.js';
import type { ServerCounters } from '../../telemetry/counters.js';
import type { Clients } from './client.js';
import type { Exchange } from './exchange.js';
import { kSessionNotFound, kSessionRequired, kSessionsFull, kTooManySessions } from './refusals.js';

export interface LegacySessionsOptions {
  readonly store: SessionStore;
  readonly idleMs: number;
  /** Live sessions one client (principal, else address) may hold, node-wide; past it 429. */
  readonly maxPerClient: number;
  readonly counters: ServerCounters;
}

/** The session rules over the shared session store. */
export class LegacySessions {
  readonly store: SessionStore;
  readonly #o: LegacySessionsOptions;

  constructor(options: LegacySessionsOptions) {
    this.store = options.store;
    this.#o = options;
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
      edge.sessionScope = edge.clients.sessionScope(created.id);
      return edge;
    }
    const presented = edge.ex.header('mcp-session-id');
    if (presented === undefined) return kSessionRequired;
    const found = this.store.lookup(presented, edge.principalId, this.#o.idleMs);
    if (!found.ok) return kSessionNotFound;
    edge.sessionScope = edge.clients.sessionScope(presented);
    if (found.logLevel >= 0) edge.logLevel = found.logLevel;
    const store = this.store;
    edge.setLogLevel = (level) => store.setLogLevel(found, level);
    edge.clientCapabilities = capabilitiesOf(found.capabilities);
    return edge;
  }

  /** DELETE: ends the principal's session `id`; 404 when there is no such live session. */
  end(id: string, principalId: string | undefined): ProtocolError | undefined {
    const found = this.store.lookup(id, principalId, this.#o.idleMs);
    if (!found.ok) return kSessionNotFound;
    this.store.delete(found);
    return undefined;
  }

  /** A session an initialize opened whose request was then refused goes, unannounced. */
  drop(id: string | undefined): void {
    if (id !== undefined) this.store.remove(id);
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
  setLogLevel: ((level: number) => void) | undefined;
  clientCapabilities: Record<string, unknown> | undefined;
  /** A session this request's initialize opened (announced in the reply; dropped if refused). */
  opened: string | undefined;

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

  legacySession(message: Classified): LegacySession | ProtocolError {
    return this.#sessions === undefined ? this : this.#sessions.resolve(this, message);
  }
}
