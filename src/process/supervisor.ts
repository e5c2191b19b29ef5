/**
 * The supervisor: the main thread of an HTTP server. It resolves the config once, owns the node's
 * services (shared tables, janitor, tasks, sessions, cluster link), serves in this thread (tools
 * given as an array) or starts the HTTP workers (a tools module), serves the separate /metrics
 * listener, and shuts everything down through one close list.
 */
import { threadId as mainThreadId } from 'node:worker_threads';
import { catalogNames } from '../catalog/catalog.js';
import type { CatalogNames } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import type { Registry } from '../registry/index.js';
import { CloseList } from '../server/close-list.js';
import { resolveConfig } from '../server/config.js';
import type { ServerConfig } from '../server/config.js';
import type { ClusterNode } from '../server/cluster-node.js';
import type { HttpStack, HttpStackInput } from '../server/http-stack.js';
import { NodeServices } from '../server/node-services.js';
import type { ClusterHooks } from '../server/node-services.js';
import type { ServerLogSink, ServerOptions } from '../server/options.js';
import { kNotReady } from '../transport/http/readiness.js';
import { Counter } from '../telemetry/counters.js';
import { MetricsScrape } from '../telemetry/scrape.js';
import type { ListKind } from '../tools/context.js';
import type { AdapterKind } from '../transport/http/adapter.js';
import { listenMetrics } from '../transport/http/node/metrics-listener.js';
import { chooseAdapter } from './adapter-choice.js';
import { HttpWorkers } from './http-workers.js';
import { checkPortFree } from './port-probe.js';

export interface ServerAddress {
  readonly host: string;
  readonly port: number;
  /** The MCP endpoint, e.g. http://127.0.0.1:3000/mcp */
  readonly url: string;
  /** The separate /metrics listener's URL (with `metricsPort`), e.g. http://10.0.0.5:9464/metrics. */
  readonly metricsUrl?: string | undefined;
}

/**
 * A Sluice server: `listen()` to start (once: every call answers the same start; after `close()`,
 * `server_closed`), `close()` to stop gracefully. A process that exits without
 * `close()` still ends the workers' sockets first (up to 500 ms), so it exits with its own code.
 */
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
  /**
   * Where log lines at `logLevel` or above go (default: stderr). A line it throws on (or whose
   * promise rejects) goes to stderr instead, after one line saying why.
   */
  log?: ServerLogSink;
  /**
   * @internal Tests only: how often (ms) a node re-checks, against Redis, the cluster sessions it
   * cached while its invalidation subscriber was down (default 5 s).
   */
  clusterSessionRevalidateMs?: number | undefined;
}

/** Creates (but does not start) a server. Options are checked here, synchronously. */
export function createServer(options: ServerOptions, hooks: ServerHooks = {}): Server {
  return new SluiceServer(resolveConfig(options, hooks.log), hooks.clusterSessionRevalidateMs);
}

class SluiceServer implements Server {
  readonly registry: Registry;
  adapter: 'uws' | 'node' | undefined;
  adapterDetail: string | undefined;
  readonly #config: ServerConfig;
  readonly #services: NodeServices;
  readonly #closer: CloseList;
  readonly #sessionRevalidateMs: number | undefined;
  /** In-process: this thread's own HTTP stack. */
  #stack: HttpStack | undefined;
  /** Module form: the HTTP workers. */
  #workers: HttpWorkers | undefined;
  #address: ServerAddress | undefined;
  #listening: Promise<ServerAddress> | undefined;
  #closing: Promise<void> | undefined;
  #served: CatalogNames | undefined;

  constructor(config: ServerConfig, sessionRevalidateMs: number | undefined) {
    this.#config = config;
    this.#services = new NodeServices(config, 'http');
    this.registry = this.#services.tables.registry;
    this.#closer = new CloseList(config.log);
    this.#sessionRevalidateMs = sessionRevalidateMs;
  }

  get workerThreadIds(): readonly number[] {
    return this.#workers?.threadIds ?? [];
  }

  get served(): CatalogNames | undefined {
    if (this.#address === undefined) return undefined;
    const catalog = this.#config.tools.catalog;
    return this.#served ??= catalog === undefined ? this.#workers?.served : catalogNames(catalog);
  }

  notifyListChanged(kind: ListKind): void {
    this.#listChangedHere(kind);
    this.#services.cluster?.listChanged(kind);
  }

  /** Every serving thread of this node hears of a list change. */
  #listChangedHere(kind: ListKind): void {
    this.#stack?.engine.listChanged(kind, true);
    this.#workers?.broadcastListChanged(kind);
  }

  listen(): Promise<ServerAddress> {
    // One start per server, however many callers ask, and none once closed: a second start would
    // leak the first one's threads, and one after close() would serve with nothing left to stop it.
    if (this.#closing !== undefined) return Promise.reject(new SluiceError('server_closed', 'this server was closed: it does not listen again (create another with createServer)'));
    return this.#listening ??= this.#start();
  }

  async #start(): Promise<ServerAddress> {
    const { options, tools } = this.#config;
    const choice = chooseAdapter(options.http, this.#config.log, tools.catalog === undefined ? options.workers : undefined);
    this.adapter = choice.adapter;
    this.adapterDetail = choice.detail;
    let port: number;
    let metricsUrl: string | undefined;
    try {
      await this.#services.start(this.#closer, options.cluster === undefined ? undefined : this.#clusterHooks());
      port = tools.catalog === undefined ? await this.#startWorkers(choice.adapter, choice.threads) : await this.#serveInProcess(choice.adapter);
      const cluster = this.#services.cluster;
      if (cluster !== undefined) this.#closer.add('the cluster drain', (shutdown) => this.#drain(shutdown.graceLeft()));
      metricsUrl = await this.#startMetrics(cluster !== undefined);
    } catch (error) {
      await this.#closer.close(options.shutdownGraceMs);
      throw error;
    }
    // First of all at close, /readyz answers 503 (and initialize is refused with 503 + Retry-After):
    // the balancer stops sending new clients here while the rest of the shutdown runs.
    const readiness = this.#services.tables.shared.readiness;
    this.#closer.add('readiness', () => { Atomics.or(readiness, 0, kNotReady.Draining); });
    const host = options.host.includes(':') ? `[${options.host}]` : options.host;
    this.#address = { host: options.host, port, url: `http://${host}:${port}${options.path}`, metricsUrl };
    return this.#address;
  }

  close(): Promise<void> {
    return this.#closing ??= this.#closeAfterStart();
  }

  async #closeAfterStart(): Promise<void> {
    // A start under way registers each part's close step as the part starts: closing before it
    // has finished would leave the parts it starts afterwards (HTTP workers) running. Let it end.
    await this.#listening?.catch(() => undefined);
    return this.#closer.close(this.#config.options.shutdownGraceMs);
  }

  /** Tools given as an array: this thread serves them itself. */
  async #serveInProcess(adapter: AdapterKind): Promise<number> {
    const { options, tools, log } = this.#config;
    if (options.port !== 0) await checkPortFree(options.host, options.port);
    const services = this.#services;
    const cluster = services.cluster;
    const input: HttpStackInput = {
      shared: services.tables.shared, options, catalog: tools.catalog!, log, adapter, port: options.port, firstOnPort: true,
      authenticate: this.#config.authenticate, verifyToken: this.#config.verifyToken,
      tasks: services.localTasks(mainThreadId), sessionDirectory: services.sessionHost,
      ...(cluster === undefined ? {} : inProcessCluster(cluster, options.cluster?.nodeId)),
    };
    // Imported here: the engine and the HTTP transport under it are not loaded by a supervisor of
    // HTTP workers, nor by every thread whose tools module imports 'sluice' (see src/index.ts).
    const { startHttpStack } = await import('../server/http-stack.js');
    this.#stack = await startHttpStack(input, this.#closer);
    return this.#stack.listening.port;
  }

  /** A tools module: the HTTP workers serve it, `threads` of them on one port. */
  #startWorkers(adapter: AdapterKind, threads: number): Promise<number> {
    this.#workers = new HttpWorkers(this.#config, this.#services, adapter, this.#closer, (message) => {
      this.#services.tables.counters.add(Counter.PortProblems);
      this.#config.log('warn', message);
    });
    return this.#workers.start(threads);
  }

  /** The separate /metrics listener (`metricsPort`); its URL, or undefined without one. */
  async #startMetrics(cluster: boolean): Promise<string | undefined> {
    const listener = this.#config.options.metricsListener;
    if (listener === undefined) return undefined;
    const { registry, counters } = this.#services.tables;
    const scrape = new MetricsScrape(registry, counters, cluster);
    const metrics = await listenMetrics(listener.host, listener.port, () => scrape.text());
    this.#closer.add('the /metrics listener', () => metrics.close());
    return `http://${listener.host.includes(':') ? `[${listener.host}]` : listener.host}:${metrics.port}/metrics`;
  }

  /** Where cluster mode delivers what other nodes send to this one. */
  #clusterHooks(): ClusterHooks {
    return {
      deliverAnswer: (thread, text, scope, via) => {
        if (this.#stack !== undefined && thread === mainThreadId) {
          this.#stack.engine.handleRelayedResponse(text, scope, via);
          return true;
        }
        return this.#workers?.deliver(thread, text, scope, via) ?? false;
      },
      listChanged: (kind) => this.#listChangedHere(kind),
      sessionEnded: (scope) => {
        this.#stack?.engine.sessionEnded(scope);
        this.#workers?.broadcastSessionEnded(scope);
      },
      sessionRevalidateMs: this.#sessionRevalidateMs,
    };
  }

  /**
   * Cluster mode drains with the listener open: requests the balancer still sends (before it has
   * seen /readyz) are served, until nothing runs or the grace ends; listen streams end first (their
   * clients reconnect elsewhere). Then the listener's close gives what still runs the rest of the grace.
   */
  async #drain(graceMs: number): Promise<void> {
    this.#stack?.engine.closeListeners();
    this.#workers?.drain();
    const deadline = Date.now() + graceMs;
    while (Date.now() < deadline && this.registry.counters().inFlight > 0) await new Promise((r) => setTimeout(r, 20));
  }
}

/** The in-process stack's cluster hooks: answers, cancels and list changes go over the bus. */
function inProcessCluster(cluster: ClusterNode, nodeId: string | undefined): Pick<HttpStackInput, 'forwardResponse' | 'forwardCancel' | 'broadcastListChanged' | 'nodeId'> {
  return {
    nodeId,
    // One thread serves: an answer forwarded from here is always another node's.
    forwardResponse: (thread, text, scope, node) => { if (node !== undefined) cluster.answer(node, thread, text, scope); },
    forwardCancel: (requestId, reason, scope, trace) => cluster.cancel(requestId, reason, scope, trace),
    broadcastListChanged: (kind) => cluster.listChanged(kind),
  };
}
