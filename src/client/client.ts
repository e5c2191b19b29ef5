import { CancelledError, SluiceError } from '../errors.js';
import { ErrorCode, ProtocolError, kLegacyVersions, kMetaClientCapabilities, kMetaClientInfo, kMetaProtocolVersion, kModernVersion } from '../protocol/wire.js';
import { InsufficientScopeError, SessionExpiredError, UnauthorizedError } from './http.js';
import { checkParamHeaders, kInvalidAnnotations } from './param-headers.js';
import { responseOutcome } from './transport.js';
import type { ClientTransport, JsonRpcMessage } from './transport.js';
import { PageWalk } from './pages.js';
import { Task, kTasksExtension, reasonOf } from './tasks.js';
import { ClientMeter, ClientTracer } from './tracing.js';
import type { InputResponses, ListTasksResult, TaskCallOptions, TaskHandle, TaskInfo, TaskPeer } from './tasks.js';
import type {
  CallToolResult, CompleteResult, GetPromptResult, ListPromptsResult, ListResourcesResult, ListResourceTemplatesResult, ListToolsResult,
  ReadResourceResult, RequestOptions, ResultFields,
} from './types.js';

export type {
  RequestOptions, ResultFields, ObjectSchema, ToolInfo, ListToolsResult, CallToolResult, ResourceInfo, ListResourcesResult,
  ResourceTemplateInfo, ListResourceTemplatesResult, ReadResourceResult, PromptInfo, ListPromptsResult, GetPromptResult, CompleteResult,
} from './types.js';

export interface ClientOptions {
  /** 'auto' (default): server/discover first (2026-07-28), falling back to initialize (legacy). */
  era?: 'auto' | 'legacy' | 'modern';
  clientInfo?: { name: string; version: string };
  /**
   * Client capabilities to declare. Server requests are answered only on a 2025-11-25 task's
   * tasks/result stream, by the task's `onInputRequired`: declare `elicitation` (or `sampling`) for
   * those; otherwise keep it `{}`. (The 2026-07-28 tasks opt-in is added per task request.)
   */
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

/** The longest delay setTimeout holds (2^31 - 1 ms, about 24.8 days). */
const kMaxTimeoutMs = 2 ** 31 - 1;

/**
 * The caller's timeoutMs, refused when setTimeout cannot hold it: it runs NaN, a negative delay or
 * one over 2^31 - 1 ms after 1 ms, which cancelled the call at once. Infinity: none.
 */
function checkedTimeout(options: RequestOptions): void {
  const timeoutMs = options.timeoutMs;
  if (timeoutMs !== undefined && !(timeoutMs >= 0 && (timeoutMs <= kMaxTimeoutMs || timeoutMs === Infinity))) {
    throw new SluiceError('invalid_option', `timeoutMs must be milliseconds from 0 to ${kMaxTimeoutMs}, or Infinity for none; got ${String(timeoutMs)}`);
  }
}

/** What #raw takes besides the caller's options: the tasks opt-in, and answers to server requests. */
interface RawOptions extends RequestOptions {
  /** 2026-07-28: opt in to the tasks extension for this request. */
  tasks?: boolean;
  onRequest?: (message: JsonRpcMessage) => Promise<JsonRpcMessage>;
}

/** The cancel's reason when the caller's onProgress throws or rejects. */
const kProgressCallbackFailed = 'the client\'s progress callback failed';

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
  /** Tools a tools/list named with invalid x-mcp-header annotations: dropped from lists, never called. */
  readonly #dropped = new Set<string>();
  /** A full tools/list in progress for a call the server refused for its Mcp-Param headers (calls share it). */
  #learning: Promise<void> | undefined;
  /** A tools/list has been answered (the transport knows the annotations of the tools it named). */
  #listed = false;
  /** CLIENT spans, when an OpenTelemetry SDK was registered in this thread as the client was made. */
  readonly #tracer = ClientTracer.create();
  readonly #meter = ClientMeter.create();

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
        // A refused token is refused in either era: no fallback to initialize.
        if (era === 'modern' || error instanceof UnauthorizedError || error instanceof InsufficientScopeError) throw error;
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
  request(method: string, params: Record<string, unknown> = {}, options: RequestOptions = {}): Promise<Result> {
    return this.#request(method, params, options);
  }

  async #request(method: string, params: Record<string, unknown>, options: RawOptions): Promise<Result> {
    checkedTimeout(options); // before connecting: a refusal must not leave a connection attempt unwatched
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
    const timeoutMs = options.timeoutMs; // checked where the call came in (checkedTimeout)
    let timer: ReturnType<typeof setTimeout> | undefined;
    const onAbort = () => onCancel(reasonOf(options.signal?.reason));
    options.signal?.addEventListener('abort', onAbort, { once: true });
    if (timeoutMs !== undefined && timeoutMs !== Infinity) timer = setTimeout(() => onCancel(`timed out after ${timeoutMs} ms`), timeoutMs);
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

  #raw(method: string, params: Record<string, unknown>, options: RawOptions): Promise<Result> {
    const id = ++this.#nextId;
    const meta: Record<string, unknown> = { ...(params._meta as Record<string, unknown> | undefined) };
    if (this.#era === 'modern') {
      meta[kMetaProtocolVersion] = kModernVersion;
      meta[kMetaClientCapabilities] = options.tasks === true
        ? { ...this.#capabilities, extensions: { ...(this.#capabilities.extensions as Record<string, unknown> | undefined), [kTasksExtension]: {} } }
        : this.#capabilities;
      meta[kMetaClientInfo] = this.#clientInfo;
    }
    if (options.onProgress !== undefined) meta.progressToken = id;
    const span = this.#tracer?.start(method, params, id, this.#era === 'modern' ? kModernVersion : undefined, meta);
    const startedAt = this.#meter === undefined ? 0 : performance.now();
    const message: JsonRpcMessage = { jsonrpc: '2.0', id, method, params: Object.keys(meta).length > 0 ? { ...params, _meta: meta } : params };
    const cancellable = method !== 'initialize';
    const local = new AbortController();
    let onSent: () => void = () => {};
    const wasSent = new Promise<void>((resolve) => { onSent = resolve; });
    const result = new Promise<Result>((resolve, reject) => {
      let settled = false;
      let cleanup = () => {};
      // `failure`: what the call rejects with instead of the CancelledError (the caller's onProgress threw it).
      const cancel = (reason: string, failure?: unknown) => {
        if (settled) return;
        settled = true;
        cleanup(); // the transport may never settle a cancelled call (stdio drops it): stop watching now
        reject(failure ?? new CancelledError(reason));
        local.abort(reason);
        if (!this.#transport.cancelsByAbort) {
          // Only once the request's bytes are out, so the server never sees the cancel first.
          this.#track(wasSent
            .then(() => this.#transport.notify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: cancelParams(id, reason, span === undefined ? undefined : meta) }))
            .catch(() => {}));
        }
      };
      if (cancellable) cleanup = this.#watch(options, cancel);
      this.#transport.send(message, {
        onSent: () => onSent(),
        onMessage: (m) => {
          if (settled || m.method !== 'notifications/progress') return;
          const p = m.params as { progressToken?: unknown; progress: number; total?: number; message?: string };
          if (p.progressToken !== id || options.onProgress === undefined) return;
          // The caller's callback runs inside the transport's read: what it throws (or its promise
          // rejects with) would escape there, uncaught, and break the connection. It ends the call.
          // The server is told only that it failed: the error's text is the caller's own, not the server's to read.
          try {
            const returned: unknown = options.onProgress({ progress: p.progress, total: p.total, message: p.message });
            if (returned instanceof Promise) returned.catch((error: unknown) => cancel(kProgressCallbackFailed, error));
          } catch (error) {
            cancel(kProgressCallbackFailed, error);
          }
        },
        signal: local.signal,
        ...(options.onRequest === undefined ? {} : { onRequest: options.onRequest }),
      }).then((response) => {
        cleanup();
        if (settled) return; // a late response to a cancelled call: dropped
        settled = true;
        const outcome = responseOutcome(method, response);
        if (outcome instanceof Error) reject(outcome);
        else resolve(outcome as Result);
      }, (error: unknown) => {
        cleanup();
        if (settled) return;
        settled = true;
        // A transport that rejects with a non-Error: the exchange failed in the transport.
        reject(error instanceof Error ? error : new SluiceError('transport_closed', `the transport failed: ${String(error)}`));
      });
    });
    this.#meter?.observe(method, params, startedAt, result);
    return span === undefined ? result : this.#tracer!.settle(span, result);
  }

  // The result types say what a conforming server sends; the client does not re-validate results.
  discover(options?: RequestOptions): Promise<ResultFields> { return this.request('server/discover', {}, options); }
  ping(options?: RequestOptions): Promise<ResultFields> { return this.request('ping', {}, options); }
  /**
   * A page of tools. A tool whose x-mcp-header annotations break the rules (2026-07-28: a header
   * name that is not a token or repeats another, an annotation on a property that is not a string,
   * integer or boolean, or one reached other than through `properties`) is left out, as clients must;
   * `droppedTools` names it, and callTool refuses it.
   */
  async listTools(params: { cursor?: string } = {}, options?: RequestOptions): Promise<ListToolsResult> {
    const result = await this.request('tools/list', params, options) as ListToolsResult;
    this.#listed = true;
    if (!Array.isArray(result.tools)) return result;
    const kept = result.tools.filter((tool) => {
      if (checkParamHeaders(tool?.inputSchema) !== kInvalidAnnotations) {
        if (typeof tool?.name === 'string') this.#dropped.delete(tool.name);
        return true;
      }
      if (typeof tool?.name === 'string') this.#dropped.add(tool.name);
      return false;
    });
    return kept.length === result.tools.length ? result : { ...result, tools: kept };
  }

  /** Tools the lists so far left out for invalid x-mcp-header annotations. */
  get droppedTools(): readonly string[] {
    return [...this.#dropped];
  }
  /**
   * Calls a tool. With `{ task: true }` (TaskCallOptions) the server is asked to run it as a task,
   * and the promise resolves, once the server answered the tools/call, to a TaskHandle whose
   * `result()` gives the tool's result; a server that answered synchronously gives a handle without
   * a task that resolves to that answer. 2026-07-28: the request opts in to the tasks extension;
   * 2025-11-25: it carries `task: { ttl? }`.
   */
  callTool(name: string, args: Record<string, unknown>, options: TaskCallOptions): Promise<TaskHandle>;
  callTool(name: string, args?: Record<string, unknown>, options?: RequestOptions): Promise<CallToolResult>;
  callTool(name: string, args: Record<string, unknown> = {}, options?: RequestOptions | TaskCallOptions): Promise<CallToolResult | TaskHandle> {
    if (options !== undefined && 'task' in options && options.task === true) return this.#callTask(name, args, options);
    return this.#call({ name, arguments: args }, options ?? {}) as Promise<CallToolResult>;
  }

  /**
   * tools/call. 2026-07-28 over HTTP, a tool's x-mcp-header arguments travel in Mcp-Param headers,
   * which the transport learns from tools/list: a call made before any list (or after the tool's
   * annotations changed) is refused with -32020 before the tool runs, so the client lists the
   * tools and retries once, as the official clients do.
   */
  async #call(params: Record<string, unknown> & { name: string }, options: RawOptions): Promise<Result> {
    this.#refuseDropped(params.name);
    try {
      return await this.#request('tools/call', params, options);
    } catch (error) {
      // Another server may word it otherwise: before any list, any -32020 may be the headers.
      const headers = error instanceof ProtocolError && error.rpcCode === ErrorCode.HeaderMismatch && (/mcp-param-/i.test(error.message) || !this.#listed);
      if (!headers || this.#era !== 'modern') throw error;
      if (options.signal?.aborted === true) throw new CancelledError(reasonOf(options.signal.reason));
      this.#learning ??= this.#learnTools(options).finally(() => { this.#learning = undefined; });
      await this.#learning;
      this.#refuseDropped(params.name);
      return this.#request('tools/call', params, options);
    }
  }

  /** Every page of tools/list (bounded; a cursor given twice is invalid_response), so the transport knows each tool's header annotations. */
  async #learnTools(options: RequestOptions): Promise<void> {
    // At most 100 pages: a tool past them is called unlearned, and the server's refusal says so.
    const walk = new PageWalk('tools/list');
    let cursor: string | undefined;
    do {
      const result = await this.listTools(cursor === undefined ? {} : { cursor }, {
        ...(options.signal === undefined ? {} : { signal: options.signal }),
        ...(options.timeoutMs === undefined ? {} : { timeoutMs: options.timeoutMs }),
      });
      cursor = walk.next(result);
    } while (cursor !== undefined && walk.pages < 100);
  }

  #refuseDropped(name: string): void {
    if (this.#dropped.has(name)) {
      throw new SluiceError('invalid_response', `the server lists tool ${name} with invalid x-mcp-header annotations: clients must not call it`);
    }
  }

  async #callTask(name: string, args: Record<string, unknown>, options: TaskCallOptions): Promise<TaskHandle> {
    // One signal for the whole task: the caller's abort or the timeout, from now until the task ends.
    checkedTimeout(options);
    const whole = new AbortController();
    const stop = this.#watch(options, (reason) => whole.abort(reason));
    const release = () => stop();
    try {
      if (whole.signal.aborted) throw new CancelledError(reasonOf(whole.signal.reason));
      await this.#connectFor({ signal: whole.signal });
      const legacy = this.#era === 'legacy';
      const params: Record<string, unknown> = { name, arguments: args };
      if (legacy) params.task = options.ttlMs === undefined ? {} : { ttl: options.ttlMs };
      const answer = await this.#call(params as Record<string, unknown> & { name: string }, {
        signal: whole.signal, tasks: true, ...(options.onProgress === undefined ? {} : { onProgress: options.onProgress }),
      });
      const created = legacy ? answer.task as TaskInfo | undefined : answer.resultType === 'task' ? answer as TaskInfo : undefined;
      const peer: TaskPeer = {
        era: legacy ? 'legacy' : 'modern',
        request: (method, p, o) => this.#request(method, p, { ...o, tasks: true }),
        track: (sending) => this.#track(sending),
      };
      if (created === undefined || typeof created.taskId !== 'string') return new Task(peer, undefined, answer as CallToolResult, options, whole.signal, release);
      return new Task(peer, created, undefined, options, whole.signal, release);
    } catch (error) {
      release();
      throw error;
    }
  }

  #track(sending: Promise<void>): void {
    const tracked = sending.finally(() => this.#cancelling.delete(tracked));
    this.#cancelling.add(tracked);
  }

  /** A task's current state (tasks/get). 2026-07-28 inlines its result, error or input requests. */
  getTask(taskId: string, options?: RequestOptions): Promise<TaskInfo> {
    return this.#request('tasks/get', { taskId }, { ...options, tasks: true }) as Promise<TaskInfo>;
  }

  /**
   * Asks the server to cancel a task (tasks/cancel). Cooperative: read the task to see how it ended.
   * A 2025-11-25 server refuses a task already terminal (RpcError -32602); a 2026-07-28 one acks it.
   */
  async cancelTask(taskId: string, options?: RequestOptions): Promise<void> {
    await this.#request('tasks/cancel', { taskId }, { ...options, tasks: true });
  }

  /** 2026-07-28: answers a task's input requests by key (tasks/update); the server acks. */
  async updateTask(taskId: string, inputResponses: InputResponses, options?: RequestOptions): Promise<void> {
    await this.#request('tasks/update', { taskId, inputResponses }, { ...options, tasks: true });
  }

  /** 2025-11-25 only: a page of the session's tasks (a 2026-07-28 server answers RpcError -32601). */
  listTasks(cursor?: string, options?: RequestOptions): Promise<ListTasksResult> {
    return this.#request('tasks/list', cursor === undefined ? {} : { cursor }, { ...options, tasks: true }) as Promise<ListTasksResult>;
  }
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


/**
 * A cancel's params; with the request's trace context in `_meta` when the request was traced, so
 * the server's span of the cancel joins the request's trace (wherever the cancel lands).
 */
function cancelParams(requestId: number, reason: string, meta: Record<string, unknown> | undefined): Record<string, unknown> {
  if (meta === undefined || typeof meta.traceparent !== 'string') return { requestId, reason };
  const trace: Record<string, unknown> = { traceparent: meta.traceparent };
  if (typeof meta.tracestate === 'string') trace.tracestate = meta.tracestate;
  return { requestId, reason, _meta: trace };
}
