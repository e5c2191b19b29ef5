import { Agent as HttpAgent, request as httpRequest, validateHeaderName, validateHeaderValue } from 'node:http';
import type { ClientRequest, IncomingMessage } from 'node:http';
import { Agent as HttpsAgent, request as httpsRequest } from 'node:https';
import { SluiceError } from '../errors.js';
import { headerValue, paramHeaderSpecs, paramHeaders } from './param-headers.js';
import { bearerChallenge, scopeList } from './www-authenticate.js';
import type { ParamHeaderSpecs } from './param-headers.js';
import { SseReader } from './sse-reader.js';
import { answerServerRequest, encodeMessage, parseMessage, responseBound } from './transport.js';
import type { ClientTransport, JsonRpcMessage, SendOptions } from './transport.js';

export interface HttpTransportOptions {
  /** The MCP endpoint, e.g. http://127.0.0.1:3000/mcp */
  url: string | URL;
  /**
   * Extra headers on every request, checked at construction as HTTP checks them (`invalid_option`).
   * For a bearer token, prefer `bearer` (the two cannot both set authorization).
   */
  headers?: Record<string, string>;
  /**
   * An OAuth bearer token (RFC 6750) sent as `Authorization: Bearer <token>` on every request of
   * both eras: calls, notifications, the legacy cancel POSTs and the session's closing DELETE. A
   * function is called before each request, so it can hand out a refreshed token (its rejection
   * fails that request). A 401 rejects with UnauthorizedError, a 403 `insufficient_scope` with
   * InsufficientScopeError.
   */
  bearer?: BearerToken;
  /**
   * The most a server may send for one answer: a JSON body, or one SSE event, of more than this
   * many bytes (characters, for an event) fails the call with `invalid_response` and closes its
   * stream, so a server that never stops cannot exhaust the client's memory. Default 64 MiB.
   */
  maxResponseBytes?: number;
}

/** A bearer token, or a function giving the current one (called per request). */
export type BearerToken = string | (() => string | Promise<string>);

/** What a 401 challenge says (RFC 6750 §3, RFC 9728 §5.1); every field as the server sent it. */
export interface UnauthorizedDetails {
  /** The `resource_metadata` URL: the Protected Resource Metadata naming the authorization servers. */
  resourceMetadata?: string;
  /** The `error` code: `invalid_token` when a token was presented and refused (absent when none was sent). */
  error?: string;
  /** The `error_description`, for people. */
  description?: string;
  /** The `scope` param split on spaces: scopes a token needs, when the server names them. */
  scopes?: string[];
}

/** What a 403 `insufficient_scope` challenge says (RFC 6750 §3.1). */
export interface InsufficientScopeDetails {
  /** The `scope` param split on spaces: every scope the request needs (empty when the server named none). */
  requiredScopes: string[];
  /** The `resource_metadata` URL, when given. */
  resourceMetadata?: string;
  /** The `error_description`, when given. */
  description?: string;
}

/**
 * The server answered 401: it wants a bearer token, or refused the one sent (`error:
 * 'invalid_token'`). Fields come from the response's `WWW-Authenticate: Bearer …` challenge; a 401
 * without a Bearer challenge leaves them undefined. Code 'unauthorized'. Not retried.
 */
export class UnauthorizedError extends SluiceError {
  /** The `resource_metadata` URL (RFC 9728): fetch it to learn which authorization server issues tokens. */
  readonly resourceMetadata?: string;
  /** The challenge's `error` (`invalid_token`, `invalid_request`, …); undefined when no token was presented. */
  readonly error?: string;
  /** The challenge's `error_description`. */
  readonly description?: string;
  /** The challenge's `scope`, split on spaces. */
  readonly scopes?: string[];
  constructor(details: UnauthorizedDetails = {}) {
    const what = details.error === undefined ? 'a bearer token is required'
      : `the bearer token was refused (${details.error}${details.description === undefined ? '' : `: ${details.description}`})`;
    const scopes = details.scopes === undefined || details.scopes.length === 0 ? '' : `; scopes: ${details.scopes.join(' ')}`;
    const metadata = details.resourceMetadata === undefined ? '' : `; resource metadata: ${details.resourceMetadata}`;
    super('unauthorized', `the server answered 401 Unauthorized: ${what}${scopes}${metadata}`);
    this.name = 'UnauthorizedError';
    if (details.resourceMetadata !== undefined) this.resourceMetadata = details.resourceMetadata;
    if (details.error !== undefined) this.error = details.error;
    if (details.description !== undefined) this.description = details.description;
    if (details.scopes !== undefined) this.scopes = details.scopes;
  }
}

/**
 * The server answered 403 with `error="insufficient_scope"`: the token is valid but lacks scopes
 * the request needs (`requiredScopes`, from the challenge's `scope`). Code 'insufficient_scope'.
 * (A 403 without that challenge, e.g. an Origin refusal, stays a JSON-RPC error.)
 */
export class InsufficientScopeError extends SluiceError {
  /** Every scope the request needs, as the challenge's `scope` lists them (empty when it names none). */
  readonly requiredScopes: string[];
  /** The `resource_metadata` URL (RFC 9728), when given. */
  readonly resourceMetadata?: string;
  /** The challenge's `error_description`. */
  readonly description?: string;
  constructor(details: InsufficientScopeDetails) {
    const needs = details.requiredScopes.length === 0 ? 'the server named none' : `needs ${details.requiredScopes.join(' ')}`;
    const metadata = details.resourceMetadata === undefined ? '' : `; resource metadata: ${details.resourceMetadata}`;
    super('insufficient_scope', `the server answered 403 Forbidden: the bearer token lacks required scopes (insufficient_scope: ${needs})${metadata}`);
    this.name = 'InsufficientScopeError';
    this.requiredScopes = details.requiredScopes;
    if (details.resourceMetadata !== undefined) this.resourceMetadata = details.resourceMetadata;
    if (details.description !== undefined) this.description = details.description;
  }
}

/** The typed error for a 401, or a 403 with an insufficient_scope Bearer challenge; undefined otherwise. */
function authRefusal(res: IncomingMessage): UnauthorizedError | InsufficientScopeError | undefined {
  if (res.statusCode !== 401 && res.statusCode !== 403) return undefined;
  const challenge = bearerChallenge(res.headersDistinct['www-authenticate'] ?? []);
  const params = challenge?.params ?? {};
  if (res.statusCode === 401) {
    const details: UnauthorizedDetails = {};
    if (params.resource_metadata !== undefined) details.resourceMetadata = params.resource_metadata;
    if (params.error !== undefined) details.error = params.error;
    if (params.error_description !== undefined) details.description = params.error_description;
    const scopes = scopeList(params.scope);
    if (scopes !== undefined) details.scopes = scopes;
    return new UnauthorizedError(details);
  }
  if (params.error !== 'insufficient_scope') return undefined;
  const details: InsufficientScopeDetails = { requiredScopes: scopeList(params.scope) ?? [] };
  if (params.resource_metadata !== undefined) details.resourceMetadata = params.resource_metadata;
  if (params.error_description !== undefined) details.description = params.error_description;
  return new InsufficientScopeError(details);
}

/** Visible ASCII, no spaces: what an Authorization header value can carry after "Bearer ". */
const kTokenChars = /^[\x21-\x7e]+$/;

/** The server said the legacy session is gone (404): the client starts a new one. */
export class SessionExpiredError extends SluiceError {
  /** The session the server no longer knows. */
  readonly session: string;
  constructor(session: string) {
    super('session_expired', 'the session expired');
    this.name = 'SessionExpiredError';
    this.session = session;
  }
}

/** The param each named method's Mcp-Name header repeats (the spec's list; tasks/* name their task). */
const kNamed: Record<string, string> = {
  'tools/call': 'name', 'prompts/get': 'name', 'resources/read': 'uri',
  'tasks/get': 'taskId', 'tasks/update': 'taskId', 'tasks/cancel': 'taskId',
};

/** The extra headers, checked once here as HTTP would check them on every call: else `invalid_option`. */
function checkedHeaders(headers: Record<string, string> | undefined): Record<string, string> {
  if (headers === undefined) return {};
  if (headers === null || typeof headers !== 'object') throw new SluiceError('invalid_option', `headers must be an object of header names and values, got ${headers === null ? 'null' : typeof headers}`);
  for (const [name, value] of Object.entries(headers)) {
    try {
      validateHeaderName(name);
      validateHeaderValue(name, value);
    } catch (error) {
      throw new SluiceError('invalid_option', `headers: ${(error as Error).message}`);
    }
  }
  return headers;
}

/** The endpoint as a URL: http or https, else `invalid_option` (never a TypeError from deep inside). */
function endpointUrl(url: unknown): URL {
  let parsed: URL | undefined;
  try {
    parsed = typeof url === 'string' || url instanceof URL ? new URL(url) : undefined;
  } catch {
    parsed = undefined;
  }
  if (parsed === undefined || (parsed.protocol !== 'http:' && parsed.protocol !== 'https:')) {
    throw new SluiceError('invalid_option', `url must be an http:// or https:// URL (the MCP endpoint), got ${typeof url === 'string' || url instanceof URL ? JSON.stringify(String(url)) : typeof url}`);
  }
  return parsed;
}

/**
 * Streamable HTTP for both eras. Legacy: session headers, JSON or SSE replies, and the cancel is a
 * separate notifications/cancelled POST (on its own connection) sent after this request's bytes
 * went out. 2026-07-28: per-request headers, and the cancel is closing this request's stream.
 */
export class HttpClientTransport implements ClientTransport {
  #era: 'legacy' | 'modern' = 'legacy';
  #version: string | undefined;
  #session: string | undefined;
  readonly #url: URL;
  readonly #headers: Record<string, string>;
  readonly #bearer: BearerToken | undefined;
  readonly #agent: HttpAgent;
  /** Requests not finished yet: close() ends them, answered or not. */
  readonly #open = new Set<ClientRequest>();
  #closed = false;
  /** x-mcp-header annotations by tool name, from the tools/list results seen (2026-07-28 Mcp-Param-*). */
  readonly #toolHeaders = new Map<string, ParamHeaderSpecs>();
  readonly #maxResponseBytes: number;

  /**
   * `options`, or only the endpoint's URL (`new HttpClientTransport('http://127.0.0.1:3000/mcp')`,
   * as the official SDK's transports take it). A URL that is not http(s) is `invalid_option`.
   */
  constructor(options: HttpTransportOptions | string | URL) {
    if (typeof options === 'string' || options instanceof URL) options = { url: options };
    this.#url = endpointUrl(options?.url);
    this.#maxResponseBytes = responseBound(options.maxResponseBytes);
    this.#headers = checkedHeaders(options.headers);
    this.#bearer = options.bearer;
    if (this.#bearer !== undefined) {
      if (typeof this.#bearer !== 'function') checkToken(this.#bearer);
      if (Object.keys(this.#headers).some((name) => name.toLowerCase() === 'authorization')) {
        throw new SluiceError('invalid_option', 'give the token as `bearer` or as an authorization header, not both');
      }
    }
    this.#agent = this.#url.protocol === 'https:' ? new HttpsAgent({ keepAlive: true }) : new HttpAgent({ keepAlive: true });
  }

  get cancelsByAbort(): boolean {
    return this.#era === 'modern';
  }

  setEra(era: 'legacy' | 'modern', version: string): void {
    this.#era = era;
    this.#version = version;
  }

  /** The legacy session id, once initialize gave one. */
  get sessionId(): string | undefined {
    return this.#session;
  }

  #requestHeaders(message: JsonRpcMessage): Record<string, string> {
    const headers: Record<string, string> = {
      'content-type': 'application/json', accept: 'application/json, text/event-stream', ...this.#headers,
    };
    if (this.#version !== undefined) headers['mcp-protocol-version'] = this.#version;
    if (this.#era === 'legacy' && this.#session !== undefined) headers['mcp-session-id'] = this.#session;
    if (this.#era === 'modern' && typeof message.method === 'string') {
      headers['mcp-method'] = message.method;
      const field = kNamed[message.method];
      const value = field === undefined ? undefined : (message.params as Record<string, unknown> | undefined)?.[field];
      if (typeof value === 'string') headers['mcp-name'] = headerValue(value);
      const specs = message.method === 'tools/call' && typeof value === 'string' ? this.#toolHeaders.get(value) : undefined;
      if (specs !== undefined) paramHeaders(specs, (message.params as Record<string, unknown>).arguments, headers);
    }
    return headers;
  }

  /** The Authorization header for the next request: the token, or the function's current one. */
  async #authorization(): Promise<Record<string, string>> {
    if (this.#bearer === undefined) return {};
    const token = typeof this.#bearer === 'function' ? await this.#bearer() : this.#bearer;
    checkToken(token);
    return { authorization: `Bearer ${token}` };
  }

  async #post(message: JsonRpcMessage, signal: AbortSignal | undefined, onSent: () => void): Promise<IncomingMessage> {
    const body = encodeMessage(message);
    const request = this.#url.protocol === 'https:' ? httpsRequest : httpRequest;
    const authorization = await this.#authorization();
    if (this.#closed) throw new SluiceError('transport_closed', 'the transport is closed');
    return new Promise((resolve, reject) => {
      const req = request(this.#url, {
        method: 'POST',
        agent: this.#agent,
        headers: { ...this.#requestHeaders(message), ...authorization, 'content-length': String(Buffer.byteLength(body)) },
        signal,
      }, (res) => {
        answered = true;
        res.once('close', () => this.#open.delete(req));
        resolve(res);
      });
      let answered = false;
      this.#open.add(req);
      req.once('close', () => { if (!answered) this.#open.delete(req); });
      req.on('error', reject);
      req.end(body, onSent);
    });
  }

  async send(message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage> {
    if (this.#closed) throw new SluiceError('transport_closed', 'the transport is closed');
    try {
      const reply = await this.#exchange(message, options);
      if (message.method === 'tools/list') this.#learnTools(reply);
      return reply;
    } catch (error) {
      // close() ends every open request: whatever that broke (a reset socket, a cut stream) is the close.
      if (this.#closed && !(error instanceof SluiceError && error.code === 'transport_closed')) {
        throw new SluiceError('transport_closed', 'the transport was closed', { cause: error });
      }
      throw error;
    }
  }

  async #exchange(message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage> {
    const used = this.#era === 'legacy' ? this.#session : undefined; // the session this request carries
    const res = await this.#post(message, options.signal, options.onSent);
    const refused = authRefusal(res);
    if (refused !== undefined) {
      res.resume();
      throw refused;
    }
    const session = res.headers['mcp-session-id'];
    if (typeof session === 'string' && message.method === 'initialize') this.#session = session;
    if (res.statusCode === 404 && used !== undefined && message.method !== 'initialize') {
      res.resume();
      if (this.#session === used) this.#session = undefined; // unless a new session already replaced it
      throw new SessionExpiredError(used);
    }
    const type = String(res.headers['content-type'] ?? '');
    if (type.startsWith('text/event-stream')) return this.#readStream(res, message, options);
    const text = await readAll(res, this.#maxResponseBytes);
    if (text === '') {
      // A 2xx without a body is how a server answers a request it cancelled (Sluice: 202); anything else is no answer at all.
      const status = res.statusCode ?? 0;
      if (status >= 200 && status < 300) throw new SluiceError('request_cancelled', `the server answered ${status} with no response (the request was cancelled)`);
      throw new SluiceError('invalid_response', `the server answered ${status} with an empty body`);
    }
    let parsed: unknown;
    try {
      parsed = JSON.parse(text);
    } catch {
      throw new SluiceError('invalid_response', `the server answered ${res.statusCode} with a body that is not JSON`);
    }
    if (parsed === null || typeof parsed !== 'object' || Array.isArray(parsed)) {
      throw new SluiceError('invalid_response', `the server answered ${res.statusCode} with JSON that is not a response object`);
    }
    // The body answers this POST's request: a response to another id is not its answer. An error
    // with no id (null, or none) is one the server could not tie to a request, as when it refused
    // the request's headers: it is still this POST's answer.
    const id = (parsed as { id?: unknown }).id;
    if (id !== message.id && !((id === null || id === undefined) && 'error' in parsed)) {
      throw new SluiceError('invalid_response', `the server answered request ${JSON.stringify(message.id)} with a response to id ${JSON.stringify(id) ?? 'none'}`);
    }
    return parsed as JsonRpcMessage;
  }

  /** Reads an SSE reply until the response to `message` arrives; other messages go to onMessage. */
  #readStream(res: IncomingMessage, message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage> {
    return new Promise((resolve, reject) => {
      const reader = new SseReader();
      let done = false;
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        if (done) return;
        for (const data of reader.push(chunk)) {
          const parsed = parseMessage(data);
          if (parsed === undefined) continue; // not a message (not JSON, or a number, null, an array)
          if ('id' in parsed && parsed.id === message.id && ('result' in parsed || 'error' in parsed)) {
            done = true;
            resolve(parsed);
            res.destroy();
            return;
          }
          if ('method' in parsed && 'id' in parsed) {
            // A server request: answered by the request's handler if it has one, else declined.
            void answerServerRequest(parsed, options).then((reply) => this.notify(reply)).catch(() => {});
            continue;
          }
          options.onMessage(parsed);
        }
        if (reader.pending > this.#maxResponseBytes) {
          done = true;
          reject(new SluiceError('invalid_response', `the server sent an SSE event of more than ${this.#maxResponseBytes} characters (maxResponseBytes)`));
          res.destroy();
        }
      });
      res.on('end', () => { if (!done) reject(new SluiceError('request_cancelled', 'the stream ended without a response (the request was cancelled)')); });
      res.on('close', () => { if (!done && this.#closed) reject(new SluiceError('transport_closed', 'the transport was closed')); });
      res.on('error', (error) => { if (!done) reject(error); });
    });
  }

  /** Remembers the x-mcp-header annotations of the tools a tools/list result lists. */
  #learnTools(reply: JsonRpcMessage): void {
    const tools = (reply.result as { tools?: unknown } | undefined)?.tools;
    if (!Array.isArray(tools)) return;
    for (const tool of tools as { name?: unknown; inputSchema?: unknown }[]) {
      if (typeof tool?.name !== 'string') continue;
      const specs = paramHeaderSpecs(tool.inputSchema);
      if (specs === undefined) this.#toolHeaders.delete(tool.name);
      else this.#toolHeaders.set(tool.name, specs);
    }
  }

  async notify(message: JsonRpcMessage): Promise<void> {
    if (this.#closed) return;
    const res = await this.#post(message, undefined, () => {});
    res.resume();
    const refused = authRefusal(res);
    if (refused !== undefined) throw refused;
  }

  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    if (this.#era === 'legacy' && this.#session !== undefined) {
      // End the session, but never wait long on a server that stopped answering.
      const request = this.#url.protocol === 'https:' ? httpsRequest : httpRequest;
      const deadline = AbortSignal.timeout(1000);
      // The token too (a token function that fails or stalls leaves the DELETE without one, or unsent).
      const authorization = await Promise.race([
        this.#authorization().catch(() => ({})),
        new Promise<undefined>((resolve) => deadline.addEventListener('abort', () => resolve(undefined), { once: true })),
      ]);
      if (authorization !== undefined) await new Promise<void>((resolve) => {
        const req = request(this.#url, { method: 'DELETE', agent: false, headers: { ...this.#headers, ...authorization, 'mcp-session-id': this.#session!, ...(this.#version === undefined ? {} : { 'mcp-protocol-version': this.#version }) }, signal: deadline }, (res) => { res.resume(); resolve(); });
        req.on('error', () => resolve());
        req.end();
      });
    }
    for (const req of this.#open) req.destroy();
    this.#open.clear();
    this.#agent.destroy();
  }
}

/** A token an Authorization header can carry; never quoted in the error (it is a secret). */
function checkToken(token: unknown): asserts token is string {
  if (typeof token !== 'string' || !kTokenChars.test(token)) {
    throw new SluiceError('invalid_option', `the bearer token must be a non-empty string of visible ASCII characters without spaces (got ${typeof token === 'string' ? `a string of ${token.length} characters` : typeof token})`);
  }
}

/** A whole body, refused (invalid_response, the response destroyed) past `max` bytes. */
function readAll(res: IncomingMessage, max: number): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    res.on('data', (c: Buffer) => {
      size += c.length;
      if (size <= max) return void chunks.push(c);
      chunks.length = 0;
      reject(new SluiceError('invalid_response', `the server answered ${res.statusCode} with a body of more than ${max} bytes (maxResponseBytes)`));
      res.destroy();
    });
    res.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    res.on('error', reject);
  });
}
