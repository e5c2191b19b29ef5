import { CancelledError, SluiceError } from '../errors.js';
import type { RequestId, TrackHandle } from '../registry/index.js';
import type { AuthInfo } from '../auth/contract.js';

/** Where progress goes: the request's SSE stream, or a port back to it from a pool thread. */
export type ProgressSink = (progress: number, total: number | undefined, message: string | undefined) => void;

/** MCP log levels, least severe first (RFC 5424 order). */
export const kLogLevels = ['debug', 'info', 'notice', 'warning', 'error', 'critical', 'alert', 'emergency'] as const;
export type LogLevel = (typeof kLogLevels)[number];

/** Where log messages go (notifications/message on the request's stream), already filtered by level. */
export type LogSink = (level: LogLevel, data: unknown, logger: string | undefined) => void;

/** What a handler returns to ask the client for input first (2026-07-28 multi-round requests). */
export interface InputRequired {
  readonly kind: 'sluice/input-required';
  /** Keyed requests the client answers: `{ key: { method: 'elicitation/create' | 'sampling/createMessage' | 'roots/list', params } }`. */
  readonly inputRequests: Record<string, { method: string; params?: Record<string, unknown> }>;
  /** State to get back on the retry, sealed against tampering; undefined for none. */
  readonly state: unknown;
}

export function isInputRequired(value: unknown): value is InputRequired {
  return value !== null && typeof value === 'object' && (value as { kind?: unknown }).kind === 'sluice/input-required';
}

/** The capability a client must declare to be asked `method` (elicitation/create, sampling/createMessage, roots/list); undefined for others. */
export function capabilityFor(method: string): 'elicitation' | 'sampling' | 'roots' | undefined {
  return method === 'elicitation/create' ? 'elicitation' : method === 'sampling/createMessage' ? 'sampling' : method === 'roots/list' ? 'roots' : undefined;
}

/** Sends a request to the client on this request's stream (legacy era) and resolves with its result. */
export type ClientRequester = (method: string, params: Record<string, unknown>) => Promise<unknown>;

/** Lists whose change a tool can announce (2026-07-28 subscriptions/listen streams hear of it). */
export type ListKind = 'tools' | 'prompts' | 'resources';

/**
 * Where a context gets its log sink and client requester on first use, instead of being handed
 * them made in advance: most handlers use neither, so most requests then make neither.
 */
export interface ContextHost {
  logSink(): LogSink | undefined;
  requester(): ClientRequester | undefined;
  /** The handler saw its request cancelled (once): `cancelled` read true, or its signal's abort delivered. */
  cancelObserved?(): void;
}

/** What the transport and engine give a context besides the request's row. */
export interface ContextParts {
  readonly progress?: ProgressSink | undefined;
  readonly log?: LogSink | undefined;
  readonly input?: RequestInput | undefined;
  readonly requester?: ClientRequester | undefined;
  /** Makes `log` and `requester` on first use when they are not given. */
  readonly host?: ContextHost | undefined;
  readonly listChanged?: ((kind: ListKind) => void) | undefined;
  /** The verified caller, when the server checks bearer tokens. */
  readonly auth?: AuthInfo | undefined;
}

/** What a 2026-07-28 request carried for a multi-round exchange. */
export interface RequestInput {
  readonly clientCapabilities: Record<string, unknown> | undefined;
  readonly inputResponses: Record<string, unknown> | undefined;
  readonly requestState: unknown;
}

/**
 * What a tool handler gets besides its arguments. `cancelled` is one atomic load of the request's
 * row, valid in the HTTP worker and in a pool thread alike; `signal` fires without polling.
 */
export class ToolContext {
  readonly requestId: RequestId;
  readonly scope: string;
  readonly #handle: TrackHandle;
  readonly #sink: ProgressSink | undefined;
  #log: LogSink | undefined;
  readonly #input: RequestInput | undefined;
  #requester: ClientRequester | undefined;
  readonly #host: ContextHost | undefined;
  #last = -Infinity;
  #killed = false;
  #local: AbortController | undefined;
  #signal: AbortSignal | undefined;
  /** The handler has seen the cancel (reported to the host once). */
  #observed = false;

  readonly #listChanged: ((kind: ListKind) => void) | undefined;
  readonly #auth: AuthInfo | undefined;

  constructor(handle: TrackHandle, parts: ContextParts = {}) {
    this.#handle = handle;
    this.#sink = parts.progress;
    this.#log = parts.log;
    this.#input = parts.input;
    this.#requester = parts.requester;
    this.#host = parts.host;
    this.#listChanged = parts.listChanged;
    this.#auth = parts.auth;
    this.requestId = handle.id;
    this.scope = handle.scope;
  }

  /** True once the request is cancelled (by the client, a disconnect, or a kill). One atomic load. */
  get cancelled(): boolean {
    const cancelled = this.#killed || this.#handle.cancelled;
    if (cancelled && !this.#observed) this.#observe();
    return cancelled;
  }

  /**
   * The request was cancelled and the handler listens on its signal (made before the cancel): its
   * abort is delivered, so the handler has seen it. Called by the run (tracing on only); no
   * listener of its own on the signal, which would change when a handler's abort callbacks run.
   */
  noteSignalled(): void {
    if (this.#signal !== undefined && !this.#observed) this.#observe();
  }

  #observe(): void {
    this.#observed = true;
    if (!this.#killed) this.#host?.cancelObserved?.(); // a kill is the server's doing, not the handler noticing
  }

  /** The canceller's sanitised reason, if any. */
  get reason(): string | undefined {
    return this.#handle.reason;
  }

  throwIfCancelled(): void {
    if (this.cancelled) throw new CancelledError(this.reason);
  }

  /** Aborts when the request is cancelled. Made on first access. */
  get signal(): AbortSignal {
    if (this.#signal === undefined) {
      this.#local = new AbortController();
      if (this.#killed) this.#local.abort(new CancelledError(this.reason ?? 'killed'));
      this.#signal = AbortSignal.any([this.#handle.signal, this.#local.signal]);
    }
    return this.#signal;
  }

  /**
   * Reports progress to the client, if it asked for progress (gave a progress token). Values that
   * do not increase are not sent (the spec requires strictly increasing progress), and nothing is
   * sent once the request is cancelled.
   */
  progress(progress: number, total?: number, message?: string): void {
    if (typeof progress !== 'number' || !Number.isFinite(progress)) throw new SluiceError('invalid_option', 'progress must be a finite number');
    if (total !== undefined && (typeof total !== 'number' || !Number.isFinite(total))) throw new SluiceError('invalid_option', 'total must be a finite number');
    if (this.#sink === undefined || progress <= this.#last || this.cancelled) return;
    this.#last = progress;
    this.#sink(progress, total, typeof message === 'string' ? message : undefined);
  }

  /**
   * Sends a log message (notifications/message) related to this request, if the client's level lets
   * it through (legacy: logging/setLevel; 2026-07-28: the request's _meta logLevel, none without it).
   */
  log(level: LogLevel, data: unknown, logger?: string): void {
    const sink = this.#log ??= this.#host?.logSink();
    if (sink === undefined || this.cancelled) return; // the sink drops unknown levels
    sink(level, data, logger);
  }

  /**
   * The caller's verified token (subject, scopes with the hierarchy applied, claims, expiry) when
   * the server checks bearer tokens (`auth`); undefined otherwise (stdio, no `auth`). Pool tools get a copy.
   */
  get auth(): AuthInfo | undefined {
    return this.#auth;
  }

  /** The client's declared capabilities (2026-07-28: from the request's _meta; legacy: at initialize, undefined without a session). */
  get clientCapabilities(): Record<string, unknown> | undefined {
    return this.#input?.clientCapabilities;
  }

  /** Answers to the input requests of the previous round, by key (2026-07-28). */
  get inputResponses(): Record<string, unknown> | undefined {
    return this.#input?.inputResponses;
  }

  /** The state returned by the previous round's `inputRequired`, verified untampered. */
  get requestState(): unknown {
    return this.#input?.requestState;
  }

  /**
   * Returns (for the handler to return) an input-required result: the client answers `inputRequests`
   * and retries with the answers and `state`. Only tools/call, prompts/get and resources/read. In the
   * legacy era Sluice asks the client mid-call itself and runs the handler again with the answers
   * (protocol/legacy-input.ts), so a handler written this way serves both eras.
   */
  inputRequired(inputRequests: InputRequired['inputRequests'], state?: unknown): InputRequired {
    return { kind: 'sluice/input-required', inputRequests, state };
  }

  /**
   * Asks the client something mid-request (legacy era: sampling/createMessage, elicitation/create,
   * roots/list) over this request's SSE stream, and resolves with the client's result. Rejects when
   * the client did not declare the capability, answers with an error, or the request ends first.
   * In the 2026-07-28 era, return `inputRequired(...)` instead (which works in both eras).
   */
  request(method: string, params: Record<string, unknown> = {}): Promise<unknown> {
    const requester = this.#requester ??= this.#host?.requester();
    if (requester === undefined) return Promise.reject(new SluiceError('invalid_option', 'this request cannot carry requests to the client (2026-07-28: use inputRequired; pool tools: not supported)'));
    const capability = capabilityFor(method);
    if (capability !== undefined && this.#input?.clientCapabilities?.[capability] === undefined) {
      return Promise.reject(new SluiceError('missing_client_capability', `the client did not declare the ${capability} capability`));
    }
    if (this.cancelled) return Promise.reject(new CancelledError(this.reason));
    return requester(method, params);
  }

  /**
   * Announces that a list (tools, prompts, resources) changed: every open 2026-07-28
   * subscriptions/listen stream that asked for it, on every worker, gets the list_changed notification.
   */
  listChanged(kind: ListKind): void {
    this.#listChanged?.(kind);
  }

  /** The server gave up on this request: it is cancelled for good, and its signal aborts. */
  kill(): void {
    if (this.#killed) return;
    this.#killed = true;
    this.#local?.abort(new CancelledError(this.reason ?? 'killed'));
  }
}
