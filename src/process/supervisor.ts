/**
 * The supervisor: the main thread of an HTTP server. It owns the shared tables, picks the adapter,
 * starts (and restarts) the HTTP workers, relays what they tell each other, runs the janitor and
 * the session sweep, and shuts everything down.
 */
import { channel } from 'node:diagnostics_channel';
import { MessageChannel, Worker, threadId as mainThreadId } from 'node:worker_threads';
import type { RedisContext } from '../cluster/contract.js';
import type { SessionDirectoryHost } from '../cluster/sessions.js';
import { SluiceError } from '../errors.js';
import { verifyOption } from '../auth/options.js';
import type { Registry } from '../registry/index.js';
import type { SessionStore } from '../sessions/store.js';
import { Counter } from '../telemetry/counters.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { MetricsScrape } from '../telemetry/scrape.js';
import { listenMetrics } from '../transport/http/node/metrics-listener.js';
import type { MetricsListening } from '../transport/http/node/metrics-listener.js';
import { catalogNames } from '../catalog/catalog.js';
import type { Catalog, CatalogNames } from '../catalog/catalog.js';
import type { ListKind } from '../tools/context.js';
import type { AdapterKind } from '../transport/http/adapter.js';
import { createSharedTables, kNotReady, serverLog, startJanitor, toolsSource } from '../server/assembly.js';
import type { SharedState } from '../server/assembly.js';
import { startRuntime } from '../server/http-runtime.js';
import type { Runtime } from '../server/http-runtime.js';
import { resolveOptions, taskStoreOption } from '../server/options.js';
import type { LogSink, ResolvedOptions, ServerOptions } from '../server/options.js';
import { MemoryTaskStore } from '../tasks/memory-store.js';
import { TaskStoreHost } from '../tasks/remote-store.js';
import type { TaskStore } from '../tasks/store.js';
import { threadEntry } from './thread-entry.js';
import type { FromHttpWorker, HttpWorkerData, ToHttpWorker } from './worker-messages.js';
import type { ClusterNode } from './cluster-node.js';
import { chooseAdapter } from './adapter-choice.js';
import { checkPortFree, freePort } from './port-probe.js';

/** How many picked ports (port 0) the first HTTP worker tries before the start fails. */
const kFreePortAttempts = 4;

export interface ServerAddress {
  readonly host: string;
  readonly port: number;
  /** The MCP endpoint, e.g. http://127.0.0.1:3000/mcp */
  readonly url: string;
  /** The separate /metrics listener's URL (with `metricsPort`), e.g. http://10.0.0.5:9464/metrics. */
  readonly metricsUrl?: string | undefined;
}

/** A Sluice server: `listen()` to start, `close()` to stop gracefully. */
export interface Server {
  listen(): Promise<ServerAddress>;
  close(): Promise<void>;
  /** The registry, attached in this thread (counters, admin cancels). */
  readonly registry: Registry;
  /** The HTTP adapter in use once listening. */
  readonly adapter: 'uws' | 'node' | undefined;
  /**
   * What serves, in one line, once listening: which uWebSockets.js build (official or the packaged
   * binding, and its binary), or node:http and how many threads share the port (and why only one).
   */
  readonly adapterDetail: string | undefined;
  /** Thread ids of the HTTP workers (empty in-process). */
  readonly workerThreadIds: readonly number[];
  /** What is served (tool and prompt names, resource URIs and templates), once listening. */
  readonly served: CatalogNames | undefined;
  /**
   * Announces that a list changed: every open 2026-07-28 subscriptions/listen stream that asked for
   * it, on every thread, gets `notifications/<kind>/list_changed`.
   */
  notifyListChanged(kind: ListKind): void;
}

export interface ServerHooks {
  /** Where log lines at `logLevel` or above go (default: stderr). */
  log?: LogSink;
  /**
   * @internal Tests only: how often (ms) a node re-checks, against Redis, the cluster sessions it
   * cached while its invalidation subscriber was down (default 5 s).
   */
  clusterSessionRevalidateMs?: number | undefined;
}

/** Creates (but does not start) a server. Options are checked here, synchronously. */
export function createServer(options: ServerOptions, hooks: ServerHooks = {}): Server {
  const resolved = resolveOptions(options);
  const log = serverLog(resolved.logLevel, hooks.log);
  const source = toolsSource(options.tools);
  // A function cannot reach the HTTP workers: a tools module exports verifyToken instead.
  if (source.module !== undefined && verifyOption(options.auth) !== undefined) throw new SluiceError('invalid_option', 'auth.verify works with in-process tools only: export verifyToken from the tools module instead');
  return new SluiceServer(resolved, source.catalog, source.module, options, log, hooks.clusterSessionRevalidateMs);
}

class SluiceServer implements Server {
  readonly registry: Registry;
  adapter: 'uws' | 'node' | undefined;
  adapterDetail: string | undefined;
  readonly #options: ResolvedOptions;
  readonly #catalog: Catalog | undefined;
  readonly #toolsModule: string | undefined;
  readonly #raw: ServerOptions;
  readonly #log: LogSink;
  readonly #counters: ServerCounters;
  /** The separate /metrics listener (`metricsPort`). */
  #metrics: MetricsListening | undefined;
  readonly #sessions: SessionStore | undefined;
  readonly #shared: SharedState;
  readonly #workers = new Map<Worker, number>();
  /** Pool threads alive per HTTP worker: they die with it, unreported, and are released then. */
  readonly #poolThreads = new Map<Worker, Set<number>>();
  #runtime: Runtime | undefined;
  #stopJanitor: (() => void) | undefined;
  #sweep: ReturnType<typeof setInterval> | undefined;
  #closing: Promise<void> | undefined;
  #address: ServerAddress | undefined;
  #served: CatalogNames | undefined;
  /** Every thread's tasks: kept here, served to the HTTP workers over one port each. */
  #taskStore: TaskStore | undefined;
  #taskHost: TaskStoreHost | undefined;
  #taskGauges: ReturnType<typeof setInterval> | undefined;
  /** `runnerLost` calls still running (a user store may be slow): the store closes after them. */
  readonly #runnersLost = new Set<Promise<unknown>>();
  /** Cluster mode: where legacy sessions cross nodes (served to the HTTP workers over one port each). */
  readonly #sessionRevalidateMs: number | undefined;
  #sessionHost: SessionDirectoryHost | undefined;
  /** Cluster mode: the link to Redis and the bus between nodes (loaded only then). */
  #cluster: ClusterNode | undefined;

  constructor(options: ResolvedOptions, catalog: Catalog | undefined, toolsModule: string | undefined, raw: ServerOptions, log: LogSink, sessionRevalidateMs?: number) {
    this.#options = options;
    this.#catalog = catalog;
    this.#toolsModule = toolsModule;
    this.#raw = raw;
    this.#log = log;
    const tables = createSharedTables(raw.registry, options.sessions ? options.maxSessions : undefined, options.requestStateKeys);
    this.registry = tables.registry;
    this.#counters = tables.counters;
    this.#sessions = tables.sessions;
    this.#shared = tables.shared;
    this.#sessionRevalidateMs = sessionRevalidateMs;
  }

  get workerThreadIds(): readonly number[] {
    return [...this.#workers.values()];
  }

  get served(): CatalogNames | undefined {
    if (this.#address === undefined) return undefined;
    return this.#served ??= this.#catalog === undefined ? undefined : catalogNames(this.#catalog);
  }

  notifyListChanged(kind: ListKind): void {
    this.#runtime?.engine.listChanged(kind, true);
    this.#broadcastListChanged(kind);
    this.#cluster?.listChanged(kind);
  }

  /** Tells every HTTP worker (but the one it came from) that a list changed. */
  #broadcastListChanged(kind: ListKind, except?: Worker): void {
    for (const worker of this.#workers.keys()) if (worker !== except) post(worker, { type: 'listChanged', kind });
  }

  /** The task runner id of a thread: `<nodeId>/<threadId>` in cluster mode (runners of every node share one store). */
  #runnerId(threadId: number): string {
    const node = this.#options.cluster?.nodeId;
    return node === undefined ? String(threadId) : `${node}/${threadId}`;
  }

  /** Cluster mode: connects to Redis (rejects with cluster_unavailable unless startDegraded). */
  async #startCluster(): Promise<void> {
    const cluster = this.#options.cluster;
    if (cluster === undefined) return;
    // Loaded here only: without `cluster` no Redis code is ever imported.
    const { ClusterNode } = await import('./cluster-node.js');
    this.#cluster = await ClusterNode.start({
      cluster,
      registry: this.registry,
      counters: this.#counters,
      log: this.#log,
      readiness: this.#shared.readiness,
      deliverAnswer: (thread, text, scope) => {
        if (this.#runtime !== undefined && thread === mainThreadId) {
          this.#runtime.engine.handleRelayedResponse(text, scope);
          return true;
        }
        for (const [worker, id] of this.#workers) {
          if (id !== thread) continue;
          post(worker, { type: 'response', response: text, scope });
          return true;
        }
        return false;
      },
      listChanged: (kind) => {
        this.#runtime?.engine.listChanged(kind, true);
        this.#broadcastListChanged(kind);
      },
    });
  }

  /** The default task store: in memory, or in cluster mode the Redis store every node shares. */
  async #defaultTaskStore(limits: import('../tasks/store.js').TaskLimits): Promise<TaskStore> {
    if (this.#cluster === undefined) return new MemoryTaskStore(limits);
    const { RedisTaskStore } = await import('../cluster/task-store.js');
    return new RedisTaskStore(this.#cluster.context, limits);
  }

  async listen(): Promise<ServerAddress> {
    if (this.#address !== undefined) return this.#address;
    const options = this.#options;
    const choice = chooseAdapter(options.http, this.#log, this.#catalog === undefined ? options.workers : undefined);
    const adapter = choice.adapter;
    this.adapter = adapter;
    this.adapterDetail = choice.detail;
    this.#stopJanitor = startJanitor(this.registry, options);
    try {
      await this.#startCluster();
      if (options.tasks !== false) this.#taskStore = taskStoreOption(this.#raw) ?? await this.#defaultTaskStore(options.tasks.limits);
    } catch (error) {
      await this.close();
      throw error;
    }
    if (options.tasks !== false && this.#taskStore !== undefined) {
      this.#taskHost = new TaskStoreHost(this.#taskStore, { onProblem: (message) => this.#portProblem(message) });
      const store = this.#taskStore;
      if (store instanceof MemoryTaskStore) {
        // /metrics is served by the workers: the supervisor posts the store's size where they read it.
        this.#taskGauges = setInterval(() => {
          const stats = store.stats();
          this.#counters.set(Counter.TasksStored, stats.tasks);
          this.#counters.set(Counter.TaskBytes, stats.bytes);
        }, 1000);
        this.#taskGauges.unref();
      }
    }
    if (this.#sessions !== undefined) {
      const sessions = this.#sessions;
      this.#sweep = setInterval(() => sessions.sweep(options.sessionIdleMs), Math.min(60_000, options.sessionIdleMs));
      this.#sweep.unref();
      // Cluster sessions: loaded only in cluster mode (no cluster code on a single node's path).
      if (this.#cluster !== undefined) {
        const { SessionDirectoryHost } = await import('../cluster/sessions.js');
        this.#sessionHost = new SessionDirectoryHost(this.#cluster.context, { store: sessions, idleMs: options.sessionIdleMs, log: this.#log, revalidateMs: this.#sessionRevalidateMs });
      }
    }
    let port: number;
    if (this.#catalog !== undefined) {
      try {
        if (options.port !== 0) await checkPortFree(options.host, options.port);
        this.#runtime = await startRuntime({
          shared: this.#shared, options, catalog: this.#catalog, toolsModule: undefined, authenticate: this.#raw.authenticate, verifyToken: verifyOption(this.#raw.auth), port: options.port, firstOnPort: true, log: this.#log,
          tasks: this.#taskStore === undefined || options.tasks === false ? undefined : { store: this.#taskStore, limits: options.tasks.limits, runner: this.#runnerId(mainThreadId) },
          sessionDirectory: this.#sessionHost,
          ...(this.#cluster === undefined ? {} : this.#inProcessCluster(this.#cluster)),
        }, adapter);
      } catch (error) {
        await this.close();
        throw error;
      }
      port = this.#runtime.listening.port;
    } else {
      // uWS always shares the port; node:http only where Node has reusePort (chooseAdapter said why not).
      const count = choice.threads;
      // SO_REUSEPORT cannot share a port the kernel picked for the first socket (nor can a
      // replacement worker take it back after a crash): pick one first.
      try {
        if (options.port !== 0) {
          await checkPortFree(options.host, options.port);
          port = await this.#spawn(adapter, options.port, true);
        } else {
          port = await this.#spawnOnFreePort(adapter, options.host);
        }
        await Promise.all(Array.from({ length: count - 1 }, () => this.#spawn(adapter, port)));
      } catch (error) {
        await this.close();
        throw error;
      }
    }
    let metricsUrl: string | undefined;
    if (options.metricsListener !== undefined) {
      const { host: metricsHost, port: metricsPort } = options.metricsListener;
      try {
        const scrape = new MetricsScrape(this.registry, this.#counters, this.#cluster !== undefined);
        this.#metrics = await listenMetrics(metricsHost, metricsPort, () => scrape.text());
      } catch (error) {
        await this.close();
        throw error;
      }
      metricsUrl = `http://${metricsHost.includes(':') ? `[${metricsHost}]` : metricsHost}:${this.#metrics.port}/metrics`;
    }
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    this.#address = { host: options.host, port, url: `http://${host}:${port}${options.path}`, metricsUrl };
    return this.#address;
  }

  /**
   * The first HTTP worker on a port picked for it (port 0). The pick is free when probed, but
   * another process may bind it before the worker does (tests starting servers in parallel do):
   * a listen failure then means "pick again", a few times, rather than a failed start. So does a
   * port that the worker, once listening, finds shared with another SO_REUSEPORT socket (another
   * server whose own probe got the same port in the same window: listenersOn).
   */
  async #spawnOnFreePort(adapter: AdapterKind, host: string): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort(host);
      try {
        return await this.#spawn(adapter, port, true);
      } catch (error) {
        if (attempt >= kFreePortAttempts || !(error instanceof SluiceError) || (error.code !== 'listen_failed' && error.code !== 'port_in_use')) throw error;
        this.#log('info', `sluice: port ${port} was taken before the HTTP worker could listen on it alone; picking another`);
      }
    }
  }

  /** A message between threads could not be read, or a call between them passed its deadline. */
  #portProblem(message: string): void {
    this.#counters.add(Counter.PortProblems);
    this.#log('warn', message);
  }

  /** Starts one HTTP worker on `port` (`firstOnPort`: see HttpWorkerData); resolves with the port it listens on. */
  #spawn(adapter: AdapterKind, port: number, firstOnPort = false): Promise<number> {
    // The worker's end of its task store channel travels with its workerData; ours is served here.
    const channel = this.#taskHost === undefined ? undefined : new MessageChannel();
    const sessionChannel = this.#sessionHost === undefined ? undefined : new MessageChannel();
    const data: HttpWorkerData = { shared: this.#shared, options: this.#options, toolsModule: this.#toolsModule!, adapter, port, firstOnPort, tasks: channel?.port2, sessionDirectory: sessionChannel?.port2 };
    let worker: Worker;
    try {
      const transferList = [channel?.port2, sessionChannel?.port2].filter((p) => p !== undefined);
      worker = new Worker(threadEntry('http-worker'), { workerData: data, transferList });
    } catch (error) {
      channel?.port1.close();
      sessionChannel?.port1.close();
      throw error;
    }
    const threadId = worker.threadId;
    if (channel !== undefined) this.#taskHost!.attach(channel.port1, this.#runnerId(threadId));
    if (sessionChannel !== undefined) this.#sessionHost!.attach(sessionChannel.port1);
    this.#workers.set(worker, threadId);
    return new Promise((resolve, reject) => {
      const state = { started: false };
      // A message the worker sent that this thread cannot read: logged and counted (what it carried is lost).
      worker.on('messageerror', (error) => this.#portProblem(`sluice: a message from HTTP worker ${threadId} could not be read: ${error.message}`));
      worker.on('message', (message: FromHttpWorker) => {
        try {
          this.#onWorkerMessage(worker, message, state, resolve, reject);
        } catch (error) {
          // The supervisor must outlive anything a worker relays.
          this.#log('error', `sluice: could not handle a message from HTTP worker ${threadId}: ${String(error)}`);
        }
      });
      worker.on('error', (error) => {
        this.#log('error', `sluice: HTTP worker ${threadId} crashed: ${error.stack ?? error.message}`);
      });
      worker.once('exit', (code) => {
        this.#workers.delete(worker);
        // Whatever the thread held in shared memory is released, and its in-flight rows swept:
        // the pool threads that died with it too (only pool threads use the registry alone).
        this.registry.threadExited(threadId);
        for (const id of this.#poolThreads.get(worker) ?? []) this.registry.threadExited(id);
        this.#poolThreads.delete(worker);
        this.#counters.threadExited(threadId);
        this.#sessions?.threadExited(threadId);
        this.registry.cleanup(Number.MAX_SAFE_INTEGER);
        this.#runnerLost(threadId);
        if (!state.started) {
          reject(new SluiceError('listen_failed', `HTTP worker exited (code ${code}) before listening`));
          return;
        }
        if (this.#closing === undefined) {
          this.#log('error', `sluice: HTTP worker ${threadId} exited (code ${code}); starting a replacement`);
          const again = setTimeout(() => {
            if (this.#closing === undefined) this.#spawn(adapter, this.#address?.port ?? port).catch((error: unknown) => this.#log('error', `sluice: replacement worker failed: ${String(error)}`));
          }, 100);
          again.unref();
        }
      });
    });
  }

  #onWorkerMessage(worker: Worker, message: FromHttpWorker, state: { started: boolean }, resolve: (port: number) => void, reject: (error: Error) => void): void {
    switch (message.type) {
      case 'listening':
        state.started = true;
        this.#served ??= message.served;
        resolve(message.port);
        break;
      case 'failed':
        // The tools module not loading is the user's to fix, not a listen failure: say so as it is.
        // A port another process took while we started is port_in_use, as when the probe sees it.
        reject(message.code === 'tools_module_failed' || message.code === 'port_in_use' ? new SluiceError(message.code, message.message) : new SluiceError('listen_failed', `HTTP worker failed to start: ${message.message}`));
        break;
      case 'event':
        channel(message.channel).publish(message.message);
        break;
      case 'log':
        this.#log(message.level, message.message);
        break;
      case 'closed':
        break;
      case 'poolThread': {
        if (typeof message.threadId !== 'number' || !this.#workers.has(worker)) break;
        let ids = this.#poolThreads.get(worker);
        if (ids === undefined) this.#poolThreads.set(worker, ids = new Set());
        if (message.alive) ids.add(message.threadId);
        else ids.delete(message.threadId);
        break;
      }
      case 'listChanged':
        this.#broadcastListChanged(message.kind, worker);
        this.#cluster?.listChanged(message.kind);
        break;
      case 'response':
        // A client answered a request of another worker's tool: hand it over (as text).
        if (typeof message.response !== 'string') break;
        if (message.node !== undefined) {
          // Another node's: over the bus (a node not in cluster mode never names one).
          this.#cluster?.answer(message.node, message.target, message.response, message.scope);
          break;
        }
        for (const [other, id] of this.#workers) if (id === message.target) post(other, { type: 'response', response: message.response, scope: message.scope });
        break;
      case 'cancel':
        this.#cluster?.cancel(message.requestId, message.reason, message.scope);
        break;
    }
  }

  /** The in-process runtime's cluster hooks: answers, cancels and list changes go over the bus. */
  #inProcessCluster(cluster: ClusterNode): Pick<import('../server/http-runtime.js').RuntimeInput, 'forwardResponse' | 'forwardCancel' | 'broadcastListChanged' | 'nodeId'> {
    return {
      nodeId: this.#options.cluster?.nodeId,
      // One thread serves: an answer forwarded from here is always another node's.
      forwardResponse: (thread, text, scope, node) => { if (node !== undefined) cluster.answer(node, thread, text, scope); },
      forwardCancel: (requestId, reason, scope) => cluster.cancel(requestId, reason, scope),
      broadcastListChanged: (kind) => cluster.listChanged(kind),
    };
  }

  /** The worker is gone: its unfinished tasks fail (their clients see why instead of waiting for the TTL). */
  #runnerLost(threadId: number): void {
    const store = this.#taskStore;
    if (store === undefined) return;
    const lost = store.runnerLost(this.#runnerId(threadId), 'the worker running this task exited')
      .catch((error: unknown) => this.#log('error', `sluice: could not fail the tasks of HTTP worker ${threadId}: ${String(error)}`))
      .finally(() => this.#runnersLost.delete(lost));
    this.#runnersLost.add(lost);
  }

  close(): Promise<void> {
    this.#closing ??= this.#close();
    return this.#closing;
  }

  async #close(): Promise<void> {
    // First of all /readyz answers 503 (and initialize is refused with 503 + Retry-After): the
    // balancer stops sending new clients here while the rest of the shutdown runs.
    Atomics.or(this.#shared.readiness, 0, kNotReady.Draining);
    const started = Date.now();
    let grace = this.#options.shutdownGraceMs;
    this.#stopJanitor?.();
    if (this.#sweep !== undefined) clearInterval(this.#sweep);
    await this.#metrics?.close();
    try {
      if (this.#cluster !== undefined && this.#address !== undefined) {
        // Cluster mode drains with the listener open: requests the balancer still sends (before it
        // has seen /readyz) are served, until nothing runs or the grace ends; then the usual close
        // gives what still runs the rest of the grace.
        await this.#drain(grace);
        grace = Math.max(0, grace - (Date.now() - started));
      }
      if (this.#runtime !== undefined) await this.#runtime.close(grace);
      await Promise.all([...this.#workers.keys()].map((worker) => new Promise<void>((done) => {
        // Each worker closes its listen socket and connections itself (uWS aborts the process
        // otherwise); terminate only one that does not finish in time.
        const timer = setTimeout(() => { void worker.terminate(); }, grace + 2_000);
        worker.once('exit', () => { clearTimeout(timer); done(); });
        post(worker, { type: 'close', graceMs: grace });
      })));
    } finally {
      // The tasks outlive every thread that could still use them, then go.
      if (this.#taskGauges !== undefined) clearInterval(this.#taskGauges);
      await Promise.all(this.#runnersLost);
      this.#taskHost?.close();
      try {
        await this.#taskStore?.close();
        await this.#sessionHost?.close();
      } finally {
        // The store may use the link's connection: the link goes last.
        await this.#cluster?.close();
      }
    }
  }

  /** Cluster mode's drain: listen streams end (their clients reconnect elsewhere), then waits for no request in flight, at most `graceMs`. */
  async #drain(graceMs: number): Promise<void> {
    this.#runtime?.engine.closeListeners();
    for (const worker of this.#workers.keys()) post(worker, { type: 'drain' });
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && this.registry.counters().inFlight > 0) await new Promise((r) => setTimeout(r, 20));
  }
}

/** The one way a message reaches a worker: typed. */
function post(worker: Worker, message: ToHttpWorker): void {
  worker.postMessage(message);
}
