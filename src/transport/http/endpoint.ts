import { threadId } from 'node:worker_threads';
import { Engine } from '../../protocol/engine.js';
import type { Era, RequestInfo } from '../../protocol/engine.js';
import { classify, parseJson } from '../../protocol/message.js';
import { checkModernVersion, eraOf, metaOf, modernLogLevel } from '../../protocol/era.js';
import {
  ErrorCode, ProtocolError, errorBody, kDefaultLegacyVersion, kLegacyVersions, kMetaClientCapabilities, kMetaProtocolVersion, kModernVersion,
} from '../../protocol/wire.js';
import type { JsonRpcId } from '../../protocol/wire.js';
import { clientBucket } from '../../registry/index.js';
import { capabilitiesOf, capabilityBits } from '../../sessions/store.js';
import type { SessionStore } from '../../sessions/store.js';
import { Counter, prometheusText } from '../../telemetry/counters.js';
import type { Exchange } from './exchange.js';
import { HttpReply } from './reply.js';
import type { SlowReaderPolicy } from './reply.js';

/** What `authenticate` sees of a request. */
export interface AuthRequest {
  header(name: string): string | undefined;
  readonly remoteAddress: string;
}

/** An authenticated caller; only a string `id` scopes requests (SPEC §3). */
export interface Principal {
  readonly id?: unknown;
}

export type Authenticate = (request: AuthRequest) => Principal | undefined | null | Promise<Principal | undefined | null>;

export interface HttpEndpointOptions {
  /** The MCP endpoint path. */
  readonly path: string;
  /** Origins allowed besides loopback ones (exact match, e.g. 'https://app.example.com'). */
  readonly allowedOrigins: readonly string[];
  /** Legacy-era sessions: off, or on with an idle expiry. */
  readonly sessions: SessionStore | undefined;
  readonly sessionIdleMs: number;
  readonly authenticate: Authenticate | undefined;
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
}

const kJson: readonly (readonly [string, string])[] = [['content-type', 'application/json']];
const kAnonymous = Object.freeze({ ok: true as const, id: undefined });
const kBusy: readonly (readonly [string, string])[] = [['retry-after', '1'], ['content-type', 'application/json']];
const kNone: readonly (readonly [string, string])[] = [];
const kNamedMethods = new Set(['tools/call', 'resources/read', 'prompts/get']);
/** Response headers a browser client may read (CORS). */
const kCorsExposed = 'mcp-session-id, mcp-protocol-version';
/** Request headers a preflight allows when the browser asks for none we can echo. */
const kCorsAllowed = 'content-type, accept, authorization, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id';
/** Host names of the loopback interface (Origin checks; the Host allow-list of a loopback server). */
export const kLoopbackHosts: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

/**
 * HTTP rules of MCP Streamable HTTP for both eras, over any adapter: Origin, sessions, headers,
 * statuses, JSON or SSE replies. Everything after that is the engine's.
 */
export class HttpEndpoint {
  readonly #engine: Engine;
  readonly #o: HttpEndpointOptions;
  readonly #worker: readonly (readonly [string, string])[];

  readonly #slowReaders: SlowReaderPolicy;

  constructor(engine: Engine, options: HttpEndpointOptions) {
    this.#engine = engine;
    this.#o = options;
    this.#slowReaders = { maxBufferedBytes: options.maxStreamBufferBytes, timeoutMs: options.slowReaderTimeoutMs, counters: engine.config.counters };
    this.#worker = options.exposeWorker ? [['sluice-worker', String(threadId)]] : [];
    this.#corsOrigins = new Set(options.cors?.origins ?? []);
  }

  handle(ex: Exchange): void {
    const repeated = ex.duplicateHeader;
    if (repeated !== undefined) {
      // Two values of a security-relevant header let a proxy and this server see different requests.
      this.#error(ex, 400, null, ErrorCode.InvalidRequest, `Bad Request: the ${repeated} header appears more than once`);
      return;
    }
    const hosts = this.#o.allowedHostNames;
    if (hosts !== undefined) {
      const host = ex.header('host');
      if (host === undefined || !this.#hostAllowed(hosts, host)) {
        this.#error(ex, 403, null, ErrorCode.InvalidRequest, 'Forbidden: Host not allowed');
        return;
      }
    }
    const origin = ex.header('origin');
    if (origin !== undefined && !this.#originAllowed(origin)) {
      this.#error(ex, 403, null, ErrorCode.InvalidRequest, 'Forbidden: Origin not allowed');
      return;
    }
    if (ex.path !== this.#o.path) {
      // After the Host and Origin checks: metrics are no more open to a rebinding page than MCP is.
      if (ex.path === '/metrics' && this.#o.metrics && ex.method === 'GET') {
        const { registry, counters } = this.#engine.config;
        ex.respond(200, [['content-type', 'text/plain; version=0.0.4']], prometheusText(registry.counters(), counters));
        return;
      }
      this.#plain(ex, 404, 'not found');
      return;
    }
    switch (ex.method) {
      case 'POST':
        void this.#post(ex).catch((error: unknown) => this.#crash(ex, error));
        return;
      case 'DELETE':
        void this.#delete(ex).catch((error: unknown) => this.#crash(ex, error));
        return;
      case 'OPTIONS':
        if (this.#preflight(ex)) return;
        ex.respond(405, [['allow', 'POST, DELETE'], ...this.#extra(ex)], '');
        return;
      default:
        // No server-to-client stream is offered (GET), in either era.
        ex.respond(405, [['allow', 'POST, DELETE'], ...this.#extra(ex)], '');
    }
  }

  readonly #corsOrigins: ReadonlySet<string>;
  /** Extra response headers per CORS origin (built once per origin seen). */
  readonly #corsHeaders = new Map<string, readonly (readonly [string, string])[]>();

  /** Headers every response to this exchange carries beyond its own: the worker id, CORS. */
  #extra(ex: Exchange): readonly (readonly [string, string])[] {
    if (this.#corsOrigins.size === 0) return this.#worker;
    const origin = ex.header('origin');
    if (origin === undefined || !this.#corsOrigins.has(origin)) return this.#worker;
    let headers = this.#corsHeaders.get(origin);
    if (headers === undefined) {
      headers = [
        ...this.#worker,
        ['access-control-allow-origin', origin],
        ['access-control-expose-headers', kCorsExposed],
        ['vary', 'Origin'],
      ];
      this.#corsHeaders.set(origin, headers);
    }
    return headers;
  }

  /** A CORS preflight from a listed origin: 204 with what may be sent. False when it is not one. */
  #preflight(ex: Exchange): boolean {
    const origin = ex.header('origin');
    const method = ex.header('access-control-request-method');
    if (origin === undefined || method === undefined || !this.#corsOrigins.has(origin)) return false;
    const requested = ex.header('access-control-request-headers');
    // Echo the requested headers when each is a plain token (what browsers send), else the MCP set.
    const allowHeaders = requested !== undefined && /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/.test(requested.trim())
      ? requested.trim()
      : kCorsAllowed;
    ex.respond(204, [
      ...this.#extra(ex),
      ['access-control-allow-methods', 'POST, DELETE'],
      ['access-control-allow-headers', allowHeaders],
      ['access-control-max-age', '600'],
    ], '');
    return true;
  }

  #originAllowed(origin: string): boolean {
    if (this.#o.allowedOrigins.includes(origin) || this.#corsOrigins.has(origin)) return true;
    try {
      const url = new URL(origin);
      return (url.protocol === 'http:' || url.protocol === 'https:') && kLoopbackHosts.has(url.hostname);
    } catch {
      return false;
    }
  }

  async #principal(ex: Exchange): Promise<{ ok: true; id: string | undefined } | { ok: false }> {
    const auth = this.#o.authenticate;
    if (auth === undefined) return { ok: true, id: undefined };
    try {
      const principal = await auth({ header: (name) => ex.header(name.toLowerCase()), remoteAddress: ex.remoteAddress });
      const id = principal?.id;
      return { ok: true, id: typeof id === 'string' ? id : undefined };
    } catch {
      return { ok: false };
    }
  }

  #address(ex: Exchange): string {
    if (this.#o.trustProxy) {
      const forwarded = ex.header('x-forwarded-for');
      if (forwarded !== undefined) {
        const hops = forwarded.split(',');
        // The last hop is the one our own proxy appended: the only entry a client cannot forge.
        return hops[hops.length - 1].trim();
      }
    }
    return ex.remoteAddress;
  }

  async #delete(ex: Exchange): Promise<void> {
    const store = this.#o.sessions;
    const id = ex.header('mcp-session-id');
    if (store === undefined) {
      ex.respond(405, [['allow', 'POST'], ...this.#extra(ex)], '');
      return;
    }
    if (id === undefined) {
      this.#error(ex, 400, null, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required');
      return;
    }
    const principal = await this.#principal(ex);
    if (!principal.ok) return this.#error(ex, 401, null, ErrorCode.InvalidRequest, 'Unauthorized');
    const found = store.lookup(id, principal.id, this.#o.sessionIdleMs);
    if (!found.ok) return this.#error(ex, 404, null, ErrorCode.InvalidRequest, 'Session not found');
    store.delete(found);
    ex.respond(204, this.#extra(ex), '');
  }

  async #post(ex: Exchange): Promise<void> {
    const type = ex.header('content-type');
    if (type === undefined || mediaType(type) !== 'application/json') {
      this.#error(ex, 415, null, ErrorCode.InvalidRequest, 'Unsupported Media Type: Content-Type must be application/json');
      return;
    }
    const accept = ex.header('accept');
    const accepted = accept === undefined ? undefined : this.#acceptedTypes(accept);
    const streams = accepted === undefined || accepted.has('text/event-stream') || accepted.has('text/*') || accepted.has('*/*');
    if (accepted !== undefined && !streams && !accepted.has('application/json') && !accepted.has('application/*')) {
      this.#error(ex, 406, null, ErrorCode.InvalidRequest, 'Not Acceptable: accept application/json or text/event-stream');
      return;
    }
    // Without an authenticate hook there is nothing to wait for.
    const principal = this.#o.authenticate === undefined ? kAnonymous : await this.#principal(ex);
    if (ex.aborted) return;
    if (!principal.ok) return this.#error(ex, 401, null, ErrorCode.InvalidRequest, 'Unauthorized');
    const body = await ex.readBody(this.#o.maxBodyBytes);
    if (body === undefined || body === 'too_large') return;
    const parsed = parseJson(body);
    if (!parsed.ok) return this.#error(ex, 400, null, ErrorCode.ParseError, 'Parse error');
    if (Array.isArray(parsed.value)) return this.#error(ex, 400, null, ErrorCode.InvalidRequest, 'Batches are not supported: send one message per POST');
    const message = classify(parsed.value);
    if (message.kind === 'invalid') return this.#error(ex, 400, message.id, message.code, message.message);
    const method = message.kind === 'response' ? undefined : message.method;
    const params = message.kind === 'response' ? undefined : message.params;
    const meta = metaOf(params);
    const headerVersion = ex.header('mcp-protocol-version');
    const era: Era = eraOf(meta, headerVersion);
    if (message.kind === 'response' && era === 'modern') {
      // 2026-07-28 servers send clients no requests (they return input_required instead).
      return this.#error(ex, 400, null, ErrorCode.InvalidRequest, 'Clients must not send responses');
    }
    if (message.kind === 'notification' && era === 'modern') {
      // 2026-07-28 defines no client notifications over HTTP and no header rules for their POSTs
      // (the official server answers 202): accepted and ignored. In particular a
      // notifications/cancelled cancels nothing here: a modern request ends only when its own
      // stream closes, so no other connection can cancel it.
      this.#engine.config.counters.add(Counter.Notifications);
      ex.respond(202, this.#extra(ex), '');
      return;
    }
    const id: JsonRpcId | null = message.kind === 'request' ? message.id : null;
    let info: RequestInfo;
    let sessionHeader: string | undefined;
    if (era === 'modern') {
      const problem = this.#checkModern(ex, method ?? '', params as Record<string, unknown> | undefined, meta, headerVersion);
      if (problem !== undefined) return this.#error(ex, problem.httpStatus, id, problem.rpcCode, problem.message, problem.data);
      // Modern requests live in scopes of their own (`modern:` + the client's scope): no legacy
      // notifications/cancelled, whatever its scope, can name them.
      info = { era, version: kModernVersion, scope: `modern:${this.#scope(undefined, principal.id, ex)}`, logLevel: modernLogLevel(meta) };
    } else {
      if (headerVersion !== undefined && !(kLegacyVersions as readonly string[]).includes(headerVersion)) {
        return this.#error(ex, 400, id, ErrorCode.InvalidRequest, `Bad Request: unsupported MCP-Protocol-Version ${headerVersion}`);
      }
      let sessionId: string | undefined;
      let logLevel = 0; // legacy: everything until logging/setLevel says otherwise
      let setLogLevel: ((level: number) => void) | undefined;
      let clientCapabilities: Record<string, unknown> | undefined;
      const store = this.#o.sessions;
      if (store !== undefined && method !== 'initialize') {
        const presented = ex.header('mcp-session-id');
        if (presented === undefined) return this.#error(ex, 400, id, ErrorCode.InvalidRequest, 'Bad Request: Mcp-Session-Id header is required');
        const found = store.lookup(presented, principal.id, this.#o.sessionIdleMs);
        if (!found.ok) return this.#error(ex, 404, id, ErrorCode.InvalidRequest, 'Session not found');
        sessionId = presented;
        if (found.logLevel >= 0) logLevel = found.logLevel;
        setLogLevel = (level) => store.setLogLevel(found, level);
        clientCapabilities = capabilitiesOf(found.capabilities);
      }
      if (store !== undefined && method === 'initialize' && message.kind === 'request') {
        const created = store.create(principal.id, capabilityBits(message.params?.capabilities), this.#client(principal.id, ex), this.#o.maxSessionsPerClient);
        if (!created.ok) {
          if (created.reason === 'client_limit') return this.#clientLimited(ex, id, 'too many sessions for this client');
          ex.respond(503, [['retry-after', '1'], ...kJson, ...this.#extra(ex)], errorBody(id, ErrorCode.InternalError, 'Server busy: session table full'));
          return;
        }
        sessionHeader = created.id;
        sessionId = sessionHeader;
      }
      info = { era, version: headerVersion ?? kDefaultLegacyVersion, scope: this.#scope(sessionId, principal.id, ex), logLevel, setLogLevel, clientCapabilities };
    }
    if (message.kind === 'response') {
      // An answer to a request a tool sent this client (any worker may receive it).
      this.#engine.handleResponse(message, info.scope);
      ex.respond(202, this.#extra(ex), '');
      return;
    }
    if (message.kind === 'notification') {
      const refusal = this.#engine.handleNotification(message.method, message.params, info);
      if (refusal === undefined) ex.respond(202, this.#extra(ex), '');
      else ex.respond(refusal.httpStatus, [...kJson, ...this.#extra(ex)], errorBody(null, refusal.rpcCode, refusal.message, refusal.data));
      return;
    }
    // Per-client bound on this worker's running requests: one client cannot take the whole table.
    const client = this.#client(principal.id, ex);
    const running = this.#inFlight.get(client) ?? 0;
    if (running >= this.#o.maxInFlightPerClient) {
      if (sessionHeader !== undefined) this.#o.sessions?.remove(sessionHeader);
      return this.#clientLimited(ex, id, 'too many requests in flight for this client');
    }
    this.#inFlight.set(client, running + 1);
    const reply = new HttpReply(ex, {
      canStream: streams, extra: this.#extra(ex), session: sessionHeader, store: this.#o.sessions, client, release: this.#releaseClient, policy: this.#slowReaders,
      cancelOnGone: era === 'modern' || this.#o.cancelOnDisconnect,
    });
    const handle = this.#engine.handleRequest(message.id, message.method, message.params, info, reply);
    if (handle !== undefined) {
      ex.onAbort(() => reply.gone());
      if (ex.aborted) reply.gone();
    }
  }

  /** 2026-07-28 header and _meta rules, in the order the conformance suite checks them. */
  #checkModern(ex: Exchange, method: string, params: Record<string, unknown> | undefined, meta: Record<string, unknown> | undefined, headerVersion: string | undefined): ProtocolError | undefined {
    if (headerVersion === undefined) return new ProtocolError(ErrorCode.HeaderMismatch, 'MCP-Protocol-Version header is required', undefined, 400);
    const metaVersion = meta?.[kMetaProtocolVersion];
    if (typeof metaVersion === 'string' && headerVersion !== metaVersion) return new ProtocolError(ErrorCode.HeaderMismatch, 'MCP-Protocol-Version header does not match _meta', undefined, 400);
    const version = checkModernVersion(metaVersion);
    if (version !== undefined) return version;
    const methodHeader = ex.header('mcp-method');
    if (methodHeader !== method) return new ProtocolError(ErrorCode.HeaderMismatch, methodHeader === undefined ? 'Mcp-Method header is required' : 'Mcp-Method header does not match the body', undefined, 400);
    if (kNamedMethods.has(method)) {
      const named = params?.name ?? params?.uri;
      const nameHeader = decodeHeaderValue(ex.header('mcp-name'));
      if (nameHeader === undefined) return new ProtocolError(ErrorCode.HeaderMismatch, 'Mcp-Name header is required', undefined, 400);
      if (nameHeader !== named) return new ProtocolError(ErrorCode.HeaderMismatch, 'Mcp-Name header does not match the body', undefined, 400);
    }
    const capabilities = meta?.[kMetaClientCapabilities];
    if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) {
      return new ProtocolError(ErrorCode.InvalidParams, `_meta["${kMetaClientCapabilities}"] is required`, undefined, 400);
    }
    if (!this.#engine.implements('modern', method)) return new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${method}`, undefined, 404);
    return undefined;
  }

  /** Requests running on this worker per client (entries go when they reach zero). */
  readonly #inFlight = new Map<string, number>();
  /** Bound once: a reply calls it when its request is released. */
  readonly #releaseClient = (client: string): void => {
    const n = (this.#inFlight.get(client) ?? 1) - 1;
    if (n <= 0) this.#inFlight.delete(client);
    else this.#inFlight.set(client, n);
  };

  /** The client a per-client limit counts: the principal, else the address bucket (never the session). */
  #client(principalId: string | undefined, ex: Exchange): string {
    return this.#scope(undefined, principalId, ex);
  }

  #clientLimited(ex: Exchange, id: JsonRpcId | null, what: string): void {
    this.#engine.config.counters.add(Counter.ClientLimited);
    if (ex.aborted) return;
    ex.respond(429, [['retry-after', '1'], ...kJson, ...this.#extra(ex)], errorBody(id, ErrorCode.InternalError, `Too Many Requests: ${what}`));
  }

  #scope(sessionId: string | undefined, principalId: string | undefined, ex: Exchange): string {
    if (sessionId !== undefined) return `session:${sessionId}`;
    if (principalId !== undefined) return `principal:${principalId}`;
    const address = this.#address(ex);
    // Keep-alive clients send request after request from one address: bucket it once.
    if (address !== this.#lastAddress) {
      this.#lastAddress = address;
      this.#lastScope = `ip:${clientBucket(address)}`;
    }
    return this.#lastScope;
  }

  #lastAddress: string | undefined;
  #lastScope = '';
  #lastAccept: string | undefined;
  #lastAccepted: Set<string> = new Set();
  #lastHost: string | undefined;
  #lastHostOk = false;

  #acceptedTypes(accept: string): Set<string> {
    if (accept !== this.#lastAccept) {
      this.#lastAccept = accept;
      this.#lastAccepted = acceptedTypes(accept);
    }
    return this.#lastAccepted;
  }

  #hostAllowed(hosts: ReadonlySet<string>, host: string): boolean {
    if (host !== this.#lastHost) {
      this.#lastHost = host;
      const name = hostName(host);
      this.#lastHostOk = name !== undefined && hosts.has(name);
    }
    return this.#lastHostOk;
  }

  #error(ex: Exchange, status: number, id: JsonRpcId | null, code: number, message: string, data?: unknown): void {
    if (ex.aborted) return;
    ex.respond(status, [...kJson, ...this.#extra(ex)], errorBody(id, code, message, data));
  }

  #plain(ex: Exchange, status: number, text: string): void {
    ex.respond(status, [['content-type', 'text/plain'], ...this.#extra(ex)], text);
  }

  #crash(ex: Exchange, error: unknown): void {
    this.#engine.config.log('error', `sluice: unexpected error serving a request: ${error instanceof Error ? error.stack ?? error.message : String(error)}`);
    this.#error(ex, 500, null, ErrorCode.InternalError, 'Internal error');
  }
}

/**
 * The name part of a Host header value (`[::1]:3000` → `[::1]`), lower-case; undefined unless the
 * value is exactly `name` or `name:port` with a decimal port (so `localhost:evil.example` is refused).
 */
export function hostName(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  let name: string;
  let rest: string;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end === -1) return undefined;
    name = h.slice(0, end + 1);
    rest = h.slice(end + 1);
  } else {
    const colon = h.indexOf(':');
    name = colon === -1 ? h : h.slice(0, colon);
    rest = colon === -1 ? '' : h.slice(colon);
  }
  if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return undefined;
  return name === '' ? undefined : name;
}

/** The media type of a Content-Type value, lower-case, without parameters. */
function mediaType(value: string): string {
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** Media ranges of an Accept header that are acceptable (q > 0). */
function acceptedTypes(value: string): Set<string> {
  const out = new Set<string>();
  for (const range of value.split(',')) {
    const [type, ...params] = range.split(';');
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    out.add(type.trim().toLowerCase());
  }
  return out;
}

/** `=?base64?…?=` values (2026-07-28 header encoding for unsafe characters) decoded; others as is. */
function decodeHeaderValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  if (m === null) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1], 'base64'));
  } catch {
    return undefined;
  }
}
