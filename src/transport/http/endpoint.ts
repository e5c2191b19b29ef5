import { threadId } from 'node:worker_threads';
import type { Engine, RequestInfo } from '../../protocol/engine.js';
import { requestInfo } from '../../protocol/eras/request-info.js';
import type { Classified } from '../../protocol/message.js';
import { readMessage, refusalBody } from '../../protocol/refusals.js';
import { ErrorCode, ProtocolError, errorBody } from '../../protocol/wire.js';
import type { JsonRpcId } from '../../protocol/wire.js';
import type { SessionDirectoryAccess } from '../../cluster/session-client.js';
import type { SessionStore } from '../../sessions/store.js';
import { Counter } from '../../telemetry/counters.js';
import { MetricsScrape } from '../../telemetry/scrape.js';
import { AuthRefusal } from '../../auth/refusal.js';
import type { AuthGate, Granted } from '../../auth/gate.js';
import { HttpAuth } from './auth.js';
import { Clients, kRefused } from './caller.js';
import type { Authenticate } from './caller.js';
import { ResponseHeaders } from './cors.js';
import type { Exchange } from './exchange.js';
import { HeaderRules } from './headers.js';
import type { ReplyForm } from './headers.js';
import { HttpEdge, LegacySessions, kSessionElsewhere } from './legacy.js';
import { ClientLimits } from './limits.js';
import { checkModernRequest } from './modern.js';
import { ParamHeaders } from './param-headers.js';
import { HttpReply, kJson, kRetryLater } from './reply.js';
import type { ReplyShared } from './reply.js';
import { kNotReady, isDraining } from './readiness.js';
import { RetryLater, kDrainingRefusal, kInternal, kSessionRequired, kTooManyInFlight, kUnauthorized } from './refusals.js';

export type { AuthRequest, Authenticate, Principal } from './caller.js';
export { hostName, kLoopbackHosts } from './headers.js';

export interface HttpEndpointOptions {
  /** The MCP endpoint path. */
  readonly path: string;
  /** Origins allowed besides loopback ones (exact match, e.g. 'https://app.example.com'). */
  readonly allowedOrigins: readonly string[];
  /** Legacy-era sessions: off, or on with an idle expiry. */
  readonly sessions: SessionStore | undefined;
  readonly sessionIdleMs: number;
  /** Cluster mode: the directory that makes sessions valid on every node (absent: this node alone). */
  readonly sessionDirectory?: SessionDirectoryAccess | undefined;
  readonly authenticate: Authenticate | undefined;
  /**
   * OAuth resource server: every MCP request needs a valid bearer token (checked first, before
   * the body is read); its subject is the principal. Exclusive with `authenticate`.
   */
  readonly auth?: AuthGate | undefined;
  /** Take the client address from the last X-Forwarded-For entry (only behind a proxy you run). */
  readonly trustProxy: boolean;
  readonly maxBodyBytes: number;
  readonly metrics: boolean;
  /** Legacy era: treat a client disconnect as a cancel too (the spec says it SHOULD NOT be). */
  readonly cancelOnDisconnect: boolean;
  /** Live legacy sessions one client (principal, else address) may hold, node-wide; past it 429. */
  readonly maxSessionsPerClient: number;
  /** Requests one client (principal, else address) may have running on this HTTP worker; past it 429. */
  readonly maxInFlightPerClient: number;
  /** Bytes one connection may hold unsent before progress coalesces and logs are dropped. */
  readonly maxStreamBufferBytes: number;
  /** How long a final response may wait for a slow reader to make room before its connection is closed. */
  readonly slowReaderTimeoutMs: number;
  /**
   * CORS for browser clients: requests whose Origin is listed (exactly) are allowed (the Origin
   * check included), preflights get 204, and responses expose the MCP headers. Off when undefined.
   */
  readonly cors: { readonly origins: readonly string[] } | undefined;
  /** Add `sluice-worker: <threadId>` to responses (diagnostics and tests). */
  readonly exposeWorker: boolean;
  /**
   * DNS-rebinding protection: when set, a request whose Host is not one of these names (any port)
   * gets 403. The server sets it to the loopback names when it binds to loopback.
   */
  readonly allowedHostNames: ReadonlySet<string> | undefined;
  /**
   * The server's readiness word (shared memory, written by the supervisor; 0: ready): /readyz
   * reads it, and while it says draining, initialize is refused with 503 + Retry-After.
   */
  readonly readiness?: Int32Array | undefined;
  /** Cluster mode is on (/metrics then includes the sluice_cluster_* series). */
  readonly cluster?: boolean | undefined;
}

type Headers = readonly (readonly [string, string])[];
type Request = Extract<Classified, { kind: 'request' }>;

const kAllow: Headers = [['allow', 'POST, DELETE']];
const kAllowPost: Headers = [['allow', 'POST']];
const kMetricsType: Headers = [['content-type', 'text/plain; version=0.0.4']];
const kText: Headers = [['content-type', 'text/plain'], ['cache-control', 'no-store']];
/**
 * MCP Streamable HTTP for both eras, over any adapter: it routes, and writes what the rules
 * decide. Header rules (headers.ts, cors.ts), who the caller is (caller.ts), legacy sessions
 * (legacy.ts), 2026-07-28 headers (modern.ts), per-client limits (limits.ts) each answer a
 * `ProtocolError` or nothing; how a body reads as a message, and its refusals, are the
 * protocol's (`readMessage`); the era, version and RequestInfo are `requestInfo`'s; everything
 * after that (the era's own refusals included) is the engine's.
 */
export class HttpEndpoint {
  readonly #engine: Engine;
  readonly #o: HttpEndpointOptions;
  readonly #rules: HeaderRules;
  /** The catalog's x-mcp-header specs (tools/call's Mcp-Param-* headers). */
  readonly #params: ParamHeaders;
  readonly #headers: ResponseHeaders;
  readonly #clients: Clients;
  readonly #sessions: LegacySessions | undefined;
  readonly #limits: ClientLimits;
  readonly #replies: ReplyShared;
  readonly #auth: HttpAuth | undefined;
  /** /metrics text, rendered at most kRendersPerSecond times a second (made on the first scrape). */
  #scrape: MetricsScrape | undefined;

  constructor(engine: Engine, options: HttpEndpointOptions) {
    const { counters } = engine.config;
    this.#engine = engine;
    this.#o = options;
    this.#params = new ParamHeaders(engine.config.catalog.tools);
    this.#headers = new ResponseHeaders(options.exposeWorker ? [['sluice-worker', String(threadId)]] : [], options.cors?.origins ?? []);
    this.#rules = new HeaderRules({ allowedOrigins: options.allowedOrigins, corsOrigins: this.#headers.origins, allowedHostNames: options.allowedHostNames });
    this.#clients = new Clients(options.authenticate, options.trustProxy);
    this.#sessions = options.sessions === undefined
      ? undefined
      : new LegacySessions({ store: options.sessions, idleMs: options.sessionIdleMs, maxPerClient: options.maxSessionsPerClient, counters, directory: options.sessionDirectory });
    this.#limits = new ClientLimits(options.maxInFlightPerClient);
    this.#auth = options.auth === undefined ? undefined : new HttpAuth(options.auth, engine.config.catalog);
    this.#replies = {
      store: options.sessions,
      release: this.#limits.release,
      policy: { maxBufferedBytes: options.maxStreamBufferBytes, timeoutMs: options.slowReaderTimeoutMs, counters },
    };
  }

  handle(ex: Exchange): void {
    // Probes first and outside the endpoint's rules: balancers and kubelets send no Origin, any
    // Host, no credentials. They reveal one word and cost one shared-memory read.
    if (ex.method === 'GET' && (ex.path === '/healthz' || ex.path === '/readyz')) return this.#probe(ex);
    // Protected Resource Metadata: public by design (a client reads it to learn where to get a
    // token), from any origin, so outside the Host/Origin rules like the probes.
    const auth = this.#auth;
    if (auth !== undefined && ex.method === 'GET' && auth.isMetadataPath(ex.path)) return ex.respond(200, auth.metadataHeaders, auth.metadataBody);
    const refused = this.#rules.check(ex);
    if (refused !== undefined) return this.#fail(ex, null, refused);
    if (ex.path !== this.#o.path) {
      // After the Host and Origin checks: metrics are no more open to a rebinding page than MCP is.
      if (ex.path === '/metrics' && this.#o.metrics && ex.method === 'GET') {
        if (this.#scrape === undefined) {
          const { registry, counters } = this.#engine.config;
          this.#scrape = new MetricsScrape(registry, counters, this.#o.cluster === true);
        }
        ex.respond(200, kMetricsType, this.#scrape.text());
        return;
      }
      ex.respond(404, [['content-type', 'text/plain'], ...this.#headers.extra(ex)], 'not found');
      return;
    }
    switch (ex.method) {
      case 'POST':
        try {
          this.#post(ex);
        } catch (error) {
          this.#crash(ex, error);
        }
        return;
      case 'DELETE':
        void this.#delete(ex).catch((error: unknown) => this.#crash(ex, error));
        return;
      case 'OPTIONS': {
        const preflight = this.#headers.preflight(ex);
        if (preflight !== undefined) return ex.respond(204, preflight, '');
        return ex.respond(405, [...kAllow, ...this.#headers.extra(ex)], '');
      }
      default:
        // No server-to-client stream is offered (GET), in either era; with `auth`, the token is
        // still checked first (an unauthenticated client learns nothing, not even the 405).
        if (auth !== undefined) {
          void this.#authorize(ex).then((granted) => { if (granted !== undefined) ex.respond(405, [...kAllow, ...this.#headers.extra(ex)], ''); })
            .catch((error: unknown) => this.#crash(ex, error));
          return;
        }
        ex.respond(405, [...kAllow, ...this.#headers.extra(ex)], '');
    }
  }

  /**
   * The bearer token, checked before anything else costs work (no body read, no session, no
   * tracking): the caller, or undefined when the request was refused (answered here).
   */
  async #authorize(ex: Exchange): Promise<Granted | undefined> {
    const result = await this.#auth!.gate.check(ex.header('authorization'));
    if (result instanceof AuthRefusal) {
      this.#refuse(ex, null, result);
      return undefined;
    }
    return ex.aborted ? undefined : result;
  }

  /** Answers an authorization refusal: its status and challenge, a JSON-RPC error body. */
  #refuse(ex: Exchange, id: JsonRpcId | null, refusal: AuthRefusal): undefined {
    if (ex.aborted) return undefined;
    ex.respond(refusal.status, HttpAuth.refusalHeaders(refusal, this.#headers.extra(ex)), errorBody(id, ErrorCode.InvalidRequest, refusal.message));
    return undefined;
  }

  /**
   * GET /healthz: 200 while the process serves. GET /readyz: 503 `draining` while shutting down,
   * else 200. A cluster link that is down does not make the node unready: Redis is shared, so every
   * node would turn unready at once and the balancer would have no server left, while each still
   * serves its known sessions and stateless requests. The body says it (`ready, cluster link down`)
   * for monitoring; `sluice_cluster_up` in /metrics too.
   */
  #probe(ex: Exchange): void {
    if (ex.path === '/healthz') return ex.respond(200, kText, 'ok');
    const flags = this.#o.readiness === undefined ? 0 : Atomics.load(this.#o.readiness, 0);
    if ((flags & kNotReady.Draining) !== 0) return ex.respond(503, kText, 'draining');
    ex.respond(200, kText, flags === 0 ? 'ready' : 'ready, cluster link down');
  }

  /**
   * A POST. Without `auth` or an authenticate hook nothing is awaited: the body arrives through a
   * callback and the request runs in it (no promise, no microtask hop per request); with either,
   * the checks are awaited first (`#postChecked`). Both paths check in the same order.
   */
  #post(ex: Exchange): void {
    if (this.#auth !== undefined || this.#clients.authenticates) {
      void this.#postChecked(ex).catch((error: unknown) => this.#crash(ex, error));
      return;
    }
    const form = this.#rules.negotiate(ex);
    if (form instanceof ProtocolError) return this.#fail(ex, null, form);
    this.#read(ex, form, undefined, undefined);
  }

  async #postChecked(ex: Exchange): Promise<void> {
    let granted: Granted | undefined;
    if (this.#auth !== undefined) {
      granted = await this.#authorize(ex);
      if (granted === undefined) return;
    }
    const form = this.#rules.negotiate(ex);
    if (form instanceof ProtocolError) return this.#fail(ex, null, form);
    const principal = granted !== undefined ? granted.subject : await this.#clients.principal(ex);
    if (ex.aborted) return;
    if (principal === kRefused) return this.#fail(ex, null, kUnauthorized);
    this.#read(ex, form, principal, granted);
  }

  #read(ex: Exchange, form: ReplyForm, principal: string | undefined, granted: Granted | undefined): void {
    ex.readBody(this.#o.maxBodyBytes, (body) => {
      // Called by the adapter (maybe from its socket callback): a throw must end here, as a 500.
      try {
        if (body !== undefined && body !== 'too_large') this.#received(ex, body, form, principal, granted);
      } catch (error) {
        this.#crash(ex, error);
      }
    });
  }

  #received(ex: Exchange, body: Uint8Array, form: ReplyForm, principal: string | undefined, granted: Granted | undefined): void {
    const message = this.#message(ex, body);
    if (message === undefined) return;
    if (granted !== undefined && message.kind === 'request') {
      // The target's own scopes: known only once the body names it; still before any session or tracking.
      const needed = this.#auth!.itemScopes(message.method, message.params);
      const refused = needed === undefined ? undefined : this.#auth!.gate.checkItem(granted, needed);
      if (refused !== undefined) return this.#refuse(ex, message.id, refused);
    }
    // Draining: no new session here; requests of open ones are still served through the grace. In
    // cluster mode a session opened now lives in Redis and is served by any node: no refusal.
    if (message.kind === 'request' && message.method === 'initialize' && this.#o.cluster !== true && isDraining(this.#o.readiness)) {
      return this.#fail(ex, message.id, kDrainingRefusal);
    }
    const edge = new HttpEdge(ex, this.#clients, this.#sessions, principal);
    edge.auth = granted;
    const info = requestInfo(message, edge);
    if (info === kSessionElsewhere) {
      // Cluster mode, a session this node lacks: the directory may adopt it; then resolve again.
      void this.#adopt(ex, message, edge, form).catch((error: unknown) => this.#crash(ex, error));
      return;
    }
    this.#route(ex, message, edge, info, form);
  }

  async #adopt(ex: Exchange, message: Classified, edge: HttpEdge, form: ReplyForm): Promise<void> {
    const refused = await this.#sessions!.adopt(edge);
    if (ex.aborted) return;
    this.#route(ex, message, edge, refused ?? requestInfo(message, edge), form);
  }

  #route(ex: Exchange, message: Classified, edge: HttpEdge, info: RequestInfo | ProtocolError, form: ReplyForm): void {
    if (info instanceof ProtocolError) return this.#fail(ex, message.kind === 'request' ? message.id : null, info);
    if (message.kind === 'response') {
      // An answer to a request a tool sent this client (any worker may receive it).
      this.#engine.handleResponse(message, info.scope);
      return ex.respond(202, this.#headers.extra(ex), '');
    }
    if (message.kind === 'notification') return this.#notification(ex, message.method, message.params, info);
    if (info.era === 'modern') {
      const problem = checkModernRequest(ex, message.method, message.params, this.#params);
      if (problem !== undefined) return this.#fail(ex, message.id, problem);
    } else {
      // Cluster mode: a new session or a new log level is in Redis before the response goes out.
      const storing = this.#sessions?.beforeRequest(edge, message.method, message.params);
      if (storing !== undefined) {
        void this.#stored(ex, storing, message, edge, info, form).catch((error: unknown) => this.#crash(ex, error));
        return;
      }
    }
    this.#run(ex, message, edge, info, form);
  }

  async #stored(ex: Exchange, storing: Promise<ProtocolError | undefined>, message: Request, edge: HttpEdge, info: RequestInfo, form: ReplyForm): Promise<void> {
    const refused = await storing;
    if (ex.aborted) return this.#sessions!.drop(edge.opened);
    if (refused !== undefined) return this.#fail(ex, message.id, refused);
    this.#run(ex, message, edge, info, form);
  }

  #run(ex: Exchange, message: Request, edge: HttpEdge, info: RequestInfo, form: ReplyForm): void {
    const client = edge.clientScope();
    if (!this.#limits.acquire(client)) {
      this.#sessions?.drop(edge.opened);
      this.#engine.config.counters.add(Counter.ClientLimited);
      return this.#fail(ex, message.id, kTooManyInFlight);
    }
    const extra = this.#headers.extra(ex);
    // A tasks/result wait does no work of its own (the task runs on its own row): once its client is
    // gone no one can be told its answer, so it ends, and a vanished client holds no wait.
    const cancelOnGone = info.era === 'modern' || this.#o.cancelOnDisconnect || message.method === 'tasks/result';
    const reply = new HttpReply(ex, this.#replies, form, extra, edge.opened, client, cancelOnGone);
    // The engine calls reply.started(running) itself for a request that goes on running.
    this.#engine.handleRequest(message.id, message.method, message.params, info, reply);
  }

  /** The body as one classified JSON-RPC message; undefined when it was refused (answered here). */
  #message(ex: Exchange, body: Uint8Array): Classified | undefined {
    const message = readMessage(body);
    if (message.kind === 'refused') return this.#fail(ex, message.id, message.error);
    return message;
  }

  #notification(ex: Exchange, method: string, params: unknown, info: RequestInfo): void {
    if (info.era === 'modern') {
      // 2026-07-28 defines no client notifications over HTTP and no header rules for their POSTs
      // (the official server answers 202): accepted and ignored. In particular a
      // notifications/cancelled cancels nothing here: a modern request ends only when its own
      // stream closes, so no other connection can cancel it.
      this.#engine.config.counters.add(Counter.Notifications);
      return ex.respond(202, this.#headers.extra(ex), '');
    }
    const refused = this.#engine.handleNotification(method, params, info);
    if (refused !== undefined) return this.#fail(ex, null, refused);
    ex.respond(202, this.#headers.extra(ex), '');
  }

  async #delete(ex: Exchange): Promise<void> {
    const sessions = this.#sessions;
    if (sessions === undefined) return ex.respond(405, [...kAllowPost, ...this.#headers.extra(ex)], '');
    let granted: Granted | undefined;
    if (this.#auth !== undefined) {
      granted = await this.#authorize(ex);
      if (granted === undefined) return;
    }
    const id = ex.header('mcp-session-id');
    if (id === undefined) return this.#fail(ex, null, kSessionRequired);
    const principal = granted !== undefined ? granted.subject : await this.#clients.principal(ex);
    if (principal === kRefused) return this.#fail(ex, null, kUnauthorized);
    const ended = await sessions.end(id, principal);
    if (ended instanceof ProtocolError) return this.#fail(ex, null, ended);
    // What of it still runs is cancelled here, and on the node's other threads that served it (none
    // in the common case: a client's requests share its connection, so one thread; then no message).
    this.#engine.sessionEnded(this.#clients.sessionScope(id), sessions.store.namesOthers(ended) ? ended : 0);
    ex.respond(204, this.#headers.extra(ex), '');
  }

  /** Answers a refusal: its HTTP status and a JSON-RPC error (Retry-After on 429/503 refusals). */
  #fail(ex: Exchange, id: JsonRpcId | null, error: ProtocolError): undefined {
    if (ex.aborted) return undefined;
    ex.respond(error.httpStatus, [...(error instanceof RetryLater ? kRetryLater : kJson), ...this.#headers.extra(ex)], refusalBody(id, error));
    return undefined;
  }

  #crash(ex: Exchange, error: unknown): void {
    this.#engine.config.log('error', `sluice: unexpected error serving a request: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    this.#fail(ex, null, kInternal);
  }
}
