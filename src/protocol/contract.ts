import type { Registry } from '../registry/index.js';
import type { AuthInfo } from '../auth/contract.js';
import type { ServerCounters } from '../telemetry/counters.js';
import type { ServerTracer } from '../telemetry/tracing/server.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';
import type { Catalog } from '../catalog/catalog.js';
import type { ListKind } from '../tools/context.js';
import type { ToolPool } from '../tools/pool.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import type { JsonRpcId } from './wire.js';

/**
 * The contract between the protocol core and its transports: what a transport tells the engine of a
 * request (`RequestInfo`), what it gives the engine to answer with (`Reply`), and what it gets back
 * (`Running`). Nothing here knows HTTP or stdio.
 */

export type Era = 'legacy' | 'modern';

/** Who is asking, as the transport worked it out. */
export interface RequestInfo {
  readonly era: Era;
  /** The protocol revision of this request (modern: from _meta; legacy: negotiated or assumed). */
  readonly version: string;
  /** Registry scope: session > principal > ip. */
  readonly scope: string;
  /**
   * Who the client is, whatever its session: `principal:<id>` when authenticated, else its address
   * bucket (`ip:<IPv4>`, `ip:<IPv6 /64>`); stdio: the connection. Per-client quotas count by it (a
   * client can open sessions for free, so a session bounds nothing). Undefined: `scope` is used.
   */
  readonly client?: string | undefined;
  /**
   * Least severe log level the client wants (an index into kLogLevels), or undefined for none
   * (2026-07-28 without _meta logLevel).
   */
  readonly logLevel: number | undefined;
  /** Legacy logging/setLevel: where the session keeps its level (an object, so a request makes no closure for it). */
  readonly levelStore?: LevelStore | undefined;
  /** Legacy: the capabilities the client declared at initialize (kept with its session). */
  readonly clientCapabilities?: Record<string, unknown> | undefined;
  /** The verified bearer token's caller (HTTP with `auth`), for `ctx.auth`; undefined otherwise. */
  readonly auth?: AuthInfo | undefined;
  /**
   * 2026-07-28: the request's `_meta` (version, capabilities, log level), extracted once by
   * `requestInfo`. Absent when the info was made elsewhere: the params' own `_meta` is read then.
   */
  readonly meta?: Record<string, unknown> | undefined;
}

/** Where a legacy session keeps its log level. */
export interface LevelStore {
  setLogLevel(level: number): void;
}

/** A JSON-RPC response the client sent to one of our requests. */
export interface ClientResponse {
  readonly id: unknown;
  readonly result: unknown;
  readonly error: unknown;
}

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
  /**
   * The request did not finish synchronously: `running` is its handle (the same one handleRequest
   * returns). Called at most once, when the event-loop turn in which the handler went async ends
   * with it still running (most async handlers settle within that turn's microtasks and never
   * cost a watch); never for a request answered (or refused) synchronously. A transport keeps it
   * to cancel when its client goes away, and must check then whether its client already went.
   */
  started?(running: Running): void;
  /** The final JSON-RPC response. `httpStatus` for transports that have one. */
  respond(json: string, httpStatus: number): void;
  /** The request was cancelled: end the exchange without a JSON-RPC response. */
  cancelled(): void;
  /**
   * Refused because the in-flight table is full: write `refusalBody(id, kBusy)` (refusals.ts;
   * HTTP: its 503, with Retry-After).
   */
  busy(id: JsonRpcId): void;
  /**
   * The request was released (untracked), whatever its outcome, exactly once: after a response, a
   * cancel or a kill, and also after `busy` (then nothing was tracked).
   */
  released?(): void;
  /** The carrier's own W3C trace context (HTTP: the traceparent/tracestate headers), read only when the request is traced. */
  traceHeaders?(): CarriedTrace | undefined;
}

/** What a message sent before the response is, for a transport that must shed load for a slow reader. */
export type NotifyKind = 'progress' | 'log' | 'other';

/** A request in progress, as the transport sees it. */
export interface Running {
  /** The client went away (modern era: that is the cancellation). Nothing more will be written. */
  clientGone(reason: string): void;
}

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
  /** How long a request sent to the client waits for its answer (then the asker gets -31002). */
  readonly clientRequestTimeoutMs: number;
  /** Where refusals worth an operator's attention go. */
  readonly log: (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;
  /** Keys that seal 2026-07-28 requestState, newest first (the same in every thread of a server). */
  readonly stateKeys: readonly Uint8Array[];
  /**
   * Hands a response to the thread whose request it answers (the client may POST it to any worker).
   * Absent: single-thread transports.
   */
  readonly forwardResponse?: ((threadId: number, response: string, scope: string, node?: string) => void) | undefined;
  /**
   * Cluster mode: a `notifications/cancelled` for a request not in flight on this node, in a scope
   * that is the same on every node (session or principal), goes to the other nodes this way.
   */
  readonly forwardCancel?: ((requestId: string | number, reason: string | undefined, scope: string, trace?: CarriedTrace) => void) | undefined;
  /** Cluster mode: this node's id; server→client request ids then name it (`s<nodeId>.<thread>-<n>`). */
  readonly nodeId?: string | undefined;
  /** Tells the other threads' engines that a list changed (HTTP workers: through the supervisor). */
  readonly broadcastListChanged?: ((kind: ListKind) => void) | undefined;
  /**
   * Tells the node's other threads' engines that a legacy session (its scope) was DELETEd here:
   * those of `threads` (the session store's bits of the threads that served it).
   */
  readonly broadcastSessionEnded?: ((scope: string, threads: number) => void) | undefined;
  /**
   * Tasks (2025-11-25 experimental and the 2026-07-28 extension): where they live and their bounds.
   * Absent: no task support is declared and task-required tools cannot be called.
   */
  readonly tasks?: { readonly store: TaskStore; readonly limits: TaskLimits; readonly runner: string } | undefined;
  /** The server checks callers (an authenticate hook): 2025-11-25 `tasks/list` is offered only then. */
  readonly authenticated?: boolean | undefined;
  /** Server spans, when an OpenTelemetry SDK is registered in this thread; absent: no spans. */
  readonly tracer?: ServerTracer | undefined;
  /** One structured line per request as it ends (request-log.ts); absent: none (the default). */
  readonly requestLog?: ((line: string) => void) | undefined;
}
