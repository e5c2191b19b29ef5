/**
 * One serving thread's protocol stack, for every role (an HTTP thread, the stdio thread): this
 * thread attached to the shared tables, its tool pool, and the engine over them.
 */
import { catalogDifference, catalogMismatch, catalogNames, toolsModuleLabel } from '../catalog/catalog.js';
import type { Catalog } from '../catalog/catalog.js';
import type { EngineConfig } from '../protocol/contract.js';
import { Engine } from '../protocol/engine.js';
import { attachRegistry } from '../registry/index.js';
import type { Registry } from '../registry/index.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import { ServerCounters } from '../telemetry/counters.js';
import { ServerTracer } from '../telemetry/tracing/server.js';
import type { NetworkTransport } from '../telemetry/tracing/server.js';
import type { ListKind } from '../tools/context.js';
import { ToolPool } from '../tools/pool.js';
import type { PoolThreadLoad } from '../tools/pool.js';
import type { ResolvedOptions, ServerLogSink } from './options.js';
import type { SharedState } from './shared-state.js';

/** Where a serving thread's tasks live (the store itself, or a port client to the supervisor's) and who runs them. */
export interface LocalTasks {
  readonly store: TaskStore;
  readonly limits: TaskLimits;
  /** This thread's runner id (config.ts runnerId). */
  readonly runner: string;
}

export interface EngineInput {
  readonly shared: SharedState;
  readonly options: ResolvedOptions;
  readonly catalog: Catalog;
  /**
   * Where pool threads come from: the tools module they load and their compiled entry (named by
   * the process layer, which knows where the build is). Absent in-process, where the config
   * refuses `pool: true` tools. `consoleToStderr`: the pool threads' console writes to stderr.
   */
  readonly pool?: { readonly module: string; readonly entry: URL; readonly consoleToStderr?: boolean } | undefined;
  readonly log: ServerLogSink;
  /** Relays a client's response to the thread that asked (HTTP workers: through the supervisor). */
  readonly forwardResponse?: ((threadId: number, response: string, scope: string, node?: string) => void) | undefined;
  /** Cluster mode: hands a cancel for a request not running on this node to the other nodes. */
  readonly forwardCancel?: EngineConfig['forwardCancel'];
  /** Cluster mode: this node's id (it names the node in server→client request ids). */
  readonly nodeId?: string | undefined;
  /** Tells the other threads that a list changed. */
  readonly broadcastListChanged?: ((kind: ListKind) => void) | undefined;
  /** Tells the other threads that a legacy session (its scope) was DELETEd on this one. */
  readonly broadcastSessionEnded?: ((scope: string, threads: number) => void) | undefined;
  /** Told each pool thread's id as it starts (`alive`) and once it has exited (see ToolPoolOptions.onThread). */
  readonly onPoolThread?: ((threadId: number, alive: boolean) => void) | undefined;
  /** Where this thread's tasks live and who runs them (LocalTasks); absent when tasks are off. */
  readonly tasks?: LocalTasks | undefined;
  /** An authenticate hook checks callers (the engine offers 2025-11-25 tasks/list only then). */
  readonly authenticated?: boolean | undefined;
  /** How requests arrive, for spans (`network.transport`); default 'tcp'. */
  readonly transport?: NetworkTransport | undefined;
}

/** One serving thread's protocol stack: this thread attached to the shared tables, the pool, the engine. */
export interface ServingEngine {
  readonly engine: Engine;
  /** This thread's attachment of the shared registry. */
  readonly registry: Registry;
  /** This thread's counters and histograms block. */
  readonly counters: ServerCounters;
  /** The pool threads of `pool: true` tools; undefined when the catalog has none (or in-process). */
  readonly pool: ToolPool | undefined;
}

/** Builds one serving thread's engine over the shared state (HTTP threads and stdio alike). */
export function createEngine(input: EngineInput): ServingEngine {
  const { options, shared } = input;
  const registry = attachRegistry(shared.registry);
  const counters = new ServerCounters(shared.counters);
  const pool = input.pool !== undefined && input.catalog.tools.some((t) => t.pool === true)
    ? new ToolPool({
      entry: input.pool.entry, toolsModule: input.pool.module, registry, registryDescriptor: shared.registry, threads: options.poolThreads, tracing: options.tracing, consoleToStderr: input.pool.consoleToStderr,
      onThread: input.onPoolThread, onQueueWait: (tool, seconds) => counters.histograms.observePoolWait(tool, seconds),
      judgeLoad: poolLoadJudge(input.pool.module, input.catalog), onThreadProblem: (problem) => input.log('error', `sluice: a replacement pool thread: ${problem}`),
    })
    : undefined;
  const engine = new Engine({
    registry,
    counters,
    catalog: input.catalog,
    serverInfo: options.serverInfo,
    instructions: options.instructions,
    pool,
    streamCancelTimeoutMs: options.streamCancelTimeoutMs,
    clientRequestTimeoutMs: options.clientRequestTimeoutMs,
    log: input.log,
    stateKeys: shared.stateKeys,
    forwardResponse: input.forwardResponse,
    forwardCancel: input.forwardCancel,
    nodeId: input.nodeId,
    broadcastListChanged: input.broadcastListChanged,
    broadcastSessionEnded: input.broadcastSessionEnded,
    tasks: input.tasks,
    authenticated: input.authenticated,
    // Decided once per thread: the `tracing` module (importTracingModule) has run by now.
    tracer: ServerTracer.create(input.transport ?? 'tcp'),
    // Decided once: below 'debug' no request builds a line.
    requestLog: options.logLevel === 'debug' ? (line) => input.log('debug', line) : undefined,
  });
  return { engine, registry, counters, pool };
}

/**
 * What is wrong with a pool thread's load of the tools module, as a sentence: it failed, or the
 * module defines other names there than in the serving thread (each thread imports it itself).
 */
function poolLoadJudge(module: string, catalog: Catalog): (load: PoolThreadLoad, threadId: number) => string | undefined {
  const label = toolsModuleLabel(module);
  const served = catalogNames(catalog);
  return (load, threadId) => {
    if ('failure' in load) return `the tools module ${label} failed to load in pool thread ${threadId}: ${load.failure}`;
    const differs = catalogDifference(served, load.served, ['the serving thread', 'the pool thread']);
    return differs === undefined ? undefined : catalogMismatch(module, `in pool thread ${threadId} than in the thread that serves its calls`, differs);
  };
}
