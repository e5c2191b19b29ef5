import { CancelledError } from '../errors.js';
import type { Registry, TrackHandle } from '../registry/index.js';
import { validRequestId } from '../registry/index.js';
import { requestKilledChannel, requestStopChannel } from '../telemetry/channels.js';
import { Counter } from '../telemetry/counters.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { ToolContext, isInputRequired, kLogLevels } from '../tools/context.js';
import type { ClientRequester, InputRequired, ListKind, LogSink, ProgressSink, RequestInput } from '../tools/context.js';
import { threadId } from 'node:worker_threads';
import { RequestStateSealer } from './request-state.js';
import type { Catalog } from '../catalog/catalog.js';
import { toPromptResult } from '../catalog/prompts.js';
import type { Prompt } from '../catalog/prompts.js';
import { toContents } from '../catalog/resources.js';
import type { Resource, ResourceTemplate } from '../catalog/resources.js';
import { Refusal, checkArguments, errorText, toToolResult } from '../tools/define.js';
import type { CallToolResult, Tool, ToolOutput } from '../tools/define.js';
import type { ToolPool } from '../tools/pool.js';
import {
  ErrorCode, ProtocolError, errorBody, kLegacyVersions, kMetaClientCapabilities, kMetaServerInfo, kMetaSubscriptionId, kModernVersion, notificationBody, resultBody,
} from './wire.js';
import type { JsonRpcId } from './wire.js';

export type Era = 'legacy' | 'modern';

/** Who is asking, as the transport worked it out. */
export interface RequestInfo {
  readonly era: Era;
  /** The protocol revision of this request (modern: from _meta; legacy: negotiated or assumed). */
  readonly version: string;
  /** Registry scope: session > principal > ip. */
  readonly scope: string;
  /**
   * Least severe log level the client wants (an index into kLogLevels), or undefined for none
   * (2026-07-28 without _meta logLevel).
   */
  readonly logLevel: number | undefined;
  /** Legacy logging/setLevel: where the session keeps its level. */
  readonly setLogLevel?: ((level: number) => void) | undefined;
  /** Legacy: the capabilities the client declared at initialize (kept with its session). */
  readonly clientCapabilities?: Record<string, unknown> | undefined;
}

/** A JSON-RPC response the client sent to one of our requests. */
export interface ClientResponse {
  readonly id: unknown;
  readonly result: unknown;
  readonly error: unknown;
}

/** Longest response text relayed between threads (a client's answer to one of our requests). */
const kMaxRelayedResponse = 1024 * 1024;

/** The output side of one request, provided by the transport (HTTP exchange, stdio line writer). */
export interface Reply {
  /** Whether notifications can reach the client before the response (an SSE stream, stdio). */
  readonly canStream: boolean;
  /**
   * A message for the client before the response: a notification related to this request, or a
   * request to the client. `kind` tells a transport with a slow reader what it may coalesce
   * (progress: only the newest matters) or drop (log messages); everything else must arrive.
   */
  notify(json: string, kind?: NotifyKind): void;
  /**
   * True while the transport sheds load for a slow reader (then `holdProgress` and `dropLog` are
   * there): the engine then skips serialising what would be coalesced or dropped anyway.
   */
  readonly congested?: boolean;
  /** While congested: the newest progress params (the transport serialises them when there is room). */
  holdProgress?(params: Record<string, unknown>): void;
  /** While congested: a log message was dropped (counted). */
  dropLog?(): void;
  /** The final JSON-RPC response. `httpStatus` for transports that have one. */
  respond(json: string, httpStatus: number): void;
  /** The request was cancelled: end the exchange without a JSON-RPC response. */
  cancelled(): void;
  /** Refused because the in-flight table is full (HTTP: 503 + Retry-After). */
  busy(id: JsonRpcId): void;
  /**
   * The request was released (untracked), whatever its outcome, exactly once: after a response, a
   * cancel or a kill, and also after `busy` (then nothing was tracked).
   */
  released?(): void;
}

/** What a message sent before the response is, for a transport that must shed load for a slow reader. */
export type NotifyKind = 'progress' | 'log' | 'other';

/** A request in progress, as the transport sees it. */
export interface Running {
  /** The client went away (modern era: that is the cancellation). Nothing more will be written. */
  clientGone(reason: string): void;
}

export type NotificationOutcome =
  | { readonly ok: true }
  | { readonly ok: false; readonly body: string; readonly httpStatus: number };

export interface EngineConfig {
  readonly registry: Registry;
  readonly counters: ServerCounters;
  readonly catalog: Catalog;
  readonly serverInfo: { readonly name: string; readonly version: string };
  readonly instructions?: string | undefined;
  /** Runs `pool: true` tools; absent when no tool needs it. */
  readonly pool?: ToolPool | undefined;
  /** How long a cancelled request's tool may keep running before it is killed. */
  readonly streamCancelTimeoutMs: number;
  /** Where refusals worth an operator's attention go. */
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /** Key that seals 2026-07-28 requestState (the same in every thread of a server). */
  readonly stateKey: Uint8Array;
  /**
   * Hands a response to the thread whose request it answers (the client may POST it to any worker).
   * Absent: single-thread transports.
   */
  readonly forwardResponse?: ((threadId: number, response: string, scope: string) => void) | undefined;
  /** Tells the other threads' engines that a list changed (HTTP workers: through the supervisor). */
  readonly broadcastListChanged?: ((kind: ListKind) => void) | undefined;
}

/** An open 2026-07-28 subscriptions/listen stream. */
interface Listener {
  readonly run: Run;
  readonly id: JsonRpcId;
  readonly kinds: ReadonlySet<ListKind>;
  end(): void;
}

interface PendingClientRequest {
  resolve(result: unknown): void;
  reject(error: Error): void;
  readonly scope: string;
}

type Handler = (run: Run, params: Record<string, unknown> | undefined) => unknown;

const kAccepted: NotificationOutcome = Object.freeze({ ok: true });
const kCacheTtlMs = 60_000;
/** Items per page of a list result; the cursor is the next offset, opaque to clients. */
const kPageSize = 100;

/**
 * The protocol core: method dispatch, request tracking and cancellation, for every transport.
 * It never touches a socket: transports give it a `Reply` and call `clientGone` when theirs goes.
 */
export class Engine {
  readonly config: EngineConfig;
  readonly #tools = new Map<string, Tool>();
  readonly #resources = new Map<string, Resource>();
  readonly #prompts = new Map<string, Prompt>();
  readonly #templates: readonly ResourceTemplate[];
  readonly #legacy = new Map<string, Handler>();
  readonly #modern = new Map<string, Handler>();
  readonly #toolList: readonly Record<string, unknown>[];
  readonly #resourceList: readonly Record<string, unknown>[];
  readonly #templateList: readonly Record<string, unknown>[];
  readonly #promptList: readonly Record<string, unknown>[];
  readonly #capabilities: Record<string, unknown>;
  readonly #modernCapabilities: Record<string, unknown>;
  readonly sealer: RequestStateSealer;
  /** `"resultType":"complete","_meta":{serverInfo}}`: the end of every plain modern result. */
  readonly #modernTail: string;
  /** Requests sent to clients, awaiting their responses. Ids name this thread: `s<threadId>-<n>`. */
  readonly #pending = new Map<string, PendingClientRequest>();
  #nextRequest = 0;
  readonly #listeners = new Set<Listener>();
  /** Runs whose handler went async and has not settled (shutdown cancels them). Sync runs never enter. */
  readonly #running = new Set<Run>();

  constructor(config: EngineConfig) {
    this.config = config;
    this.sealer = new RequestStateSealer(config.stateKey);
    this.#modernTail = `"resultType":"complete","_meta":${JSON.stringify({ [kMetaServerInfo]: config.serverInfo })}}`;
    const { catalog } = config;
    for (const tool of catalog.tools) this.#tools.set(tool.name, tool);
    for (const r of catalog.resources) this.#resources.set(r.uri, r);
    for (const p of catalog.prompts) this.#prompts.set(p.name, p);
    this.#templates = catalog.templates;
    const pick = (o: object, keys: string[]) => Object.fromEntries(keys.filter((k) => (o as Record<string, unknown>)[k] !== undefined).map((k) => [k, (o as Record<string, unknown>)[k]]));
    this.#resourceList = catalog.resources.map((r) => pick(r, ['uri', 'name', 'title', 'description', 'mimeType']));
    this.#templateList = catalog.templates.map((t) => pick(t, ['uriTemplate', 'name', 'title', 'description', 'mimeType']));
    this.#promptList = catalog.prompts.map((p) => pick(p, ['name', 'title', 'description', 'arguments']));
    this.#capabilities = {
      tools: { listChanged: false },
      ...(catalog.resources.length + catalog.templates.length > 0 ? { resources: { subscribe: true, listChanged: false } } : {}),
      ...(catalog.prompts.length > 0 ? { prompts: { listChanged: false } } : {}),
      completions: {},
      logging: {},
    };
    // 2026-07-28: list changes reach subscriptions/listen streams (legacy has no stream to carry them);
    // resource subscriptions are not offered.
    this.#modernCapabilities = {
      ...this.#capabilities,
      tools: { listChanged: true },
      ...(this.#capabilities.resources !== undefined ? { resources: { listChanged: true } } : {}),
      ...(this.#capabilities.prompts !== undefined ? { prompts: { listChanged: true } } : {}),
    };
    this.#toolList = catalog.tools.map((t) => {
      const entry: Record<string, unknown> = { name: t.name, description: t.description, inputSchema: t.inputSchema };
      if (t.title !== undefined) entry.title = t.title;
      if (t.outputSchema !== undefined) entry.outputSchema = t.outputSchema;
      if (t.annotations !== undefined) entry.annotations = t.annotations;
      return entry;
    });
    const common: Array<[string, Handler]> = [
      ['tools/list', (run, params) => this.#page(run, params, 'tools', this.#toolList)],
      ['tools/call', (run, params) => this.#callTool(run, params)],
      ['resources/list', (run, params) => this.#page(run, params, 'resources', this.#resourceList)],
      ['resources/templates/list', (run, params) => this.#page(run, params, 'resourceTemplates', this.#templateList)],
      ['resources/read', (run, params) => this.#readResource(run, params)],
      ['prompts/list', (run, params) => this.#page(run, params, 'prompts', this.#promptList)],
      ['prompts/get', (run, params) => this.#getPrompt(run, params)],
      ['completion/complete', (_run, params) => this.#complete(params)],
    ];
    for (const [name, handler] of common) {
      this.#legacy.set(name, handler);
      this.#modern.set(name, handler);
    }
    this.#legacy.set('initialize', (_run, params) => this.#initialize(params));
    this.#legacy.set('ping', () => ({}));
    this.#legacy.set('resources/subscribe', (_run, params) => this.#subscribe(params));
    this.#legacy.set('resources/unsubscribe', (_run, params) => this.#subscribe(params));
    this.#legacy.set('logging/setLevel', (run, params) => this.#setLevel(run, params));
    const discover = this.#discoverResult();
    this.#modern.set('server/discover', () => discover);
    this.#modern.set('subscriptions/listen', (run, params) => this.#listen(run, params));
  }

  /** True when the era implements the method (2026-07-28 answers 404 otherwise). */
  implements(era: Era, method: string): boolean {
    return (era === 'modern' ? this.#modern : this.#legacy).has(method);
  }

  /** Serves one request. Returns a handle for the transport, or undefined if it already ended. */
  handleRequest(id: JsonRpcId, method: string, params: Record<string, unknown> | undefined, info: RequestInfo, reply: Reply): Running | undefined {
    const { registry, counters } = this.config;
    counters.add(Counter.Requests);
    const handle = registry.track(id, info.scope);
    if (!handle.ok) {
      counters.add(Counter.Busy);
      reply.busy(id);
      reply.released?.();
      return undefined;
    }
    const handler = (info.era === 'modern' ? this.#modern : this.#legacy).get(method);
    const run = new Run(this, id, method, info, reply, handle);
    if (handler === undefined) {
      run.fail(new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${method}`, undefined, info.era === 'modern' ? 404 : 200));
      return undefined;
    }
    run.start(handler, params);
    return run.settled ? undefined : run;
  }

  /** Handles a notification. `notifications/cancelled` is honoured only for requests in flight in `scope`. */
  handleNotification(method: string, params: unknown, info: RequestInfo): NotificationOutcome {
    this.config.counters.add(Counter.Notifications);
    if (method !== 'notifications/cancelled') return kAccepted;
    if (params === undefined) return kAccepted;
    if (params === null || typeof params !== 'object' || Array.isArray(params)) {
      return { ok: false, httpStatus: 400, body: errorBody(null, ErrorCode.InvalidParams, 'notifications/cancelled requires a params object') };
    }
    const { requestId, reason } = params as { requestId?: unknown; reason?: unknown };
    if (requestId === null || requestId === undefined) return kAccepted;
    if (!validRequestId(requestId)) {
      return { ok: false, httpStatus: 400, body: errorBody(null, ErrorCode.InvalidParams, 'notifications/cancelled needs a string or integer requestId of at most 256 bytes') };
    }
    const { registry } = this.config;
    // Only a request in flight in the caller's own scope can be cancelled: anything else is ignored.
    if (!registry.inFlight(requestId, info.scope)) return kAccepted;
    const result = registry.cancel(requestId, reason, info.scope);
    if (result.ok) return kAccepted;
    this.config.log('warn', `sluice: cancellation refused for scope ${JSON.stringify(info.scope)}: ${result.error}`);
    return {
      ok: false,
      httpStatus: 429,
      body: errorBody(null, ErrorCode.CancellationLimitReached, 'Too many outstanding cancellations', { reason: result.error }),
    };
  }

  readonly #failureLog = new LogBudget(10, 60_000);

  /** Logs a handler failure with its stack, at most 10 a minute; the rest are counted and summarised. */
  logFailure(method: string, target: string, error: unknown): void {
    const suppressed = this.#failureLog.take();
    if (suppressed < 0) return;
    const detail = describeFailure(error);
    const name = target === '' ? method : `${method} ${target}`;
    const more = suppressed > 0 ? ` (${suppressed} similar failures not logged in the last minute)` : '';
    this.config.log('warn', `sluice: ${name} failed${more}: ${detail}`);
  }

  /** `listChanged` bound once, for every request's tool context. */
  readonly announceListChanged = (kind: ListKind): void => this.listChanged(kind);

  /**
   * A list changed: notify every listen stream here that asked for it, and (unless this came from
   * another thread) the other threads too.
   */
  listChanged(kind: ListKind, fromElsewhere = false): void {
    const method = `notifications/${kind}/list_changed`;
    for (const listener of this.#listeners) {
      if (!listener.kinds.has(kind)) continue;
      listener.run.reply.notify(notificationBody(method, { _meta: { [kMetaSubscriptionId]: listener.id } }));
    }
    if (!fromElsewhere) this.config.broadcastListChanged?.(kind);
  }

  /**
   * Cancels every request of this engine still running, through the registry (as a client cancel
   * would: polling tools and `ctx.signal` see it, SSE streams end, no response is sent), and arms
   * their kill timers. Returns how many were cancelled. Shutdown calls it when the grace ends.
   */
  cancelAll(reason: string): number {
    let count = 0;
    for (const run of [...this.#running]) if (run.cancelForShutdown(reason)) count++;
    return count;
  }

  /** Requests of this engine still running (async handlers not yet settled). */
  get running(): number {
    return this.#running.size;
  }

  /** @internal Run bookkeeping for cancelAll. */
  trackRunning(run: Run, on: boolean): void {
    if (on) this.#running.add(run);
    else this.#running.delete(run);
  }

  /** Ends every listen stream with its completion result (graceful shutdown). */
  closeListeners(): void {
    for (const listener of [...this.#listeners]) listener.end();
  }

  #listen(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const requested = params?.notifications;
    if (requested === null || typeof requested !== 'object' || Array.isArray(requested)) throw new ProtocolError(ErrorCode.InvalidParams, 'subscriptions/listen needs a notifications object');
    if (!run.reply.canStream) throw new ProtocolError(ErrorCode.InvalidParams, 'subscriptions/listen needs a streamed response (Accept: text/event-stream)');
    const r = requested as Record<string, unknown>;
    const kinds = new Set<ListKind>();
    const honoured: Record<string, unknown> = {};
    if (r.toolsListChanged === true) { kinds.add('tools'); honoured.toolsListChanged = true; }
    if (r.promptsListChanged === true && this.#prompts.size > 0) { kinds.add('prompts'); honoured.promptsListChanged = true; }
    if (r.resourcesListChanged === true && (this.#resources.size > 0 || this.#templates.length > 0)) { kinds.add('resources'); honoured.resourcesListChanged = true; }
    const meta = { [kMetaSubscriptionId]: run.id };
    run.reply.notify(notificationBody('notifications/subscriptions/acknowledged', { _meta: meta, notifications: honoured }));
    return new Promise((resolve) => {
      const listener: Listener = {
        run, id: run.id, kinds,
        end: () => {
          this.#listeners.delete(listener);
          resolve({ _meta: meta });
        },
      };
      this.#listeners.add(listener);
      // The client closing the stream is the end of the subscription (and its cancel).
      run.handle.signal.addEventListener('abort', () => listener.end(), { once: true });
    });
  }

  /** Sends a request to the client of `run` (legacy: on its SSE stream) and waits for the response. */
  requestClient(run: Run, method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = `s${threadId}-${++this.#nextRequest}`;
    return new Promise((resolve, reject) => {
      this.#pending.set(id, { resolve, reject, scope: run.info.scope });
      run.pendingRequests.add(id);
      run.reply.notify(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`);
    });
  }

  /** A relayed response (JSON text from another thread). */
  handleRelayedResponse(text: string, scope: string): void {
    let response: ClientResponse;
    try {
      response = JSON.parse(text) as ClientResponse;
    } catch {
      return;
    }
    if (response !== null && typeof response === 'object') this.handleResponse(response, scope);
  }

  /** Drops a request that will never be answered (its run ended). */
  abandonClientRequest(id: string, error: Error): void {
    const pending = this.#pending.get(id);
    if (pending === undefined) return;
    this.#pending.delete(id);
    pending.reject(error);
  }

  /**
   * A response the client POSTed (or wrote on stdio): settles our waiting request if it is this
   * thread's and the sender's scope is the one we asked; forwards it if another thread asked.
   */
  handleResponse(response: ClientResponse, scope: string): void {
    const id = response.id;
    if (typeof id !== 'string') return;
    const m = /^s(\d+)-\d+$/.exec(id);
    if (m === null) return;
    const owner = Number(m[1]);
    if (owner !== threadId) {
      // Relayed as bounded JSON text: a hostile answer (say, arrays nested thousands deep) must not
      // become a structured clone another thread fails to handle.
      let text: string;
      try {
        text = JSON.stringify({ id, result: response.result, error: response.error });
      } catch {
        return; // too deep to serialise: dropped, as any malformed answer is
      }
      if (text.length <= kMaxRelayedResponse) this.config.forwardResponse?.(owner, text, scope);
      return;
    }
    const pending = this.#pending.get(id);
    if (pending === undefined || pending.scope !== scope) return; // unknown, late, or someone else's
    this.#pending.delete(id);
    if (response.error !== undefined) {
      const e = response.error as { code?: unknown; message?: unknown };
      pending.reject(new ProtocolError(typeof e?.code === 'number' ? e.code : ErrorCode.InternalError, typeof e?.message === 'string' ? e.message : 'the client answered with an error'));
    } else {
      pending.resolve(response.result);
    }
  }

  /** Result decoration the modern era requires on every result (and the shape of an input-required one). */
  /**
   * The JSON of a request's result as the era wants it: 2026-07-28 results carry `resultType` and
   * the server's info in `_meta`. The common modern case (no `_meta` of its own) appends a tail
   * serialised once, instead of copying the result into a new object on every request.
   */
  resultJson(run: Run, result: Record<string, unknown>): string {
    if (isInputRequired(result)) {
      if (run.info.era !== 'modern') throw new ProtocolError(ErrorCode.InternalError, 'an input-required result needs the 2026-07-28 protocol');
      const out: Record<string, unknown> = { resultType: 'input_required', inputRequests: result.inputRequests };
      if (result.state !== undefined) out.requestState = this.sealer.seal(result.state, run.method, run.target);
      return JSON.stringify({ ...out, _meta: { [kMetaServerInfo]: this.config.serverInfo } });
    }
    if (run.info.era !== 'modern') return JSON.stringify(result);
    if (result._meta === undefined && result.resultType === undefined) {
      const json = JSON.stringify(result);
      return json === '{}' ? `{${this.#modernTail}` : `${json.slice(0, -1)},${this.#modernTail}`;
    }
    const meta = (result._meta !== null && typeof result._meta === 'object' ? result._meta : {}) as Record<string, unknown>;
    return JSON.stringify({ ...result, resultType: 'complete', _meta: { ...meta, [kMetaServerInfo]: this.config.serverInfo } });
  }

  #initialize(params: Record<string, unknown> | undefined): Record<string, unknown> {
    const requested = params?.protocolVersion;
    const version = typeof requested === 'string' && (kLegacyVersions as readonly string[]).includes(requested) ? requested : kLegacyVersions[0];
    const result: Record<string, unknown> = {
      protocolVersion: version,
      capabilities: this.#capabilities,
      serverInfo: this.config.serverInfo,
    };
    if (this.config.instructions !== undefined) result.instructions = this.config.instructions;
    return result;
  }

  /** The server/discover result: fixed for the engine's life, so built once (never mutated). */
  #discoverResult(): Record<string, unknown> {
    const result: Record<string, unknown> = {
      supportedVersions: [kModernVersion, ...kLegacyVersions],
      capabilities: this.#modernCapabilities,
      ttlMs: kCacheTtlMs,
      cacheScope: 'public',
    };
    if (this.config.instructions !== undefined) result.instructions = this.config.instructions;
    return result;
  }

  /** One page of a list, with an opaque cursor to the next; modern results carry caching hints. */
  #page(run: Run, params: Record<string, unknown> | undefined, key: string, all: readonly Record<string, unknown>[]): Record<string, unknown> {
    let offset = 0;
    const cursor = params?.cursor;
    if (cursor !== undefined) {
      const decoded = typeof cursor === 'string' && /^[A-Za-z0-9_-]{1,16}$/.test(cursor) ? Number(Buffer.from(cursor, 'base64url').toString('latin1').replace(/^o/, '')) : NaN;
      if (!Number.isSafeInteger(decoded) || decoded < 0 || decoded > all.length) throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
      offset = decoded;
    }
    const result: Record<string, unknown> = { [key]: offset === 0 && all.length <= kPageSize ? all : all.slice(offset, offset + kPageSize) };
    if (offset + kPageSize < all.length) result.nextCursor = Buffer.from(`o${offset + kPageSize}`, 'latin1').toString('base64url');
    return run.info.era === 'modern' ? withCaching(result) : result;
  }

  async #readResource(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const uri = params?.uri;
    if (typeof uri !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'resources/read needs a uri');
    run.target = uri;
    const ctx = run.context(this.#progressSink(run, params), this.#input(run, params));
    const fixed = this.#resources.get(uri);
    let contents;
    if (fixed !== undefined) {
      const output = await fixed.read(ctx);
      if (isInputRequired(output)) return output as unknown as Record<string, unknown>;
      contents = toContents(uri, fixed.mimeType, output);
    } else {
      let found: ResourceTemplate | undefined;
      let match: RegExpExecArray | null = null;
      for (const t of this.#templates) {
        match = t.pattern.exec(uri);
        if (match !== null) { found = t; break; }
      }
      if (found === undefined || match === null) {
        throw run.info.era === 'modern'
          ? new ProtocolError(ErrorCode.InvalidParams, 'Resource not found', { uri })
          : new ProtocolError(ErrorCode.ResourceNotFound, 'Resource not found', { uri });
      }
      const vars: Record<string, string> = {};
      for (let i = 0; i < found.variables.length; i++) {
        const raw = match[i + 1];
        let value: string;
        try {
          value = decodeURIComponent(raw);
        } catch {
          // Client input (`users://%/profile`): a bad percent-encoding is the client's error, not ours.
          throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid resource URI: malformed percent-encoding', { uri });
        }
        vars[found.variables[i]] = value;
      }
      const output = await found.read(uri, vars, ctx);
      if (isInputRequired(output)) return output as unknown as Record<string, unknown>;
      contents = toContents(uri, found.mimeType, output);
    }
    const result = { contents };
    return run.info.era === 'modern' ? withCaching(result) : result;
  }

  async #getPrompt(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const name = params?.name;
    if (typeof name !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'prompts/get needs a prompt name');
    const prompt = this.#prompts.get(name);
    if (prompt === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${name}`);
    const raw = params?.arguments ?? {};
    if (raw === null || typeof raw !== 'object' || Array.isArray(raw)) throw new ProtocolError(ErrorCode.InvalidParams, 'arguments must be an object');
    const args: Record<string, string> = {};
    for (const [k, v] of Object.entries(raw as Record<string, unknown>)) {
      if (typeof v !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, `argument ${k} must be a string`);
      args[k] = v;
    }
    for (const a of prompt.arguments ?? []) {
      if (a.required === true && args[a.name] === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Missing required argument: ${a.name}`);
    }
    run.target = name;
    const ctx = run.context(this.#progressSink(run, params), this.#input(run, params));
    return { ...toPromptResult(await prompt.get(args, ctx)) } as Record<string, unknown>;
  }

  async #complete(params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const ref = params?.ref as Record<string, unknown> | undefined;
    const argument = params?.argument as Record<string, unknown> | undefined;
    if (ref === null || typeof ref !== 'object' || argument === null || typeof argument !== 'object' || typeof argument.name !== 'string' || typeof argument.value !== 'string') {
      throw new ProtocolError(ErrorCode.InvalidParams, 'completion/complete needs ref and argument {name, value}');
    }
    const context = ((params?.context as { arguments?: unknown } | undefined)?.arguments ?? {}) as Record<string, string>;
    let completer: ((value: string, context: Record<string, string>) => string[] | Promise<string[]>) | undefined;
    if (ref.type === 'ref/prompt' && typeof ref.name === 'string') {
      const prompt = this.#prompts.get(ref.name);
      if (prompt === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown prompt: ${ref.name}`);
      completer = prompt.complete?.[argument.name];
    } else if (ref.type === 'ref/resource' && typeof ref.uri === 'string') {
      const template = this.#templates.find((t) => t.uriTemplate === ref.uri);
      if (template === undefined && !this.#resources.has(ref.uri)) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown resource: ${ref.uri}`);
      completer = template?.complete?.[argument.name];
    } else {
      throw new ProtocolError(ErrorCode.InvalidParams, 'ref must be ref/prompt or ref/resource');
    }
    const values = completer === undefined ? [] : (await completer(argument.value, context)).map(String);
    return { completion: { values: values.slice(0, 100), total: values.length, hasMore: values.length > 100 } };
  }

  /** Progress for this request, if the client gave a token and can receive notifications. */
  #progressSink(run: Run, params: Record<string, unknown> | undefined): ProgressSink | undefined {
    const token = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
    return (typeof token === 'string' || typeof token === 'number') && run.reply.canStream ? run.progressSink(token) : undefined;
  }

  /**
   * What a 2026-07-28 request carried for a multi-round exchange; a requestState that fails its
   * integrity check is refused (-32602). Legacy requests carry only the session's capabilities.
   */
  #input(run: Run, params: Record<string, unknown> | undefined): RequestInput {
    if (run.info.era !== 'modern') return { clientCapabilities: run.info.clientCapabilities, inputResponses: undefined, requestState: undefined };
    const meta = params?._meta as Record<string, unknown> | undefined;
    const capabilities = meta?.[kMetaClientCapabilities] as Record<string, unknown> | undefined;
    const responses = params?.inputResponses;
    if (responses !== undefined && (responses === null || typeof responses !== 'object' || Array.isArray(responses))) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'inputResponses must be an object');
    }
    let state: unknown;
    if (params?.requestState !== undefined) {
      const opened = this.sealer.open(params.requestState, run.method, run.target);
      if (!opened.ok) throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid requestState: integrity check failed');
      state = opened.state;
    }
    return { clientCapabilities: capabilities, inputResponses: responses as Record<string, unknown> | undefined, requestState: state };
  }

  #subscribe(params: Record<string, unknown> | undefined): Record<string, unknown> {
    if (typeof params?.uri !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'needs a uri');
    // Accepted; resources here do not change, so there is nothing to notify about.
    return {};
  }

  #setLevel(run: Run, params: Record<string, unknown> | undefined): Record<string, unknown> {
    const level = kLogLevels.indexOf(params?.level as (typeof kLogLevels)[number]);
    if (level < 0) throw new ProtocolError(ErrorCode.InvalidParams, `level must be one of ${kLogLevels.join(', ')}`);
    run.info.setLogLevel?.(level);
    return {};
  }

  #callTool(run: Run, params: Record<string, unknown> | undefined): CallToolResult | InputRequired | Promise<CallToolResult | InputRequired> {
    const name = params?.name;
    if (typeof name !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'tools/call needs a tool name');
    const tool = this.#tools.get(name);
    if (tool === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    run.target = name;
    const input = this.#input(run, params);
    if (tool.requires !== undefined) {
      const missing = Object.fromEntries(Object.entries(tool.requires).filter(([cap]) => input.clientCapabilities?.[cap] === undefined));
      if (Object.keys(missing).length > 0) {
        throw new ProtocolError(ErrorCode.MissingRequiredClientCapability, 'Missing required client capability', { requiredCapabilities: missing }, 400);
      }
    }
    const args = params?.arguments ?? {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ProtocolError(ErrorCode.InvalidParams, 'arguments must be an object');
    // Compiled once by defineTool; an async Standard Schema comes back here with its parsed value.
    const checked = (params as Record<symbol, unknown>)[kCheckedArguments] as Record<string, unknown> | undefined ?? checkArguments(tool, args as Record<string, unknown>);
    if (checked instanceof Refusal) return checked.result();
    if (checked instanceof Promise) {
      return checked.then((value) => value instanceof Refusal ? value.result() : this.#callTool(run, { ...params, [kCheckedArguments]: value }));
    }
    const sink = this.#progressSink(run, params);
    if (tool.pool === true) {
      const pool = this.config.pool;
      if (pool === undefined) throw new ProtocolError(ErrorCode.InternalError, `tool ${name} runs in the pool, but the server has no pool`);
      // The raw arguments: the pool thread checks them again with its own copy of the tool, so a
      // Standard Schema's parsed value (which need not survive structured cloning) is made there.
      return run.runInPool(pool, tool.name, args as Record<string, unknown>, sink);
    }
    const ctx = run.context(sink, input);
    let output: ToolOutput | Promise<ToolOutput>;
    try {
      output = tool.handler(checked, ctx);
    } catch (error) {
      return this.#toolFailed(run, name, error);
    }
    return output instanceof Promise ? output.then((o) => toToolResult(tool, o), (error: unknown) => this.#toolFailed(run, name, error)) : toToolResult(tool, output);
  }

  readonly #toolFailureLog = new LogBudget(20, 60_000);

  /**
   * A tool threw: the client gets `isError` content, the operator a log line naming the tool (warn,
   * at most 20 a minute per thread). A cancelled tool that stopped by throwing (its CancelledError,
   * or the AbortError of something it gave `ctx.signal`) is not a failure.
   */
  #toolFailed(run: Run, name: string, error: unknown): CallToolResult {
    const result = toolError(error);
    if (!(error instanceof CancelledError) && !run.handle.cancelled) {
      const dropped = this.#toolFailureLog.take();
      if (dropped >= 0) {
        const more = dropped > 0 ? ` (${dropped} similar failures not logged in the last minute)` : '';
        this.config.log('warn', `sluice: tool ${name} threw${more}: ${describeFailure(error)}`);
      }
    }
    return result;
  }
}

/** A rate limit for log lines: `take()` is -1 when over budget, else how many were dropped since the last line. */
class LogBudget {
  readonly #max: number;
  readonly #windowMs: number;
  #windowStart = 0;
  #used = 0;
  #dropped = 0;

  constructor(max: number, windowMs: number) {
    this.#max = max;
    this.#windowMs = windowMs;
  }

  take(): number {
    const now = Date.now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now;
      this.#used = 0;
    }
    if (this.#used >= this.#max) {
      this.#dropped++;
      return -1;
    }
    this.#used++;
    const dropped = this.#dropped;
    this.#dropped = 0;
    return dropped;
  }
}

/** 2026-07-28 caching hints on a complete list or read result. */
function withCaching(result: Record<string, unknown>): Record<string, unknown> {
  return { ...result, ttlMs: kCacheTtlMs, cacheScope: 'public' };
}

/** tools/call params key (never on the wire) carrying arguments an async Standard Schema already parsed. */
const kCheckedArguments = Symbol('sluice.checkedArguments');

/** A thrown error becomes isError content; protocol errors stay protocol errors. */
/** What a log line says of a thrown value: an Error's stack, else a safe rendering. Never throws. */
function describeFailure(error: unknown): string {
  try {
    if (error instanceof Error) return error.stack ?? error.message;
  } catch {
    // a throwing stack or message getter: rendered below
  }
  return errorText(error);
}

export function toolError(error: unknown): CallToolResult {
  if (error instanceof ProtocolError) throw error;
  return { content: [{ type: 'text', text: errorText(error) }], isError: true };
}


/**
 * One request from dispatch to release. Methods live on the prototype, so a request allocates one
 * object, not a closure per step; the cancellation watcher is armed only if the handler goes async.
 */
class Run implements Running {
  readonly engine: Engine;
  readonly id: JsonRpcId;
  readonly method: string;
  readonly info: RequestInfo;
  readonly reply: Reply;
  readonly handle: TrackHandle;
  readonly started = performance.now();
  ctx: ToolContext | undefined;
  /** What the request names (tool, prompt, resource URI): requestState is sealed to it. */
  target = '';
  /** Ids of requests this run sent to the client and still waits on. */
  readonly pendingRequests = new Set<string>();
  /** Released: untracked and cleared. */
  settled = false;
  /** Nothing more may be written to the reply. */
  ended = false;
  #kill: ReturnType<typeof setTimeout> | undefined;
  #poolAbort: AbortController | undefined;

  constructor(engine: Engine, id: JsonRpcId, method: string, info: RequestInfo, reply: Reply, handle: TrackHandle) {
    this.engine = engine;
    this.id = id;
    this.method = method;
    this.info = info;
    this.reply = reply;
    this.handle = handle;
  }

  start(handler: Handler, params: Record<string, unknown> | undefined): void {
    let out: unknown;
    try {
      out = handler(this, params);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (out instanceof Promise) {
      this.engine.trackRunning(this, true);
      this.handle.signal.addEventListener('abort', () => this.#cancelled(), { once: true });
      out.then((result) => this.succeed(result as Record<string, unknown>), (error) => this.fail(error));
    } else {
      this.succeed(out as Record<string, unknown>);
    }
  }

  succeed(result: Record<string, unknown>): void {
    if (!this.ended) {
      let body: string;
      try {
        body = resultBody(this.id, this.engine.resultJson(this, result));
      } catch (error) {
        this.fail(error);
        return;
      }
      this.ended = true;
      if (this.handle.cancelled) this.reply.cancelled();
      else this.reply.respond(body, 200);
    }
    this.#release(this.handle.cancelled ? 'cancelled' : 'ok');
  }

  fail(error: unknown): void {
    if (!this.ended) {
      this.ended = true;
      if (this.handle.cancelled) {
        this.reply.cancelled();
      } else if (error instanceof ProtocolError) {
        this.reply.respond(errorBody(this.id, error.rpcCode, error.message, error.data), error.httpStatus);
      } else {
        // A handler's own failure is a JSON-RPC error for the client (HTTP 200, as any response);
        // the log gets its stack, at a bounded rate so clients cannot flood it.
        this.engine.logFailure(this.method, this.target, error);
        this.reply.respond(errorBody(this.id, ErrorCode.InternalError, 'Internal error'), 200);
      }
    }
    this.#release(this.handle.cancelled ? 'cancelled' : 'error');
  }

  clientGone(reason: string): void {
    if (this.ended || this.settled) return;
    this.ended = true; // the stream is gone: nothing more is written
    this.engine.config.registry.cancelRequest(this.handle, reason);
    this.#abandonClientRequests(this.handle.reason ?? 'cancelled');
    this.#armKill();
  }

  /** Shutdown: cancel through the registry as a client would. False if it had already ended. */
  cancelForShutdown(reason: string): boolean {
    if (this.settled) return false;
    this.engine.config.registry.cancelRequest(this.handle, reason);
    // The abort listener answers and arms the kill timer; a run already cancelled only needs the timer.
    this.#cancelled();
    this.#armKill();
    return true;
  }

  progressSink(token: string | number): ProgressSink {
    return (progress, total, message) => {
      if (this.ended) return;
      const params: Record<string, unknown> = { progressToken: token, progress };
      if (total !== undefined) params.total = total;
      if (message !== undefined) params.message = message;
      const reply = this.reply;
      // A slow reader keeps only the newest progress: hand it over unserialised.
      if (reply.congested === true) reply.holdProgress!(params);
      else reply.notify(notificationBody('notifications/progress', params), 'progress');
    };
  }

  /** The context a handler of this request gets. */
  context(progress: ProgressSink | undefined, input: RequestInput | undefined): ToolContext {
    const ctx = new ToolContext(this.handle, {
      progress, log: this.logSink(), input, requester: this.requester(), listChanged: this.engine.announceListChanged,
    });
    this.ctx = ctx;
    return ctx;
  }

  /** Legacy era over a stream: a way for the handler to ask the client something. */
  requester(): ClientRequester | undefined {
    if (this.info.era !== 'legacy' || !this.reply.canStream) return undefined;
    return (method, params) => {
      if (this.ended) return Promise.reject(new CancelledError('the request has ended'));
      return this.engine.requestClient(this, method, params);
    };
  }

  /** Log messages for this request, filtered by the client's level; undefined when none may be sent. */
  logSink(): LogSink | undefined {
    const threshold = this.info.logLevel;
    if (threshold === undefined || !this.reply.canStream) return undefined;
    return (level, data, logger) => {
      if (this.ended || kLogLevels.indexOf(level) < threshold) return;
      const reply = this.reply;
      if (reply.congested === true) {
        reply.dropLog!(); // a slow reader loses log lines: do not even build them
        return;
      }
      const params: Record<string, unknown> = { level, data };
      if (logger !== undefined) params.logger = logger;
      this.reply.notify(notificationBody('notifications/message', params), 'log');
    };
  }

  runInPool(pool: ToolPool, name: string, args: Record<string, unknown>, sink: ProgressSink | undefined): Promise<CallToolResult> {
    this.#poolAbort = new AbortController();
    return pool.run(name, args, this.handle, sink, this.#poolAbort.signal).catch((error: unknown) => {
      if (this.#poolAbort?.signal.aborted) throw new CancelledError('killed');
      return toolError(error);
    });
  }

  #cancelled(): void {
    if (this.ended || this.settled) return;
    this.ended = true;
    this.reply.cancelled();
    this.#abandonClientRequests(this.handle.reason ?? 'cancelled');
    this.#armKill();
  }

  /** A cancelled request will get no answers from its client: its tool stops waiting for them. */
  /** Rejects the requests this run sent the client that are still unanswered; each only once. */
  #abandonClientRequests(reason: string): void {
    for (const id of this.pendingRequests) this.engine.abandonClientRequest(id, new CancelledError(reason));
    this.pendingRequests.clear();
  }

  #armKill(): void {
    if (this.settled || this.#kill !== undefined) return;
    this.#kill = setTimeout(() => this.#killNow(), this.engine.config.streamCancelTimeoutMs);
    this.#kill.unref();
  }

  #killNow(): void {
    if (this.settled) return;
    this.ctx?.kill();
    this.#poolAbort?.abort(new CancelledError('killed'));
    this.engine.config.counters.add(Counter.Killed);
    this.#release('killed'); // first, so whoever hears of the kill finds the row already gone
    if (requestKilledChannel.hasSubscribers) requestKilledChannel.publish({ requestId: this.id, scope: this.info.scope });
  }

  #release(status: 'ok' | 'error' | 'cancelled' | 'killed'): void {
    if (this.settled) return;
    this.settled = true;
    this.engine.trackRunning(this, false);
    if (this.#kill !== undefined) clearTimeout(this.#kill);
    this.#abandonClientRequests('the request has ended');
    const { registry } = this.engine.config;
    registry.untrack(this.handle);
    registry.clear(this.id, this.info.scope);
    this.reply.released?.();
    if (requestStopChannel.hasSubscribers) {
      requestStopChannel.publish({ method: this.method, durationMs: performance.now() - this.started, status });
    }
  }
}
