import { CancelledError, ProtocolError, SluiceError } from '../../errors.js';
import type { AuthInfo } from '../../auth/contract.js';
import type { Registry, TrackHandle } from '../../registry/index.js';
import type { TaskLimits, TaskStore } from '../../tasks/store.js';
import type { TaskChange, TaskDialect, TaskError, TaskInputRequest, TaskProgress, TaskRecord } from '../../tasks/task.js';
import { isTerminal } from '../../tasks/task.js';
import { Counter } from '../../telemetry/counters.js';
import type { ServerCounters } from '../../telemetry/counters.js';
import type { RequestSpan, ServerTracer } from '../../telemetry/tracing/server.js';
import { ToolContext, isInputRequired } from '../../tools/context.js';
import type { ClientRequester, InputRequired, ListKind, ProgressSink, RequestInput } from '../../tools/context.js';
import { errorText, thrownResult, toToolResult } from '../../tools/define.js';
import { adoptThenable } from '../../tools/result.js';
import type { CallToolResult, Tool, ToolOutput } from '../../tools/define.js';
import { poolCallResult } from '../../tools/pool.js';
import type { ToolPool } from '../../tools/pool.js';
import type { Run } from '../run.js';
import { ErrorCode } from '../wire.js';
import { taskRowId } from './wire.js';

/** What a task run needs of the engine. */
export interface TaskHost {
  readonly registry: Registry;
  readonly store: TaskStore;
  readonly limits: TaskLimits;
  /** Who runs tasks here (the store fails a lost runner's tasks). */
  readonly runner: string;
  readonly counters: ServerCounters;
  readonly streamCancelTimeoutMs: number;
  readonly pool: ToolPool | undefined;
  readonly listChanged: (kind: ListKind) => void;
  logFailure(method: string, target: string, error: unknown): void;
  /** Sends the client a request on `run`'s stream (legacy tasks/result) and waits for its answer. */
  requestClient(run: Run, method: string, params: Record<string, unknown>): Promise<unknown>;
  /** Task runs of this engine whose tool has not settled (shutdown cancels them). */
  readonly running: Set<TaskRun>;
  /** Spans, when the serving thread traces: a task's status changes are events on its own span. */
  readonly tracer?: ServerTracer | undefined;
}

interface Waiting {
  resolve(value: unknown): void;
  reject(error: Error): void;
}

/** A handler's input-required round inside a task: its keys on the wire, and the state to re-run with. */
interface Round {
  /** Wire key → the handler's own key. */
  readonly keys: ReadonlyMap<string, string>;
  readonly state: unknown;
  readonly answers: Record<string, unknown>;
}

/**
 * A tool running as a task: on its own registry row (`task:<id>` in the owner's scope), so the tool
 * outlives the request that started it and a `tasks/cancel` on any thread raises its flag as a
 * notifications/cancelled would; its outcome, input requests and progress go to the task store.
 *
 * `ctx.request(...)` becomes an input request of the task (`input_required`), answered by the
 * client through the store (2026-07-28 `tasks/update`, 2025-11-25 answers on `tasks/result`). A
 * handler that returns `ctx.inputRequired(...)` inside a task gets its round the same way, and is
 * run again with the answers once all are in.
 */
export class TaskRun {
  readonly taskId: string;
  readonly owner: string;
  readonly dialect: TaskDialect;
  readonly tool: Tool;
  readonly #host: TaskHost;
  readonly #handle: TrackHandle;
  /** 2025-11-25: the call's progress token, valid for the task's life. */
  readonly progressToken: string | number | undefined;
  readonly #clientCapabilities: Record<string, unknown> | undefined;
  /** The caller's verified token (with `auth`), for the handler's ctx.auth. */
  readonly #auth: AuthInfo | undefined;
  readonly #waiting = new Map<string, Waiting>();
  #next = 0;
  #round: Round | undefined;
  #rounds = 0;
  #ctx: ToolContext | undefined;
  #poolAbort: AbortController | undefined;
  #unwatch: (() => void) | undefined;
  #kill: ReturnType<typeof setTimeout> | undefined;
  /** After this no store keeps the task: a held write is not tried past it. */
  #expiresAt = Number.POSITIVE_INFINITY;
  /** The store knows the task (created); before that, changes are not sent. */
  #created = false;
  #released = false;
  /** The task's span (tracing on only; a child of the creating request's) and the last status it noted. */
  #span: RequestSpan | undefined;
  #status: TaskRecord['status'] = 'working';
  /** Progress waiting for the previous progress write to finish (only the newest is kept). */
  #progress: TaskProgress | undefined;
  #progressBusy = false;
  /** Opens the write queue once the store has the task. */
  #open!: () => void;
  /**
   * Store writes in order: a later change never overtakes an earlier one, and nothing is written
   * before the task exists (what the tool does before that waits here).
   */
  #writes: Promise<unknown> = new Promise<void>((resolve) => {
    this.#open = resolve;
  });

  constructor(host: TaskHost, taskId: string, owner: string, dialect: TaskDialect, tool: Tool, handle: TrackHandle, progressToken: string | number | undefined, clientCapabilities: Record<string, unknown> | undefined, auth?: AuthInfo) {
    this.#host = host;
    this.taskId = taskId;
    this.owner = owner;
    this.dialect = dialect;
    this.tool = tool;
    this.#handle = handle;
    this.progressToken = progressToken;
    this.#clientCapabilities = clientCapabilities;
    this.#auth = auth;
    host.running.add(this);
    handle.signal.addEventListener('abort', () => this.#armKill(), { once: true });
  }

  /** True once the task's row is cancelled. */
  get cancelled(): boolean {
    return this.#handle.cancelled;
  }

  /** The row's AbortSignal (the request that starts the task links its own cancel to it until the task exists). */
  get signal(): AbortSignal {
    return this.#handle.signal;
  }

  /** Raises the task's flag (the starting request was cancelled before the task existed). */
  cancel(reason: string): void {
    if (!this.#released) this.#host.registry.cancelRequest(this.#handle, reason);
  }

  /** Starts the tool on the task's row: its output, or a promise of it (pool tools: always a promise). */
  invoke(args: Record<string, unknown>, input: RequestInput): ToolOutput | Promise<ToolOutput> {
    const tool = this.tool;
    this.#lastArgs = args;
    if (tool.pool === true) {
      const pool = this.#host.pool;
      if (pool === undefined) throw new ProtocolError(ErrorCode.InternalError, `tool ${tool.name} runs in the pool, but the server has no pool`);
      this.#poolAbort = new AbortController();
      // What an inline task's context gets (below), from the pool thread.
      return pool.run(tool.name, args, this.#handle, this.#poolAbort.signal, { progress: this.#progressSink(), listChanged: this.#host.listChanged, auth: this.#auth, input }).then((outcome) => poolCallResult(outcome, (thrown) => {
        if (!this.#handle.cancelled) this.#host.logFailure('tools/call', tool.name, thrown); // as an inline task's throw (#failed)
      }));
    }
    const ctx = new ToolContext(this.#handle, {
      progress: this.#progressSink(), input, requester: this.#requester(), listChanged: this.#host.listChanged, auth: this.#auth,
    });
    this.#ctx = ctx;
    return adoptThenable(tool.handler(args, ctx));
  }

  /** The call was answered without a task (it settled at once): the row goes, nothing was stored. */
  releaseUnused(): void {
    this.#release();
  }

  /**
   * The store has the task: from now on its outcome, input requests and progress are written
   * there, and changes the client makes (answers, cancel) are watched for.
   */
  created(output: ToolOutput | Promise<ToolOutput>, span?: RequestSpan): void {
    this.#created = true;
    this.#span = span;
    // No task lives longer than maxTtlMs: a write held past that has nothing left to land on.
    this.#expiresAt = Date.now() + this.#host.limits.maxTtlMs;
    this.#host.counters.add(Counter.TasksCreated);
    this.#unwatch = this.#host.store.watch(this.taskId, (task) => this.#changed(task));
    this.#open();
    this.#follow(output);
    if (this.#progress !== undefined && !this.#progressBusy) this.#flushProgress();
  }

  /** Shutdown: the task ends as failed (it did not finish), and its tool is cancelled as by a client. */
  cancelForShutdown(reason: string): void {
    if (this.#released) return;
    if (this.#created) this.#write({ status: 'failed', statusMessage: reason, error: { code: ErrorCode.InternalError, message: reason } });
    this.#host.registry.cancelRequest(this.#handle, reason);
  }

  // ---- the tool's outcome -------------------------------------------------------------------

  #follow(output: ToolOutput | Promise<ToolOutput>): void {
    const tool = this.tool;
    Promise.resolve(output)
      .then((value) => toToolResult(tool, value))
      .then((result) => this.#finish(result), (error: unknown) => this.#failed(error));
  }

  #finish(result: CallToolResult | InputRequired): void {
    if (this.#released) return;
    if (this.#handle.cancelled) {
      this.#end({ status: 'cancelled', statusMessage: this.#handle.reason ?? 'cancelled' });
      return;
    }
    if (isInputRequired(result)) {
      this.#ask(result);
      return;
    }
    let json: string;
    try {
      json = JSON.stringify(result);
    } catch (error) {
      this.#end({ status: 'failed', statusMessage: 'the result is not JSON', error: { code: ErrorCode.InternalError, message: `the result is not JSON: ${errorText(error)}` } });
      return;
    }
    if (json.length > this.#host.limits.maxTaskBytes) {
      const message = `task result exceeds ${this.#host.limits.maxTaskBytes} bytes`;
      this.#end({ status: 'failed', statusMessage: message, error: { code: ErrorCode.InternalError, message } });
      return;
    }
    // 2025-11-25: a tool's isError fails the task (tasks/result still returns the result itself);
    // 2026-07-28: failed is for JSON-RPC errors only, so isError is completed.
    const failed = this.dialect === 'legacy' && (result as CallToolResult).isError === true;
    this.#end({ status: failed ? 'failed' : 'completed', resultJson: json });
  }

  #failed(error: unknown): void {
    if (this.#released) return;
    if (this.#handle.cancelled || error instanceof CancelledError) {
      this.#end({ status: 'cancelled', statusMessage: this.#handle.reason ?? 'cancelled' });
      return;
    }
    if (error instanceof ProtocolError) {
      const failure: TaskError = error.data === undefined ? { code: error.rpcCode, message: error.message } : { code: error.rpcCode, message: error.message, data: error.data };
      this.#end({ status: 'failed', statusMessage: error.message, error: failure });
      return;
    }
    this.#host.logFailure('tools/call', this.tool.name, error);
    this.#finish(thrownResult(error));
  }

  /** The terminal change, then the row goes. */
  #end(change: TaskChange): void {
    if (this.#released) return;
    if (change.status !== undefined) this.#noteStatus(change.status, change.statusMessage);
    this.#write(change);
    this.#release();
  }

  // ---- input: ctx.request and input-required rounds ---------------------------------------

  #requester(): ClientRequester {
    return (method, params) => new Promise<unknown>((resolve, reject) => {
      if (this.#released) {
        reject(new CancelledError('the task has ended'));
        return;
      }
      const key = `q${++this.#next}`;
      this.#waiting.set(key, { resolve, reject });
      this.#write({ addInputRequests: { [key]: { method, params } } });
    });
  }

  /** A handler returned `inputRequired` inside the task: its requests become the task's, under keys unique for the task. */
  #ask(result: InputRequired): void {
    const round = ++this.#rounds;
    const keys = new Map<string, string>();
    const requests: Record<string, TaskInputRequest> = {};
    for (const [key, request] of Object.entries(result.inputRequests)) {
      const wire = `r${round}.${key}`;
      keys.set(wire, key);
      requests[wire] = { method: request.method, params: request.params };
    }
    if (keys.size === 0) {
      this.#end({ status: 'failed', statusMessage: 'the tool asked for no input', error: { code: ErrorCode.InternalError, message: 'an input-required result with no input requests' } });
      return;
    }
    this.#round = { keys, state: result.state, answers: {} };
    this.#write({ addInputRequests: requests });
  }

  /** Every answer of the round is in: the handler runs again with them (and its state), as an MRTR retry would. */
  #rerun(round: Round): void {
    this.#round = undefined;
    let output: ToolOutput | Promise<ToolOutput>;
    try {
      // Through `invoke`, as the first round: a pool tool runs again in the pool, not in this thread.
      output = this.invoke(this.#lastArgs ?? {}, { clientCapabilities: this.#clientCapabilities, inputResponses: round.answers, requestState: round.state });
    } catch (error) {
      this.#failed(error);
      return;
    }
    this.#follow(output);
  }

  /** The arguments the handler was first called with (a round re-runs with the same). */
  #lastArgs: Record<string, unknown> | undefined;

  /** What the store says changed: answers to pick up, a cancel from elsewhere, an expiry. */
  #changed(task: TaskRecord | undefined): void {
    if (this.#released) return;
    if (task !== undefined) this.#noteStatus(task.status, task.statusMessage);
    if (task === undefined) {
      this.#host.registry.cancelRequest(this.#handle, 'task expired');
      this.#release();
      return;
    }
    if (isTerminal(task.status)) {
      // Cancelled (or failed by the store) elsewhere: the tool is told as by a cancel.
      if (!this.#handle.cancelled) this.#host.registry.cancelRequest(this.#handle, task.statusMessage ?? `task ${task.status}`);
      return;
    }
    const responses = task.inputResponses;
    if (responses === undefined) return;
    const consumed: string[] = [];
    let round = this.#round;
    for (const [key, value] of Object.entries(responses)) {
      const waiting = this.#waiting.get(key);
      if (waiting !== undefined) {
        this.#waiting.delete(key);
        consumed.push(key);
        waiting.resolve(value);
        continue;
      }
      const own = round?.keys.get(key);
      if (round !== undefined && own !== undefined && !(own in round.answers)) {
        round.answers[own] = value;
        consumed.push(key);
      }
    }
    if (consumed.length > 0) this.#write({ consumedResponses: consumed });
    if (round !== undefined && Object.keys(round.answers).length === round.keys.size) {
      round = this.#round;
      if (round !== undefined) this.#rerun(round);
    }
  }

  // ---- progress ------------------------------------------------------------------------------

  /**
   * Progress goes to the task's record in both dialects, so a client that polls tasks/get sees the
   * latest; 2025-11-25 tasks/result also streams it with the call's progress token (2026-07-28 tasks
   * carry none). Progress made before the task is stored waits for it (and goes if it never is).
   */
  #progressSink(): ProgressSink {
    return (progress, total, message) => {
      this.#progress = { progress, total, message };
      if (this.#created && !this.#progressBusy) this.#flushProgress();
    };
  }

  /** One progress write at a time; progress made meanwhile is coalesced into the next. */
  #flushProgress(): void {
    const progress = this.#progress;
    if (progress === undefined || this.#released) return;
    this.#progress = undefined;
    this.#progressBusy = true;
    this.#write({ progress }).finally(() => {
      this.#progressBusy = false;
      if (this.#progress !== undefined) this.#flushProgress();
    });
  }

  // ---- the row ---------------------------------------------------------------------------------

  /**
   * Writes a change to the store after the ones before it; never throws. While the store is
   * unreachable (`cluster_unavailable`: Redis down or stalled) the change is held here and tried
   * again with backoff until it lands or the task's lifetime is over (after which the task is gone
   * everywhere), so an outcome reached during an outage is not lost and the task is not left
   * `working`. Progress is not retried (newer progress replaces it). A terminal change the store
   * refuses for another reason is replaced by `failed` with that reason.
   */
  #write(change: TaskChange): Promise<unknown> {
    this.#writes = this.#writes.then(() => this.#land(change));
    return this.#writes;
  }

  async #land(change: TaskChange): Promise<void> {
    const { store } = this.#host;
    const retry = change.progress === undefined || change.status !== undefined;
    let delay = kFirstRetryMs;
    let logged = false;
    for (;;) {
      try {
        await store.update(this.taskId, change);
        if (logged) this.#host.logFailure('tasks', this.taskId, new SluiceError('cluster_unavailable', `the held ${change.status ?? 'change'} of task ${this.taskId} is stored now`));
        return;
      } catch (error) {
        const transient = error instanceof SluiceError && error.code === 'cluster_unavailable';
        if (transient && retry && Date.now() + delay < this.#expiresAt) {
          if (!logged) this.#host.logFailure('tasks', this.taskId, new SluiceError('cluster_unavailable', `${errorText(error)}; the ${change.status ?? 'change'} of task ${this.taskId} is held and tried again until it is stored`));
          logged = true;
          await sleep(delay);
          delay = Math.min(kMaxRetryMs, delay * 2);
          continue;
        }
        this.#host.logFailure('tasks', this.taskId, error instanceof SluiceError ? error : new SluiceError('invalid_option', errorText(error)));
        if (transient || change.status === undefined || (change.status === 'failed' && change.resultJson === undefined)) return;
        // A terminal outcome the store refused (not an outage): the task ends failed, with why.
        const reason = `the task's outcome could not be stored: ${errorText(error)}`;
        change = { status: 'failed', statusMessage: reason, error: { code: ErrorCode.InternalError, message: reason } };
      }
    }
  }

  #armKill(): void {
    if (this.#released || this.#kill !== undefined) return;
    for (const waiting of this.#waiting.values()) waiting.reject(new CancelledError(this.#handle.reason));
    this.#waiting.clear();
    this.#kill = setTimeout(() => {
      if (this.#released) return;
      this.#ctx?.kill();
      this.#poolAbort?.abort(new CancelledError('killed'));
      this.#host.counters.add(Counter.Killed);
      this.#end({ status: 'cancelled', statusMessage: this.#handle.reason ?? 'cancelled' });
    }, this.#host.streamCancelTimeoutMs);
    this.#kill.unref();
  }

  /** A status change, as an event on the task's span (once per change, wherever it was made). */
  #noteStatus(status: TaskRecord['status'], message: string | undefined): void {
    if (status === this.#status) return;
    this.#status = status;
    if (this.#span !== undefined) this.#host.tracer!.event(this.#span, 'mcp.task.status', message === undefined ? { 'mcp.task.status': status } : { 'mcp.task.status': status, 'mcp.task.status_message': message });
  }

  #release(): void {
    if (this.#released) return;
    this.#released = true;
    const host = this.#host;
    if (this.#span !== undefined) {
      this.#span.setAttribute('mcp.task.status', this.#status);
      host.tracer!.end(this.#span, this.#status === 'failed' ? 'task_failed' : this.#status === 'cancelled' ? 'cancelled' : '');
    }
    host.running.delete(this);
    if (this.#kill !== undefined) clearTimeout(this.#kill);
    // The last write goes out before the watch ends (its own change is not needed back).
    const unwatch = this.#unwatch;
    if (unwatch !== undefined) void this.#writes.finally(unwatch);
    for (const waiting of this.#waiting.values()) waiting.reject(new CancelledError('the task has ended'));
    this.#waiting.clear();
    host.registry.untrack(this.#handle);
    host.registry.clear(taskRowId(this.taskId), this.owner);
  }
}

/** Backoff of a held store write: 100 ms doubling to 2 s (the link reconnects within its 2 s cap). */
const kFirstRetryMs = 100, kMaxRetryMs = 2_000;

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms).unref());
