import { performance } from 'node:perf_hooks';
import { CancelledError } from '../errors.js';
import type { TrackHandle } from '../registry/index.js';
import { requestKilledChannel, requestStopChannel } from '../telemetry/channels.js';
import { Counter } from '../telemetry/counters.js';
import type { TargetSlots } from '../telemetry/counters.js';
import type { RequestContext, RequestSpan, ServerTracer } from '../telemetry/tracing/server.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';
import type { TaskDialect } from '../tasks/task.js';
import { ToolContext, isInputRequired, kLogLevels } from '../tools/context.js';
import { requestLogLine } from './request-log.js';
import type { ClientRequester, ContextHost, InputRequired, ListKind, LogSink, ProgressSink, RequestInput } from '../tools/context.js';
import type { PoolOutcome, ToolPool } from '../tools/pool.js';
import type { Reply, RequestInfo, Running } from './contract.js';
import type { EraRules } from './eras/rules.js';
import { askForInput } from './legacy-input.js';
import { PendingResult } from './pending-result.js';
import { refusalBody } from './refusals.js';
import type { RunHost } from './run-host.js';
import { ErrorCode, ProtocolError, errorBody, notificationBody, resultBody } from './wire.js';
import type { JsonRpcId } from './wire.js';

/** A method's handler: a result, a promise of one, a `PendingResult`, or a throw (ProtocolError: a JSON-RPC error). */
export type Handler = (run: Run, params: Record<string, unknown> | undefined) => unknown;

/** One entry of an era's method table. */
export interface Method {
  readonly handler: Handler;
  /** The params field naming what the request is about (tool, prompt, resource URI): the run's `target`. */
  readonly names?: 'name' | 'uri' | undefined;
}

/**
 * The parts of every context a run makes, filled just before and emptied just after the
 * constructor reads them (synchronously): no parts object per request.
 */
const kParts: { progress: ProgressSink | undefined; input: RequestInput | undefined; host: ContextHost | undefined; listChanged: ((kind: ListKind) => void) | undefined; auth: RequestInfo['auth'] } = {
  progress: undefined, input: undefined, host: undefined, listChanged: undefined, auth: undefined,
};

/**
 * One request from dispatch to release: track → run → untrack → clear. Methods live on the
 * prototype, so a request allocates one object, not a closure per step; the cancellation watcher
 * is armed only if the handler goes async and is still running when that turn ends (`AsyncRuns`).
 * Handlers see the request through the public members; the reply and the registry row stay private.
 */
export class Run implements Running, ContextHost {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly info: RequestInfo;
  /** The era's rules, chosen once at dispatch. */
  readonly era: EraRules;
  /** What the request names (tool, prompt, resource URI), or ''. */
  readonly target: string;
  readonly #host: RunHost<Run>;
  readonly #reply: Reply;
  readonly #handle: TrackHandle;
  /** When it started: the duration histogram and requestStopChannel (`performance` imported: the global is a getter on Node 22/24). */
  readonly #started = performance.now();
  /** `error.type` of the outcome ('' when it succeeded), for the duration histogram. */
  #errorType = '';
  #ctx: ToolContext | undefined;
  /** Ids of requests this run sent to the client and still waits on (made on first use). */
  #awaiting: Set<string> | undefined;
  #settled = false; // released: untracked and cleared
  #armed = false; // async and still running at the end of its first turn: watched (see `arm`)
  #ended = false; // nothing more may be written to the reply
  #kill: ReturnType<typeof setTimeout> | undefined;
  #poolAbort: AbortController | undefined;
  /** This request's server span, when tracing is on, and the context its handler runs in. */
  #span: RequestSpan | undefined;
  #spanContext: RequestContext | undefined;
  #inFlight: TargetSlots | undefined; // its in-flight gauge (see `enterInFlight`)
  #entered = false;
  #cancelNoted = false; // the span has its cancel event (or the disconnect that stands for it)
  /** The handler and its params, run again after a legacy input round (`#askClient`). */
  #handler: Handler | undefined;
  #params: Record<string, unknown> | undefined;
  /** Legacy era: the client's answers to the handler's last input round, and which round (legacy-input.ts). */
  #answered: { readonly input: RequestInput; readonly round: number } | undefined;

  constructor(host: RunHost<Run>, era: EraRules, id: JsonRpcId, method: string, target: string, info: RequestInfo, reply: Reply, handle: TrackHandle) {
    this.#host = host;
    this.era = era;
    this.id = id;
    this.method = method;
    this.target = target;
    this.info = info;
    this.#reply = reply;
    this.#handle = handle;
  }

  /** Released (untracked and cleared): nothing more happens to this request. */
  get settled(): boolean {
    return this.#settled;
  }

  // ---- the engine's side -------------------------------------------------------------------

  /** Opens the request's server span (tracing on only), before `start`. */
  trace(tracer: ServerTracer, names: Method['names'], params: Record<string, unknown> | undefined): void {
    this.#spanContext = tracer.start(this.method, this.target, names, this.id as string | number, params, this.info.version, this.info.scope, this.#reply.traceHeaders?.());
    this.#span = tracer.spanOf(this.#spanContext);
  }

  /** Runs the handler (again, with the client's answers, after a legacy input round: `#askClient`). */
  start(handler: Handler, params: Record<string, unknown> | undefined): void {
    this.#handler = handler;
    this.#params = params;
    let out: unknown;
    try {
      // With a span, the handler runs inside it: spans the tool makes are its children.
      out = this.#spanContext === undefined ? handler(this, params) : this.#host.tracer!.within(this.#spanContext, handler, this, params);
    } catch (error) {
      this.fail(error);
      return;
    }
    if (out instanceof Promise || out instanceof PendingResult) {
      this.#host.running.add(this); // armed at the end of this turn if still running (`arm`)
      this.enterInFlight();
      this.#take(out);
    } else {
      this.#succeed(out as Record<string, unknown>);
    }
  }

  /**
   * What a handler, a promise of it or a pending result's step produced: the result, or one still
   * to come (a promise may also resolve to a `PendingResult`, as tools/call's after an async check).
   */
  #take(out: unknown): void {
    if (out instanceof Promise) out.then((value) => this.#take(value), (error) => this.fail(error));
    else if (out instanceof PendingResult) out.promise.then((value) => this.#settle(out, value, true), (error) => this.#settle(out, error, false));
    else this.#succeed(out as Record<string, unknown>);
  }

  /** A `PendingResult` settled: its step makes the result (or throws, as a handler may). */
  #settle(pending: PendingResult, outcome: unknown, ok: boolean): void {
    let result: unknown;
    try {
      result = ok ? pending.resolved(outcome) : pending.rejected(outcome);
    } catch (error) {
      this.fail(error);
      return;
    }
    this.#take(result);
  }

  /**
   * The end of the turn in which the handler went async found it still running: from now on a
   * cancel (the registry's watcher) or the client going (the reply's `started`) reaches it. Both
   * check the state first, so one that came meanwhile is acted on at once.
   */
  arm(): void {
    if (this.#settled || this.#armed) return;
    this.#armed = true;
    this.#host.running.watching.add(this);
    this.#reply.started?.(this); // first: a cancel that came meanwhile then reaches a started reply
    if (!this.#settled) this.#handle.whenCancelled(() => this.#cancelled());
  }

  fail(error: unknown): void {
    if (!this.#ended) {
      this.#ended = true;
      const reply = this.#reply;
      if (this.#handle.cancelled) {
        reply.cancelled();
      } else if (error instanceof ProtocolError) {
        this.#errorType = String(error.rpcCode);
        reply.respond(refusalBody(this.id, error), error.httpStatus);
      } else {
        // A handler's own failure is a JSON-RPC error for the client (HTTP 200, as any response); its stack is logged, rate-bounded.
        this.#host.logFailure(this.method, this.target, error);
        this.#errorType = String(ErrorCode.InternalError);
        reply.respond(errorBody(this.id, ErrorCode.InternalError, 'Internal error'), 200);
      }
    }
    this.#release(this.#handle.cancelled ? 'cancelled' : 'error');
  }

  clientGone(reason: string): void {
    if (this.#ended || this.#settled) return;
    this.#ended = this.#cancelNoted = true; // the stream is gone: nothing more is written, and it is the cancel's event
    if (this.#span !== undefined) this.#host.tracer!.event(this.#span, 'mcp.client.disconnected', { reason });
    this.#host.registry.cancelRequest(this.#handle, reason);
    this.#abandonClientRequests(this.#handle.reason ?? 'cancelled');
    this.#armKill();
  }

  /** The server gives up on it (shutdown, a stdio client that closed its input): cancel through the registry as a client would. False if it had already ended. */
  cancelByServer(reason: string): boolean {
    if (this.#settled) return false;
    this.#host.registry.cancelRequest(this.#handle, reason);
    // The abort listener answers and arms the kill timer; a run already cancelled only needs the timer.
    this.#cancelled();
    this.#armKill();
    return true;
  }

  // ---- the handlers' side ------------------------------------------------------------------

  /** True once the request was cancelled (one atomic load of its shared row). */
  get cancelled(): boolean {
    return this.#handle.cancelled;
  }

  get canStream(): boolean {
    return this.#reply.canStream;
  }

  /** Aborts when the request is cancelled (or its client goes). */
  get signal(): AbortSignal {
    return this.#handle.signal;
  }

  /** A message for the client before the response (nothing once the request has ended). */
  notify(json: string): void {
    if (!this.#ended) this.#reply.notify(json);
  }

  /** What the request carried for a multi-round exchange (the era decides what that is). */
  input(params: Record<string, unknown> | undefined): RequestInput {
    return this.#answered?.input ?? this.era.input(this, params);
  }

  /** Progress for this request, if the client gave a token and can receive notifications. */
  progressSink(params: Record<string, unknown> | undefined): ProgressSink | undefined {
    const token = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
    if ((typeof token !== 'string' && typeof token !== 'number') || !this.#reply.canStream) return undefined;
    return (progress, total, message) => {
      if (this.#ended) return;
      const params: Record<string, unknown> = { progressToken: token, progress };
      if (total !== undefined) params.total = total;
      if (message !== undefined) params.message = message;
      const reply = this.#reply;
      // A slow reader keeps only the newest progress: hand it over unserialised.
      if (reply.congested === true) reply.holdProgress!(params);
      else reply.notify(notificationBody('notifications/progress', params), 'progress');
    };
  }

  /** The context a handler of this request gets. */
  context(progress: ProgressSink | undefined, input: RequestInput | undefined): ToolContext {
    const parts = kParts;
    parts.progress = progress;
    parts.input = input;
    parts.host = this; // the log sink and the requester are made on first use
    parts.listChanged = this.#host.listChanged;
    parts.auth = this.info.auth;
    const ctx = new ToolContext(this.#handle, parts);
    parts.progress = undefined;
    parts.input = undefined;
    parts.host = undefined;
    parts.auth = undefined;
    this.#ctx = ctx;
    return ctx;
  }

  /** Runs a `pool: true` tool on this request's row; a kill terminates its thread. */
  runInPool(pool: ToolPool, name: string, args: Record<string, unknown>, progress: ProgressSink | undefined, input: RequestInput): Promise<PoolOutcome> {
    this.#poolAbort = new AbortController();
    return pool.run(name, args, this.#handle, this.#poolAbort.signal, {
      progress, log: this.logSink(), logThreshold: this.info.logLevel, listChanged: this.#host.listChanged, auth: this.info.auth, input,
    });
  }

  /** The kill timer fired: the pool task was terminated, not failed. */
  get killed(): boolean {
    return this.#poolAbort?.signal.aborted === true;
  }

  /** A request sent to the client on this run's stream: rejected if the run ends unanswered. */
  awaitAnswer(id: string): void {
    (this.#awaiting ??= new Set()).add(id);
  }

  // ---- internals ---------------------------------------------------------------------------

  #succeed(result: Record<string, unknown>): void {
    if (!this.#ended) {
      if (this.era.clientRequests && isInputRequired(result)) return this.#askClient(result);
      let body: string;
      try {
        body = resultBody(this.id, this.era.encode(result, this.method, this.target));
      } catch (error) {
        this.fail(error);
        return;
      }
      this.#ended = true;
      if (result.isError === true) this.#errorType = 'tool_error';
      if (this.#handle.cancelled) this.#reply.cancelled();
      else this.#reply.respond(body, 200);
    }
    this.#release(this.#handle.cancelled ? 'cancelled' : 'ok');
  }

  /** Legacy era: the handler asked for input as for 2026-07-28; the client is asked now, then it runs again. */
  #askClient(required: InputRequired): void {
    const round = (this.#answered?.round ?? 0) + 1;
    this.#host.running.add(this); // it waits on the client: armed at the end of this turn, as an async handler is
    this.enterInFlight();
    askForInput(required, this.requester(), this.info.clientCapabilities, round).then((input) => {
      this.#answered = { input, round };
      this.start(this.#handler!, this.#params);
    }, (error: unknown) => this.fail(error));
  }

  /** The tool saw its cancel (its flag read, or its signal's abort delivered): an event on the span. */
  cancelObserved(): void {
    this.#noteCancel(); // a handler polling its flag may see the cancel before the watcher's callback runs
    this.spanEvent('mcp.cancel.observed', {});
  }

  /**
   * The call became a task (tracing on only): an `mcp.task.created` event on this request's span,
   * and the task's own span, its child (the task lives on after the request).
   */
  taskSpan(taskId: string, dialect: TaskDialect, tool: string): RequestSpan | undefined {
    const span = this.#span;
    if (span === undefined) return undefined;
    const tracer = this.#host.tracer!;
    tracer.event(span, 'mcp.task.created', { 'mcp.task.id': taskId, 'mcp.task.dialect': dialect });
    return tracer.child(span, `mcp.task ${tool}`, { 'mcp.task.id': taskId, 'mcp.task.dialect': dialect, 'gen_ai.tool.name': tool });
  }

  /**
   * Counts the request in its (method, tool) in-flight gauge from now, once: when its handler goes
   * async, or before a tool known to the catalog runs synchronously (its name is a label only then).
   */
  enterInFlight(): void {
    if (this.#entered) return;
    this.#entered = true;
    this.#inFlight = this.#host.counters.histograms.enter(this.method, this.target);
  }

  /** This request's span context (tracing on only), for the `_meta` of what it asks the client. */
  traceContext(): CarriedTrace | undefined {
    return this.#span === undefined ? undefined : this.#host.tracer!.carried(this.#span);
  }

  /** Links this request's span (tracing on only) to the span that created `task`, wherever that ran. */
  linkTask(task: { readonly taskId: string; readonly traceparent?: string | undefined }): void {
    if (this.#span !== undefined && task.traceparent !== undefined) this.#host.tracer!.link(this.#span, task.traceparent, { 'mcp.task.id': task.taskId });
  }

  /** An event on this request's span (tracing on only): a cancel seen, a task created. */
  spanEvent(name: string, attributes: Record<string, string | number>): void {
    if (this.#span !== undefined) this.#host.tracer!.event(this.#span, name, attributes);
  }

  /** The era allows it and there is a stream: a way for the handler to ask the client something. */
  requester(): ClientRequester | undefined {
    if (!this.era.clientRequests || !this.#reply.canStream) return undefined;
    return (method, params) => {
      if (this.#ended) return Promise.reject(new CancelledError('the request has ended'));
      return this.#host.requestClient(this, method, params);
    };
  }

  /** Log messages for this request, filtered by the client's level; undefined when none may be sent. */
  logSink(): LogSink | undefined {
    const threshold = this.info.logLevel;
    if (threshold === undefined || !this.#reply.canStream) return undefined;
    return (level, data, logger) => {
      if (this.#ended || kLogLevels.indexOf(level) < threshold) return;
      const reply = this.#reply;
      if (reply.congested === true) {
        reply.dropLog!(); // a slow reader loses log lines: do not even build them
        return;
      }
      const params: Record<string, unknown> = { level, data };
      if (logger !== undefined) params.logger = logger;
      reply.notify(notificationBody('notifications/message', params), 'log');
    };
  }

  #cancelled(): void {
    if (this.#ended || this.#settled) return;
    this.#ended = true;
    this.#noteCancel();
    if (this.#span !== undefined) this.#ctx?.noteSignalled();
    this.#reply.cancelled();
    this.#abandonClientRequests(this.#handle.reason ?? 'cancelled');
    this.#armKill();
  }

  /** The cancel as a span event (tracing on only), once: by the watcher, the handler or the release. */
  #noteCancel(): void {
    if (this.#cancelNoted || this.#span === undefined) return;
    this.#cancelNoted = true;
    this.#host.tracer!.event(this.#span, 'mcp.cancel.received', { 'mcp.cancel.reason': this.#handle.reason ?? '', 'mcp.cancel.scope': this.info.scope });
  }

  /** Rejects the requests this run sent the client that are still unanswered; each only once. */
  #abandonClientRequests(reason: string): void {
    const awaiting = this.#awaiting;
    if (awaiting === undefined || awaiting.size === 0) return;
    for (const id of awaiting) this.#host.abandonClientRequest(id, new CancelledError(reason));
    awaiting.clear();
  }

  #armKill(): void {
    if (this.#settled || this.#kill !== undefined) return;
    this.#kill = setTimeout(() => this.#killNow(), this.#host.streamCancelTimeoutMs);
    this.#kill.unref();
  }

  #killNow(): void {
    if (this.#settled) return;
    this.#ctx?.kill();
    this.#poolAbort?.abort(new CancelledError('killed'));
    this.#host.counters.add(Counter.Killed);
    if (this.#span !== undefined) this.#host.tracer!.event(this.#span, 'mcp.request.killed', { 'sluice.stream_cancel_timeout_ms': this.#host.streamCancelTimeoutMs });
    this.#release('killed'); // first, so whoever hears of the kill finds the row already gone
    if (requestKilledChannel.hasSubscribers) requestKilledChannel.publish({ requestId: this.id, scope: this.info.scope });
  }

  #release(status: 'ok' | 'error' | 'cancelled' | 'killed'): void {
    if (this.#settled) return;
    this.#settled = true;
    const host = this.#host;
    if (this.#armed) host.running.watching.delete(this);
    if (this.#kill !== undefined) clearTimeout(this.#kill);
    this.#abandonClientRequests('the request has ended');
    host.registry.untrack(this.#handle);
    host.registry.clear(this.id, this.info.scope);
    this.#reply.released?.();
    const durationMs = performance.now() - this.#started;
    const failure = this.#errorType;
    // A JSON-RPC error's target is whatever the client sent (an unknown tool's name): it is not a
    // label, so hostile names cannot multiply the series.
    const target = failure === '' || failure === 'tool_error' ? this.target : '';
    const outcome = status === 'cancelled' || status === 'killed' ? status : failure;
    host.counters.histograms.end(this.#inFlight, this.method, target, outcome, durationMs / 1000);
    if (host.requestLog !== undefined) host.requestLog(requestLogLine({ id: this.id, method: this.method, target: this.target, scope: this.info.scope, status, outcome, durationMs, span: this.#span, meta: this.info.meta }));
    if (status === 'cancelled') this.#noteCancel();
    if (this.#span !== undefined) host.tracer!.end(this.#span, outcome);
    if (requestStopChannel.hasSubscribers) requestStopChannel.publish({ method: this.method, durationMs, status });
  }
}
