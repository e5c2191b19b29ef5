import type { AuthInfo } from '../auth/contract.js';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Registry, RegistryDescriptor, TrackHandle } from '../registry/index.js';
import type { RequestInput } from './context.js';
import type { CallToolResult } from './define.js';
import { RelayHub } from './pool-relay.js';
import type { PoolSinks, RelayWants } from './pool-relay.js';
import type { ProtocolErrorWire } from '../errors.js';
import { ProtocolError, SluiceError } from '../errors.js';
import { kMaxValueDepth, valueProblem } from '../ports/value-bounds.js';
import { activeTrace } from '../telemetry/tracing/otel.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';

/**
 * What a pool task sends back, as plain data: the tool's result (a failure other than a protocol
 * error is already `isError` content), or the ProtocolError it threw, which the engine answers as a
 * JSON-RPC error exactly as for an inline tool (an Error subclass would arrive as a bare Error).
 */
export type PoolOutcome = (
  | {
    readonly ok: true;
    readonly result: CallToolResult;
    /** What the handler threw, described in the pool thread (`describeFailure`), for the HTTP worker's log; absent when it returned, or stopped on its cancel. */
    readonly thrown?: string | undefined;
  }
  | { readonly ok: false; readonly error: ProtocolErrorWire }
) & {
  /** How long the call waited, from `run` until a pool thread started it (ms). */
  readonly waitedMs?: number | undefined;
  /** Messages the tool relayed (pool-relay.ts): the owner answers once it has them all. */
  readonly relayed?: number | undefined;
};

/**
 * A pool call's result, or the ProtocolError its handler threw (rebuilt from plain data). What else
 * it threw comes described, for `logThrown`: the caller's failure log, as for an inline throw.
 */
export function poolCallResult(outcome: PoolOutcome, logThrown: (description: string) => void): CallToolResult {
  if (!outcome.ok) throw ProtocolError.fromRpcWire(outcome.error);
  if (outcome.thrown !== undefined) logThrown(outcome.thrown);
  return outcome.result;
}

/** What the pool thread gets per task (structured-cloneable). */
export interface PoolTask {
  name: string;
  args: Record<string, unknown>;
  ref: TrackHandle['ref'];
  /** What the tool may relay to its request (progress, log messages, list changes; pool-relay.ts), under which id. */
  wants: RelayWants | undefined;
  /** The caller's verified token (`ctx.auth`), plain data; undefined without `auth`. */
  auth?: AuthInfo | undefined;
  /** The request span's trace context (its tool span in the pool thread is a child); undefined untraced. */
  trace?: CarriedTrace | undefined;
  /** When `run` queued it (epoch ms, high resolution: comparable across threads). */
  queuedAt: number;
  /** What the request carried for a multi-round exchange (`ctx.inputResponses`, `requestState`, `clientCapabilities`), plain data. */
  input?: RequestInput | undefined;
}

/** What the request offers a pool tool besides its arguments: the sinks it may reach, `ctx.auth`, the multi-round input. */
export interface PoolCall extends PoolSinks {
  /** The caller's verified token (`ctx.auth`); undefined without `auth`. */
  readonly auth?: AuthInfo | undefined;
  /** `ctx.inputResponses`, `requestState`, `clientCapabilities`: plain data, checked before it crosses. */
  readonly input?: RequestInput | undefined;
}

/** What a pool thread gets as its workerData. */
export interface PoolThreadData {
  toolsModule: string;
  registry: RegistryDescriptor;
  /** The `tracing` module, imported in the pool thread before the tools module; undefined: none. */
  tracing?: string | undefined;
  /** Its console writes to stderr: the owner's stdout carries the protocol (a stdio server). */
  consoleToStderr?: boolean | undefined;
}

/** What a pool thread's tools module defines there (names by kind, as `catalogNames` lists them), or why it did not load. */
export type PoolThreadLoad =
  | { readonly served: { readonly tools: readonly string[]; readonly resources: readonly string[]; readonly prompts: readonly string[] } }
  | { readonly failure: string };

/**
 * A pool thread's own lifecycle message (piscina relays anything but its READY as a 'message'
 * event): `starting` before it joins the registry's roster, `ready` once its modules are loaded,
 * with what loaded.
 */
export interface PoolThreadMessage {
  type: 'sluice:pool-thread';
  state: 'starting' | 'ready';
  threadId: number;
  loaded?: PoolThreadLoad | undefined;
}

export function isPoolThreadMessage(value: unknown): value is PoolThreadMessage {
  return typeof value === 'object' && value !== null && (value as { type?: unknown }).type === 'sluice:pool-thread';
}

export interface ToolPoolOptions {
  /** The compiled pool thread entry module (the process layer names it: it knows where the build is). */
  entry: URL;
  /** Module (URL or absolute path) exporting the tools; the pool thread imports it. */
  toolsModule: string;
  registry: Registry;
  registryDescriptor: RegistryDescriptor;
  /** The `tracing` option's module: pool threads import it too (tracer providers are per thread). */
  tracing?: string | undefined;
  /** The pool threads' console writes to stderr (set by a stdio server, whose stdout is the protocol). */
  consoleToStderr?: boolean | undefined;
  /** Told how long each call waited for a pool thread (the pool queue wait histogram). */
  onQueueWait?: ((tool: string, seconds: number) => void) | undefined;
  /** Pool threads (default 1). */
  threads?: number;
  /**
   * Told each pool thread's id when it starts (`alive` true, before it can join the registry) and
   * when it has exited (false). Pool threads die with the thread that owns the pool, and then no
   * exit is ever reported here: an HTTP worker relays these ids to the supervisor, which releases
   * them when that worker exits.
   */
  onThread?: ((threadId: number, alive: boolean) => void) | undefined;
  /**
   * Judges what a pool thread loaded against what its owner serves: a sentence saying what is
   * wrong, or undefined (see `started`). Undefined: every load is taken as it is.
   */
  judgeLoad?: ((load: PoolThreadLoad, threadId: number) => string | undefined) | undefined;
  /** Told `judgeLoad`'s sentence for a pool thread started later (piscina's replacement for a killed one). */
  onThreadProblem?: ((message: string) => void) | undefined;
}

/** Milliseconds since the epoch, high resolution, the same clock in every thread of the process. */
export function epochNow(): number {
  return performance.timeOrigin + performance.now();
}

/** Longest wait, at close, for pool threads still loading their modules. */
const kStartingWaitMs = 10_000;

/**
 * Runs `pool: true` tools in piscina threads. The thread adopts the request's registry row, so its
 * tool polls the same flag as an inline tool would; killing a task terminates its thread (piscina
 * aborts exactly the thread that runs it), and the registry is told that thread is gone.
 */
export class ToolPool {
  readonly #piscina: Piscina;
  readonly #registry: Registry;
  readonly #onThread: ((threadId: number, alive: boolean) => void) | undefined;
  readonly #onQueueWait: ((tool: string, seconds: number) => void) | undefined;
  readonly #seen = new WeakSet<Worker>();
  /** Threads that finished loading (terminating one earlier aborts the process). */
  readonly #ready = new Set<number>();
  /** Threads still loading, with the callbacks waiting for them to be ready or gone. */
  readonly #loading = new Map<number, Array<() => void>>();
  readonly #judgeLoad: ToolPoolOptions['judgeLoad'];
  readonly #onThreadProblem: ((message: string) => void) | undefined;
  /** The threads piscina started with the pool, until `started` has judged them. */
  #firstThreads: Set<number> | undefined;
  /** What went wrong in the first threads (the first problem is what `started` rejects with). */
  readonly #firstProblems: string[] = [];
  /** The calls whose tools may relay to their request. */
  readonly #relays = new RelayHub();

  constructor(options: ToolPoolOptions) {
    const threads = options.threads ?? 1;
    this.#registry = options.registry;
    this.#onThread = options.onThread;
    this.#onQueueWait = options.onQueueWait;
    this.#judgeLoad = options.judgeLoad;
    this.#onThreadProblem = options.onThreadProblem;
    const data: PoolThreadData = { toolsModule: options.toolsModule, registry: options.registryDescriptor, tracing: options.tracing, consoleToStderr: options.consoleToStderr };
    this.#piscina = new Piscina({
      filename: options.entry.href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 60_000,
      // piscina's default ('sync') parks an idle thread in Atomics.wait, which stops its event loop:
      // whatever a tool or the tracing module left running (an OpenTelemetry batch export, a
      // metrics reader, a socket's keep-alive, a timer) waited for the next pool call, forever on a
      // quiet pool. 'async' waits with Atomics.waitAsync and the loop keeps running.
      atomics: 'async',
      workerData: data,
    });
    this.#piscina.on('message', (message: unknown) => {
      if (this.#relays.receive(message) || !isPoolThreadMessage(message)) return;
      if (message.state !== 'ready') return this.#adoptNew(); // a replacement thread piscina started after a kill
      if (message.loaded !== undefined) this.#judge(message.loaded, message.threadId);
      this.#settle(message.threadId, true);
    });
    this.#adoptNew(); // the first threads exist as soon as piscina is constructed
    this.#firstThreads = new Set(this.#loading.keys());
  }

  /**
   * Resolves once every thread the pool started with has loaded the tools module, and `judgeLoad`
   * found nothing wrong with what loaded. Rejects with `tools_module_failed` (the first sentence)
   * when it did, or when one exited first: its `pool: true` calls would fail, so the owner refuses
   * to start, as for its own import. Threads started later are told to `onThreadProblem`.
   */
  async started(): Promise<void> {
    const first = this.#firstThreads ?? new Set<number>();
    await Promise.all([...first].map((id) => this.#loaded(id)));
    this.#firstThreads = undefined;
    for (const id of first) if (!this.#ready.has(id)) this.#firstProblems.push(`pool thread ${id} exited while it loaded the tools module`);
    if (this.#firstProblems.length > 0) throw new SluiceError('tools_module_failed', this.#firstProblems[0]!);
  }

  /** Settles once the thread `id` has loaded its modules or exited (at once if it is not loading). */
  #loaded(id: number): Promise<void> {
    return new Promise<void>((done) => {
      const waiting = this.#loading.get(id);
      if (waiting === undefined) done();
      else waiting.push(done);
    });
  }

  /** A ready thread's load, judged: a problem goes to `started` for a first thread, else to onThreadProblem. */
  #judge(load: PoolThreadLoad, threadId: number): void {
    const problem = this.#judgeLoad?.(load, threadId);
    if (problem === undefined) return;
    if (this.#firstThreads?.has(threadId) === true) this.#firstProblems.push(problem);
    else this.#onThreadProblem?.(problem);
  }

  /** Watches every pool thread not seen yet: reports it, and releases its roster entry on exit. */
  #adoptNew(): void {
    for (const worker of this.#piscina.threads) {
      if (this.#seen.has(worker)) continue;
      this.#seen.add(worker);
      const id = worker.threadId; // -1 once it has exited: capture it now
      if (id < 0) continue;
      if (!this.#ready.has(id)) this.#loading.set(id, this.#loading.get(id) ?? []);
      this.#onThread?.(id, true);
      // On 'exit', not on piscina's workerDestroy: that fires while a killed thread may still run,
      // and after an exit it reports the id as -1.
      worker.once('exit', () => {
        this.#registry.threadExited(id);
        this.#settle(id, false);
        this.#ready.delete(id);
        this.#onThread?.(id, false);
      });
    }
  }

  #settle(threadId: number, ready: boolean): void {
    if (ready) this.#ready.add(threadId);
    const waiting = this.#loading.get(threadId);
    this.#loading.delete(threadId);
    if (waiting !== undefined) for (const done of waiting) done();
  }

  /** Runs tool `name` on `handle`'s row in a pool thread; `call` is what the request offers the tool besides its arguments. */
  async run(name: string, args: Record<string, unknown>, handle: TrackHandle, signal: AbortSignal, call: PoolCall): Promise<PoolOutcome> {
    const { auth, input } = call;
    // The arguments cross to a pool thread: refused here (JSON-RPC invalid params) if that thread could not read them.
    const problem = valueProblem(args, kMaxValueDepth);
    if (problem !== undefined) throw new ProtocolError(-32602, `arguments are ${problem.message}`);
    // So do the client's answers and capabilities (the state is the server's own, sealed).
    const inputProblem = input === undefined ? undefined : valueProblem(input.inputResponses, kMaxValueDepth) ?? valueProblem(input.clientCapabilities, kMaxValueDepth);
    if (inputProblem !== undefined) throw new ProtocolError(-32602, `inputResponses or client capabilities are ${inputProblem.message}`);
    const wants = this.#relays.open(call);
    const task: PoolTask = { name, args, ref: handle.ref, wants, auth, trace: activeTrace(), queuedAt: epochNow(), input };
    let outcome: PoolOutcome;
    try {
      outcome = (await this.#piscina.run(task, { signal })) as PoolOutcome;
    } catch (error) {
      if (wants !== undefined) this.#relays.forget(wants.id);
      throw error;
    }
    // What the tool sent before returning reaches the request before its answer.
    if (wants !== undefined) await this.#relays.settled(wants.id, outcome.relayed ?? 0);
    if (outcome.waitedMs !== undefined) this.#onQueueWait?.(name, outcome.waitedMs / 1000);
    return outcome;
  }

  /**
   * Terminates the pool threads. Node aborts the whole process when a thread is terminated while
   * it is still instantiating ES modules (`facade->InstantiateModule` assertion), so threads still
   * loading are waited for first (bounded by kStartingWaitMs).
   */
  async close(): Promise<void> {
    const deadline = Date.now() + kStartingWaitMs;
    for (;;) {
      this.#adoptNew();
      const loading = [...this.#loading.keys()];
      const left = deadline - Date.now();
      if (loading.length === 0 || left <= 0) break;
      let timer: ReturnType<typeof setTimeout> | undefined;
      try {
        await Promise.race([
          Promise.all(loading.map((id) => this.#loaded(id))),
          new Promise<void>((done) => { timer = setTimeout(done, left); }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    }
    await this.#piscina.destroy();
  }
}
