import { CancelledError, SluiceError } from '../errors.js';
import { ProtocolError, kLegacyVersions, kMetaClientCapabilities, kMetaClientInfo, kMetaProtocolVersion, kModernVersion } from '../protocol/wire.js';
import { SessionExpiredError } from './http.js';
import type { ClientTransport, JsonRpcMessage } from './transport.js';
import type { ContentBlock, PromptArgument, PromptMessage, ResourceContents } from './content.js';

/** Options of every request method. */
export interface RequestOptions {
  /** Aborting rejects the call at once with a CancelledError carrying the reason, and tells the server. */
  signal?: AbortSignal;
  /** Cancels the call (the same way) after this many milliseconds. */
  timeoutMs?: number;
  /** Progress notifications for this call (a progress token is sent only when this is given). */
  onProgress?: (progress: { progress: number; total?: number; message?: string }) => void;
}

export interface ClientOptions {
  /** 'auto' (default): server/discover first (2026-07-28), falling back to initialize (legacy). */
  era?: 'auto' | 'legacy' | 'modern';
  clientInfo?: { name: string; version: string };
  /** Client capabilities to declare (this client answers no server requests: keep it `{}`). */
  capabilities?: Record<string, unknown>;
}

/**
 * The server answered with a JSON-RPC error: the protocol's ProtocolError (one class for server and
 * client), under its former client name. Same `rpcCode` and `data`; code 'rpc_error' (or
 * 'missing_client_capability' for -32021). `instanceof RpcError` and `new RpcError(code, message, data)` still work.
 */
export const RpcError = ProtocolError;
export type RpcError = ProtocolError;

type Result = Record<string, unknown>;

/** Fields any result may carry besides those named (`_meta`; 2026-07-28 `resultType`, `ttlMs`, …). */
export interface ResultFields {
  _meta?: Record<string, unknown>;
  [key: string]: unknown;
}

/** A JSON Schema object schema, as tools/list publishes it. */
export interface ObjectSchema {
  type: 'object';
  properties?: Record<string, unknown>;
  required?: string[];
  [key: string]: unknown;
}

/** One tool of a tools/list result. */
export interface ToolInfo {
  name: string;
  title?: string;
  description?: string;
  inputSchema: ObjectSchema;
  outputSchema?: ObjectSchema;
  annotations?: Record<string, unknown>;
  _meta?: Record<string, unknown>;
}

export interface ListToolsResult extends ResultFields {
  tools: ToolInfo[];
  nextCursor?: string;
}

/**
 * A tools/call result. A Sluice server's `structuredContent` is always an object; `isError` results
 * carry the tool's failure as text. (A 2026-07-28 server may answer `resultType: 'input_required'`
 * with `inputRequests` instead, only to a client that declared the capabilities it asks for.)
 */
export interface CallToolResult extends ResultFields {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
}

/** One resource of a resources/list result. */
export interface ResourceInfo {
  uri: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  size?: number;
  _meta?: Record<string, unknown>;
}

export interface ListResourcesResult extends ResultFields {
  resources: ResourceInfo[];
  nextCursor?: string;
}

/** One template of a resources/templates/list result. */
export interface ResourceTemplateInfo {
  uriTemplate: string;
  name: string;
  title?: string;
  description?: string;
  mimeType?: string;
  _meta?: Record<string, unknown>;
}

export interface ListResourceTemplatesResult extends ResultFields {
  resourceTemplates: ResourceTemplateInfo[];
  nextCursor?: string;
}

export interface ReadResourceResult extends ResultFields {
  contents: ResourceContents[];
}

/** One prompt of a prompts/list result. */
export interface PromptInfo {
  name: string;
  title?: string;
  description?: string;
  arguments?: PromptArgument[];
  _meta?: Record<string, unknown>;
}

export interface ListPromptsResult extends ResultFields {
  prompts: PromptInfo[];
  nextCursor?: string;
}

export interface GetPromptResult extends ResultFields {
  description?: string;
  messages: PromptMessage[];
}

export interface CompleteResult extends ResultFields {
  completion: { values: string[]; total?: number; hasMore?: boolean };
}

/**
 * An MCP client whose every request can be cancelled: pass `{ signal }` (or `{ timeoutMs }`) and the
 * call rejects at once with a CancelledError; the server hears of it the right way for the
 * connection (a notifications/cancelled line or POST after the request went out, or the request's
 * stream closed in 2026-07-28). Request ids are internal; late responses are dropped.
 */
export class Client {
  readonly #transport: ClientTransport;
  readonly #options: ClientOptions;
  #era: 'legacy' | 'modern' | undefined;
  #nextId = 0;
  #connecting: Promise<void> | undefined;
  #serverInfo: unknown;
  /** Cancel notifications on their way: close() lets them out before it closes the transport. */
  readonly #cancelling = new Set<Promise<void>>();
  /** What this client declares, defaults applied (sent at initialize, or with every modern request). */
  readonly #capabilities: Record<string, unknown>;
  readonly #clientInfo: { name: string; version: string };

  constructor(transport: ClientTransport, options: ClientOptions = {}) {
    this.#transport = transport;
    this.#options = options;
    this.#capabilities = options.capabilities ?? {};
    this.#clientInfo = options.clientInfo ?? { name: 'sluice-client', version: '0.1.0' };
  }

  /** 'legacy' or 'modern' once connected. */
  get era(): 'legacy' | 'modern' | undefined {
    return this.#era;
  }

  get serverInfo(): unknown {
    return this.#serverInfo;
  }

  /** Connects (done by the first request if not called). initialize is never cancelled. */
  connect(): Promise<void> {
    this.#connecting ??= this.#connect().catch((error: unknown) => {
      this.#connecting = undefined;
      throw error;
    });
    return this.#connecting;
  }

  async #connect(): Promise<void> {
    const era = this.#options.era ?? 'auto';
    if (era !== 'legacy') {
      this.#transport.setEra?.('modern', kModernVersion);
      this.#era = 'modern';
      try {
        const discovered = await this.#raw('server/discover', {}, {});
        this.#serverInfo = (discovered._meta as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/serverInfo'];
        return;
      } catch (error) {
        if (era === 'modern') throw error;
      }
    }
    this.#transport.setEra?.('legacy', kLegacyVersions[0]);
    this.#era = 'legacy';
    await this.#initialize();
  }

  async #initialize(): Promise<void> {
    const result = await this.#raw('initialize', {
      protocolVersion: kLegacyVersions[0],
      capabilities: this.#capabilities,
      clientInfo: this.#clientInfo,
    }, {});
    const version = typeof result.protocolVersion === 'string' ? result.protocolVersion : kLegacyVersions[0];
    if (!(kLegacyVersions as readonly string[]).includes(version)) throw new SluiceError('invalid_response', `the server speaks ${version}, which this client does not`);
    this.#serverInfo = result.serverInfo;
    this.#transport.setEra?.('legacy', version);
    await this.#transport.notify({ jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  /** Any request, by method. */
  async request(method: string, params: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<Result> {
    if (options.signal?.aborted === true) throw new CancelledError(reasonOf(options.signal.reason));
    await this.#connectFor(options);
    try {
      return await this.#raw(method, params, options);
    } catch (error) {
      if (!(error instanceof SessionExpiredError)) throw error;
      // 404: the legacy session is gone. One new session for all the calls that hit it, then retry once.
      const current = (this.#transport as { sessionId?: string }).sessionId;
      if (current === undefined || current === error.session) {
        this.#renewing ??= this.#initialize().finally(() => { this.#renewing = undefined; });
      }
      await this.#renewing;
      return this.#raw(method, params, options);
    }
  }

  /** A session renewal in progress (concurrent 404s share it). */
  #renewing: Promise<void> | undefined;

  /**
   * Calls `onCancel` with a reason when the caller's signal aborts or its timeout passes; returns
   * the function that stops watching.
   */
  #watch(options: RequestOptions, onCancel: (reason: string) => void): () => void {
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => onCancel(reasonOf(options.signal?.reason));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (options.timeoutMs !== undefined) timer = setTimeout(() => onCancel(`timed out after ${options.timeoutMs} ms`), options.timeoutMs);
    return () => {
      if (timer !== undefined) clearTimeout(timer);
      options.signal?.removeEventListener('abort', onAbort);
    };
  }

  /** Waits for the connection, but no longer than the caller's signal or timeout allows. */
  #connectFor(options: RequestOptions): Promise<void> {
    const connecting = this.connect();
    if (options.signal === undefined && options.timeoutMs === undefined) return connecting;
    return new Promise((resolve, reject) => {
      const stop = this.#watch(options, (reason) => { stop(); reject(new CancelledError(reason)); });
      connecting.then(() => { stop(); resolve(); }, (error: unknown) => { stop(); reject(error); });
    });
  }

  #raw(method: string, params: Record<string, unknown>, options: RequestOptions): Promise<Result> {
    const id = ++this.#nextId;
    const meta: Record<string, unknown> = { ...(params._meta as Record<string, unknown> | undefined) };
    if (this.#era === 'modern') {
      meta[kMetaProtocolVersion] = kModernVersion;
      meta[kMetaClientCapabilities] = this.#capabilities;
      meta[kMetaClientInfo] = this.#clientInfo;
    }
    if (options.onProgress !== undefined) meta.progressToken = id;
    const message: JsonRpcMessage = { jsonrpc: '2.0', id, method, params: Object.keys(meta).length > 0 ? { ...params, _meta: meta } : params };
    const cancellable = method !== 'initialize';
    const local = new AbortController();
    let onSent: () => void = () => {};
    const wasSent = new Promise<void>((resolve) => { onSent = resolve; });
    return new Promise<Result>((resolve, reject) => {
      let settled = false;
      let cleanup = () => {};
      const cancel = (reason: string) => {
        if (settled) return;
        settled = true;
        cleanup(); // the transport may never settle a cancelled call (stdio drops it): stop watching now
        reject(new CancelledError(reason));
        local.abort(reason);
        if (!this.#transport.cancelsByAbort) {
          // Only once the request's bytes are out, so the server never sees the cancel first.
          const sending = wasSent
            .then(() => this.#transport.notify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason } }))
            .catch(() => {})
            .finally(() => this.#cancelling.delete(sending));
          this.#cancelling.add(sending);
        }
      };
      if (cancellable) cleanup = this.#watch(options, cancel);
      this.#transport.send(message, {
        onSent: () => onSent(),
        onMessage: (m) => {
          if (settled || m.method !== 'notifications/progress') return;
          const p = m.params as { progressToken?: unknown; progress: number; total?: number; message?: string };
          if (p.progressToken === id) options.onProgress?.({ progress: p.progress, total: p.total, message: p.message });
        },
        signal: local.signal,
      }).then((response) => {
        cleanup();
        if (settled) return; // a late response to a cancelled call: dropped
        settled = true;
        if (response.error !== undefined) {
          const e = response.error as { code?: number; message?: string; data?: unknown };
          reject(new ProtocolError(typeof e.code === 'number' ? e.code : -32603, String(e.message ?? 'error'), e.data));
        } else {
          resolve((response.result ?? {}) as Result);
        }
      }, (error: unknown) => {
        cleanup();
        if (settled) return;
        settled = true;
        // A transport that rejects with a non-Error: the exchange failed in the transport.
        reject(error instanceof Error ? error : new SluiceError('transport_closed', `the transport failed: ${String(error)}`));
      });
    });
  }

  // The result types say what a conforming server sends; the client does not re-validate results.
  discover(options?: RequestOptions): Promise<ResultFields> { return this.request('server/discover', {}, options); }
  ping(options?: RequestOptions): Promise<ResultFields> { return this.request('ping', {}, options); }
  listTools(params: { cursor?: string } = {}, options?: RequestOptions): Promise<ListToolsResult> { return this.request('tools/list', params, options) as Promise<ListToolsResult>; }
  callTool(name: string, args: Record<string, unknown> = {}, options?: RequestOptions): Promise<CallToolResult> { return this.request('tools/call', { name, arguments: args }, options) as Promise<CallToolResult>; }
  listResources(params: { cursor?: string } = {}, options?: RequestOptions): Promise<ListResourcesResult> { return this.request('resources/list', params, options) as Promise<ListResourcesResult>; }
  listResourceTemplates(params: { cursor?: string } = {}, options?: RequestOptions): Promise<ListResourceTemplatesResult> { return this.request('resources/templates/list', params, options) as Promise<ListResourceTemplatesResult>; }
  readResource(uri: string, options?: RequestOptions): Promise<ReadResourceResult> { return this.request('resources/read', { uri }, options) as Promise<ReadResourceResult>; }
  listPrompts(params: { cursor?: string } = {}, options?: RequestOptions): Promise<ListPromptsResult> { return this.request('prompts/list', params, options) as Promise<ListPromptsResult>; }
  getPrompt(name: string, args: Record<string, string> = {}, options?: RequestOptions): Promise<GetPromptResult> { return this.request('prompts/get', { name, arguments: args }, options) as Promise<GetPromptResult>; }
  complete(ref: Record<string, unknown>, argument: { name: string; value: string }, options?: RequestOptions): Promise<CompleteResult> { return this.request('completion/complete', { ref, argument }, options) as Promise<CompleteResult>; }

  /** Closes the transport: every pending call rejects, the server process or session is released. */
  async close(): Promise<void> {
    // Cancels already decided go out first (bounded: a wedged server must not hold close() up).
    if (this.#cancelling.size > 0) {
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([Promise.allSettled([...this.#cancelling]), new Promise((r) => { timer = setTimeout(r, 1000); })]);
      clearTimeout(timer);
    }
    await this.#transport.close();
  }
}

function reasonOf(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'cancelled' : String(reason);
}
