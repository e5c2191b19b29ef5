/**
 * How a server is put together, once, for every form (HTTP supervisor, an HTTP thread, stdio):
 * the tools option, the default log, the shared tables (sized from one constant), the janitor,
 * the requestState key, and the engine of one serving thread with its pool.
 */
import { randomBytes } from 'node:crypto';
import { collectCatalog, importToolsModule, toolsModuleUrl } from '../catalog/catalog.js';
import type { Catalog } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import { Engine } from '../protocol/engine.js';
import { attachRegistry, createRegistry } from '../registry/index.js';
import type { Registry, RegistryDescriptor, RegistryOptions } from '../registry/index.js';
import { SessionStore } from '../sessions/store.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import type { SessionStoreDescriptor } from '../sessions/store.js';
import { ServerCounters } from '../telemetry/counters.js';
import type { ServerCountersDescriptor } from '../telemetry/counters.js';
import { ServerTracer } from '../telemetry/tracing/server.js';
import type { NetworkTransport } from '../telemetry/tracing/server.js';
import type { ListKind } from '../tools/context.js';
import { ToolPool } from '../tools/pool.js';
import { filterLog } from './options.js';
import type { LogLevel, LogSink, ResolvedOptions } from './options.js';

/**
 * Threads the shared tables make room for: HTTP workers, their pool threads, restarts in flight
 * (stdio: the one thread and its pool). Every table of a server is sized from this.
 */
export const kMaxThreads = 1024;

/** The shared memory every thread of one server attaches. Structured-cloneable. */
export interface SharedState {
  readonly registry: RegistryDescriptor;
  readonly counters: ServerCountersDescriptor;
  readonly sessions: SessionStoreDescriptor | undefined;
  /**
   * Seal 2026-07-28 requestState, newest first: the same ring in every thread, so any worker can
   * open a state (and, given in options, every node and a restarted one).
   */
  readonly stateKeys: readonly Uint8Array[];
  /** Readiness flags (`kNotReady`), written by the owning thread, read by /readyz in every thread. */
  readonly readiness: Int32Array;
}

/** Bits of `SharedState.readiness[0]` (0: ready): Draining makes /readyz 503, ClusterDown only shows in its body. */
export const kNotReady = {
  /** Shutting down: the load balancer should stop sending traffic. */
  Draining: 1,
  /** Cluster mode: the link to Redis is down (what needs another node fails; the node stays ready). */
  ClusterDown: 2,
} as const;

/** The reason /readyz gives for a readiness word (undefined: ready). */
export function notReadyReason(flags: number): string | undefined {
  if (flags === 0) return undefined;
  if ((flags & kNotReady.Draining) !== 0) return 'draining';
  return 'cluster link down';
}

/** The tables a server owns (made in the thread that owns the server), and what other threads attach. */
export interface SharedTables {
  readonly registry: Registry;
  readonly counters: ServerCounters;
  readonly sessions: SessionStore | undefined;
  readonly shared: SharedState;
}

/** Allocates a server's shared tables: registry, counters, legacy sessions (`maxSessions`, or none). */
export function createSharedTables(registryOptions: RegistryOptions | undefined, maxSessions: number | undefined, stateKeys?: readonly Uint8Array[]): SharedTables {
  const registry = createRegistry({ maxThreads: kMaxThreads, ...registryOptions });
  const counters = ServerCounters.create(kMaxThreads);
  const sessions = maxSessions === undefined ? undefined : SessionStore.create(maxSessions, kMaxThreads);
  return {
    registry, counters, sessions,
    shared: {
      registry: registry.descriptor, counters: counters.descriptor, sessions: sessions?.descriptor,
      stateKeys: stateKeys ?? [randomBytes(32)],
      readiness: new Int32Array(new SharedArrayBuffer(4)),
    },
  };
}

/** The `tools` option: a module every thread loads, or an array served in this thread. */
export type ToolsSource = { readonly module: string; readonly catalog?: undefined } | { readonly module?: undefined; readonly catalog: Catalog };

/** Checks the `tools` option (synchronously; a module is only named here, not loaded). */
export function toolsSource(tools: unknown): ToolsSource {
  if (typeof tools === 'string' || tools instanceof URL) return { module: toolsModuleUrl(tools) };
  if (!Array.isArray(tools)) throw new SluiceError('invalid_option', 'tools must be an array of tools or a module path/URL');
  const catalog = collectCatalog(tools);
  const count = catalog.tools.length + catalog.resources.length + catalog.templates.length + catalog.prompts.length;
  if (count !== tools.length) throw new SluiceError('invalid_option', 'tools must all come from defineTool, defineResource, defineResourceTemplate or definePrompt');
  const pooled = catalog.tools.find((t) => t.pool === true);
  if (pooled !== undefined) throw new SluiceError('invalid_option', `tool ${pooled.name} runs in the pool: give the tools as a module so pool threads can load it`);
  return { catalog };
}

/** The catalog of a tools source, importing the module when it is one. */
export async function loadCatalog(source: ToolsSource): Promise<Catalog> {
  return source.catalog ?? (await importToolsModule(source.module)).catalog;
}

/** The server log: `sink` (default: stderr), lines below `level` dropped. */
export function serverLog(level: LogLevel, sink: LogSink | undefined): LogSink {
  return filterLog(level, sink ?? ((_level, message) => { process.stderr.write(`${message}\n`); }));
}

/** Starts the registry's cancellation janitor as the options say; returns its stop, or undefined when off. */
export function startJanitor(registry: Registry, options: ResolvedOptions): (() => void) | undefined {
  return options.janitor === false ? undefined : registry.startJanitor(options.janitor);
}

export interface EngineInput {
  readonly shared: SharedState;
  readonly options: ResolvedOptions;
  readonly catalog: Catalog;
  /** Module the pool loads; undefined in-process (then pool tools cannot run). */
  readonly toolsModule: string | undefined;
  /** The compiled pool thread entry (given with `toolsModule` by the process that starts threads). */
  readonly poolEntry?: URL | undefined;
  readonly log: LogSink;
  /** Relays a client's response to the thread that asked (HTTP workers: through the supervisor). */
  readonly forwardResponse?: ((threadId: number, response: string, scope: string, node?: string) => void) | undefined;
  /** Cluster mode: hands a cancel for a request not running on this node to the other nodes. */
  readonly forwardCancel?: ((requestId: string | number, reason: string | undefined, scope: string) => void) | undefined;
  /** Cluster mode: this node's id (it names the node in server→client request ids). */
  readonly nodeId?: string | undefined;
  /** Tells the other threads that a list changed. */
  readonly broadcastListChanged?: ((kind: ListKind) => void) | undefined;
  /** Told each pool thread's id as it starts (`alive`) and once it has exited (see ToolPoolOptions.onThread). */
  readonly onPoolThread?: ((threadId: number, alive: boolean) => void) | undefined;
  /**
   * Where this thread's tasks live (the store itself, or a TaskStoreClient to the supervisor's) and
   * who runs them (this thread's id); absent when tasks are off.
   */
  readonly tasks?: { readonly store: TaskStore; readonly limits: TaskLimits; readonly runner: string } | undefined;
  /** An authenticate hook checks callers (the engine offers 2025-11-25 tasks/list only then). */
  readonly authenticated?: boolean | undefined;
  /** How requests arrive, for spans (`network.transport`); default 'tcp'. */
  readonly transport?: NetworkTransport | undefined;
}

/** One serving thread's protocol stack: this thread attached to the shared tables, the pool, the engine. */
export interface ServingEngine {
  readonly engine: Engine;
  readonly registry: Registry;
  readonly counters: ServerCounters;
  readonly pool: ToolPool | undefined;
}

/** Builds one serving thread's engine over the shared state (HTTP threads and stdio alike). */
export function createEngine(input: EngineInput): ServingEngine {
  const { options, shared } = input;
  const registry = attachRegistry(shared.registry);
  const counters = new ServerCounters(shared.counters);
  const pool = input.toolsModule !== undefined && input.poolEntry !== undefined && input.catalog.tools.some((t) => t.pool === true)
    ? new ToolPool({ entry: input.poolEntry, toolsModule: input.toolsModule, registry, registryDescriptor: shared.registry, threads: options.poolThreads, onThread: input.onPoolThread })
    : undefined;
  const engine = new Engine({
    registry,
    counters,
    catalog: input.catalog,
    serverInfo: options.serverInfo,
    instructions: options.instructions,
    pool,
    streamCancelTimeoutMs: options.streamCancelTimeoutMs,
    log: input.log,
    stateKeys: shared.stateKeys,
    forwardResponse: input.forwardResponse,
    forwardCancel: input.forwardCancel,
    nodeId: input.nodeId,
    broadcastListChanged: input.broadcastListChanged,
    tasks: input.tasks,
    authenticated: input.authenticated,
    // Decided once per thread: the `tracing` module (importTracingModule) has run by now.
    tracer: ServerTracer.create(input.transport ?? 'tcp'),
  });
  return { engine, registry, counters, pool };
}
