import { attachRegistry } from '../registry/index.js';
import type { Registry, RegistryDescriptor } from '../registry/index.js';
import { Engine } from '../protocol/engine.js';
import type { ListKind } from '../tools/context.js';
import { SessionStore } from '../sessions/store.js';
import type { SessionStoreDescriptor } from '../sessions/store.js';
import { ServerCounters } from '../telemetry/counters.js';
import type { ServerCountersDescriptor } from '../telemetry/counters.js';
import { ToolPool } from '../tools/pool.js';
import type { Catalog } from '../catalog/catalog.js';
import { HttpEndpoint, kLoopbackHosts } from '../transport/http/endpoint.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import type { AdapterOptions, Listening } from '../transport/http/adapter.js';
import { listenNode } from '../transport/http/node/adapter.js';
import { listenUws } from '../transport/http/uws/adapter.js';
import { loadUwsWithSource } from '../transport/http/uws/load.js';
import { nodeReusePort } from '../transport/http/node/reuse-port.js';
import type { ReusePortSupport } from '../transport/http/node/reuse-port.js';
import type { LogSink, ResolvedOptions } from './options.js';
import { kCancelSettleMs, kShutdownReason, settled } from './shutdown.js';

/** The shared memory every thread of one server attaches. Structured-cloneable. */
export interface SharedState {
  readonly registry: RegistryDescriptor;
  readonly counters: ServerCountersDescriptor;
  readonly sessions: SessionStoreDescriptor | undefined;
  /** Seals 2026-07-28 requestState: one key for every thread, so any worker can open a state. */
  readonly stateKey: Uint8Array;
}

export interface Runtime {
  readonly listening: Listening;
  readonly engine: Engine;
  readonly registry: Registry;
  /**
   * Graceful stop: no new connections; running requests get `graceMs` to finish, then every one
   * still running is cancelled through the registry (reason kShutdownReason) and gets a bounded
   * moment to notice before the remaining connections are cut; then the pool closes.
   */
  close(graceMs: number): Promise<void>;
  /** Closes the pool only (the crash path, after `listening.abort()`). */
  closePool(): Promise<void>;
}

export interface RuntimeInput {
  readonly shared: SharedState;
  readonly options: ResolvedOptions;
  readonly catalog: Catalog;
  /** Module the pool loads; undefined in-process (then pool tools cannot run). */
  readonly toolsModule: string | undefined;
  readonly authenticate: Authenticate | undefined;
  /** The port to listen on (the supervisor pins every worker to the first one's port). */
  readonly port: number;
  readonly log: LogSink;
  /** Relays a client's response to the thread that asked (HTTP workers: through the supervisor). */
  readonly forwardResponse?: ((threadId: number, response: string, scope: string) => void) | undefined;
  /** Tells the other threads that a list changed. */
  readonly broadcastListChanged?: ((kind: ListKind) => void) | undefined;
  /** Told each pool thread's id as it starts (`alive`) and once it has exited (see ToolPoolOptions.onThread). */
  readonly onPoolThread?: ((threadId: number, alive: boolean) => void) | undefined;
}

/** Every log line of the adapter decision carries this tag (so a log filter can pick them out). */
export const kAdapterLogTag = 'HTTP adapter:';

export interface AdapterChoice {
  readonly adapter: 'uws' | 'node';
  /** How many HTTP worker threads can share the port (the request, or 1 where node:http cannot). */
  readonly threads: number;
  /** One line: what serves, e.g. "uWebSockets.js from @trufflesuite/uws-js-unofficial v20.30.0 (native uws_linux_x64_115.node)". */
  readonly detail: string;
}

/**
 * Picks the HTTP adapter: uWS when a native binding loads (the official uWebSockets.js first, then
 * the packaged one), else node:http, never silently; and how many HTTP threads it can run:
 * uWS always shares a port (SO_REUSEPORT); node:http only with `reusePort` (Node ≥ 22.12 / ≥ 23.1,
 * Linux). `workers` is the thread count asked for, or undefined when serving in-process. Each
 * warning names the real reason.
 */
export function chooseAdapter(kind: 'auto' | 'uws' | 'node', log: (level: 'warn' | 'error', message: string) => void, workers?: number): AdapterChoice {
  const requested = workers ?? 1;
  const threadCount = (n: number) => `${n} HTTP thread${n === 1 ? '' : 's'}`;
  if (kind !== 'node') {
    try {
      const { source, officialSkipped } = loadUwsWithSource();
      if (officialSkipped !== undefined) log('warn', `sluice: WARNING: ${kAdapterLogTag} ${officialSkipped}; using ${source.description} instead.`);
      return { adapter: 'uws', threads: requested, detail: source.description };
    } catch (error) {
      if (kind === 'uws') throw error;
      const reusePort = nodeReusePort();
      const threads = reusePort.ok ? requested : 1;
      // (No "serving" here: the CLI prints that word only once it really serves.)
      const how = workers === undefined
        ? 'in this thread'
        : reusePort.ok
          ? threads === 1 ? 'on 1 HTTP thread' : `on ${threadCount(threads)} sharing the port through reusePort`
          : `on 1 HTTP thread instead of ${workers}, because ${reusePort.reason}`;
      log('warn', `sluice: WARNING: ${kAdapterLogTag} uWebSockets.js is not available natively (${(error as Error).message}); falling back to node:http, which is several times slower, ${how}.`);
      return { adapter: 'node', threads, detail: nodeDetail(threads, workers, reusePort) };
    }
  }
  const reusePort = nodeReusePort();
  const threads = reusePort.ok ? requested : 1;
  if (workers !== undefined && workers > 1 && !reusePort.ok) {
    log('warn', `sluice: ${kAdapterLogTag} node:http runs 1 HTTP thread instead of ${workers}: it can share a port between threads only with reusePort, and ${reusePort.reason}.`);
  }
  return { adapter: 'node', threads, detail: nodeDetail(threads, workers, reusePort) };
}

function nodeDetail(threads: number, workers: number | undefined, reusePort: ReusePortSupport): string {
  if (workers === undefined) return 'node:http (in-process)';
  if (reusePort.ok) return `node:http, ${threads} thread${threads === 1 ? '' : 's'} sharing the port through reusePort`;
  return `node:http, 1 thread (${reusePort.reason})`;
}

/** One HTTP serving thread's whole stack: registry attachment, engine, endpoint, adapter, pool. */
export async function startRuntime(input: RuntimeInput, adapter: 'uws' | 'node'): Promise<Runtime> {
  const { options, shared } = input;
  const registry = attachRegistry(shared.registry);
  const counters = new ServerCounters(shared.counters);
  const sessions = shared.sessions === undefined ? undefined : new SessionStore(shared.sessions);
  const needsPool = input.catalog.tools.some((t) => t.pool === true);
  const pool = needsPool && input.toolsModule !== undefined
    ? new ToolPool({ toolsModule: input.toolsModule, registry, registryDescriptor: shared.registry, threads: options.poolThreads, onThread: input.onPoolThread })
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
    stateKey: shared.stateKey,
    forwardResponse: input.forwardResponse,
    broadcastListChanged: input.broadcastListChanged,
  });
  const endpoint = new HttpEndpoint(engine, {
    path: options.path,
    allowedOrigins: options.allowedOrigins,
    sessions,
    sessionIdleMs: options.sessionIdleMs,
    maxSessionsPerClient: options.maxSessionsPerClient,
    maxInFlightPerClient: options.maxInFlightPerClient,
    maxStreamBufferBytes: options.maxStreamBufferBytes,
    slowReaderTimeoutMs: options.slowReaderTimeoutMs,
    cors: options.cors,
    authenticate: input.authenticate,
    trustProxy: options.trustProxy,
    maxBodyBytes: options.maxBodyBytes,
    metrics: options.metrics,
    cancelOnDisconnect: options.cancelOnDisconnect,
    exposeWorker: options.exposeWorker,
    allowedHostNames: loopbackHost(options.host) ? new Set([...kLoopbackHosts, ...options.allowedHosts]) : options.allowedHosts.length > 0 ? new Set(options.allowedHosts) : undefined,
  });
  const adapterOptions: AdapterOptions = {
    host: options.host,
    port: input.port,
    maxBodyBytes: options.maxBodyBytes,
    bodyTimeoutMs: options.bodyTimeoutMs,
    // An authenticate hook may read any header (x-api-key…); without one only the fixed list is copied.
    allHeaders: input.authenticate !== undefined,
    handler: (ex) => endpoint.handle(ex),
  };
  const listening = adapter === 'uws' ? await listenUws(adapterOptions) : await listenNode(adapterOptions);
  return {
    listening,
    engine,
    registry,
    close: async (graceMs) => {
      engine.closeListeners(); // listen streams end with their completion result, not a cut
      let cancelledAt = 0;
      const cancel = setTimeout(() => {
        cancelledAt = Date.now();
        engine.cancelAll(kShutdownReason);
      }, graceMs);
      try {
        // Cancelled requests end their exchanges themselves (SSE ends, 202), so this resolves early.
        await listening.close(graceMs + kCancelSettleMs);
      } finally {
        clearTimeout(cancel);
      }
      if (cancelledAt > 0) await settled(engine, cancelledAt + kCancelSettleMs);
      await pool?.close();
    },
    closePool: async () => { await pool?.close(); },
  };
}

/** Whether the server is bound to loopback only (then only loopback Host names are served). */
function loopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}
