import type { AuthInfo } from '../auth/contract.js';
import { MessageChannel } from 'node:worker_threads';
import type { Worker } from 'node:worker_threads';
import { Piscina } from 'piscina';
import type { Registry, RegistryDescriptor, TrackHandle } from '../registry/index.js';
import type { ProgressSink } from './context.js';
import type { CallToolResult } from './define.js';
import type { ProtocolErrorWire } from '../errors.js';
import { ProtocolError } from '../errors.js';
import { kMaxValueDepth, valueProblem } from '../ports/value-bounds.js';
import { activeTrace } from '../telemetry/tracing/otel.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';

/**
 * What a pool task sends back, as plain data: the tool's result (a failure other than a protocol
 * error is already `isError` content), or the ProtocolError it threw, which the engine answers as a
 * JSON-RPC error exactly as for an inline tool (an Error subclass would arrive as a bare Error).
 */
export type PoolOutcome = (
  | { readonly ok: true; readonly result: CallToolResult }
  | { readonly ok: false; readonly error: ProtocolErrorWire }
) & {
  /** How long the call waited, from `run` until a pool thread started it (ms). */
  readonly waitedMs?: number | undefined;
};

/** What the pool thread gets per task (structured-cloneable). */
export interface PoolTask {
  name: string;
  args: Record<string, unknown>;
  ref: TrackHandle['ref'];
  progress: import('node:worker_threads').MessagePort | undefined;
  /** The caller's verified token (`ctx.auth`), plain data; undefined without `auth`. */
  auth?: AuthInfo | undefined;
  /** The request span's trace context (its tool span in the pool thread is a child); undefined untraced. */
  trace?: CarriedTrace | undefined;
  /** When `run` queued it (epoch ms, high resolution: comparable across threads). */
  queuedAt: number;
}

/** What a pool thread gets as its workerData. */
export interface PoolThreadData {
  toolsModule: string;
  registry: RegistryDescriptor;
  /** The `tracing` module, imported in the pool thread before the tools module; undefined: none. */
  tracing?: string | undefined;
}

/**
 * A pool thread's own lifecycle message (piscina relays anything but its READY as a 'message'
 * event): `starting` before it joins the registry's roster, `ready` once every module is loaded.
 */
export interface PoolThreadMessage {
  type: 'sluice:pool-thread';
  state: 'starting' | 'ready';
  threadId: number;
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

  constructor(options: ToolPoolOptions) {
    const threads = options.threads ?? 1;
    this.#registry = options.registry;
    this.#onThread = options.onThread;
    this.#onQueueWait = options.onQueueWait;
    const data: PoolThreadData = { toolsModule: options.toolsModule, registry: options.registryDescriptor, tracing: options.tracing };
    this.#piscina = new Piscina({
      filename: options.entry.href,
      minThreads: threads,
      maxThreads: threads,
      idleTimeout: 60_000,
      workerData: data,
    });
    this.#piscina.on('message', (message: unknown) => {
      if (!isPoolThreadMessage(message)) return;
      if (message.state === 'ready') this.#settle(message.threadId, true);
      else this.#adoptNew(); // a replacement thread piscina started after a kill
    });
    this.#adoptNew(); // the first threads exist as soon as piscina is constructed
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

  async run(name: string, args: Record<string, unknown>, handle: TrackHandle, sink: ProgressSink | undefined, signal: AbortSignal, auth?: AuthInfo): Promise<PoolOutcome> {
    // The arguments cross to a pool thread: refused here (JSON-RPC invalid params) if that thread could not read them.
    const problem = valueProblem(args, kMaxValueDepth);
    if (problem !== undefined) throw new ProtocolError(-32602, `arguments are ${problem.message}`);
    let channel: MessageChannel | undefined;
    if (sink !== undefined) {
      channel = new MessageChannel();
      channel.port1.on('message', (m: [number, number | undefined, string | undefined]) => sink(m[0], m[1], m[2]));
    }
    const task: PoolTask = { name, args, ref: handle.ref, progress: channel?.port2, auth, trace: activeTrace(), queuedAt: epochNow() };
    try {
      const outcome = (await this.#piscina.run(task, { signal, transferList: channel === undefined ? [] : [channel.port2] })) as PoolOutcome;
      if (outcome.waitedMs !== undefined) this.#onQueueWait?.(name, outcome.waitedMs / 1000);
      return outcome;
    } finally {
      channel?.port1.close();
    }
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
          Promise.all(loading.map((id) => new Promise<void>((done) => {
            const waiting = this.#loading.get(id);
            if (waiting === undefined) done();
            else waiting.push(done);
          }))),
          new Promise<void>((done) => { timer = setTimeout(done, left); }),
        ]);
      } finally {
        clearTimeout(timer);
      }
    }
    await this.#piscina.destroy();
  }
}
