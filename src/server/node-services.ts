/**
 * What the thread that owns a server (the supervisor, or the stdio thread) runs beside its
 * serving threads: the shared tables, the cancellation janitor, the task store, and for HTTP the
 * legacy session sweep and, in cluster mode, the Redis link and the session directory. Each part
 * registers its close step on the server's CloseList as it starts.
 */
import type { SessionDirectoryHost } from '../cluster/sessions.js';
import { deriveScope } from '../registry/index.js';
import { MemoryTaskStore } from '../tasks/stores/memory-store.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import { Counter } from '../telemetry/counters.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import type { ListKind } from '../tools/context.js';
import type { ClusterNode } from './cluster-node.js';
import type { CloseList } from './close-list.js';
import { runnerId } from './config.js';
import type { ServerConfig } from './config.js';
import { createSharedTables } from './shared-state.js';
import type { LocalTasks } from './serving-engine.js';
import type { SharedTables } from './shared-state.js';

/** How often the supervisor posts the memory store's size where /metrics (in every thread) reads it. */
const kTaskGaugeMs = 1000;

/** The owner's hooks into cluster mode: where relayed answers and list changes go. */
export interface ClusterHooks {
  /** Hands another node's relayed answer to this node's thread `thread` (false: no such thread). */
  deliverAnswer(thread: number, text: string, scope: string, via: string): boolean;
  /** Another node's list changed: tell every serving thread here. */
  listChanged(kind: ListKind): void;
  /** Another node ended a legacy session (its registry scope) this node held: tell every serving thread here. */
  sessionEnded(scope: string): void;
  /** Tests only: how often a node re-checks its cached cluster sessions while invalidation is down. */
  readonly sessionRevalidateMs?: number | undefined;
}

export class NodeServices {
  readonly tables: SharedTables;
  readonly #config: ServerConfig;
  #taskStore: TaskStore | undefined;
  #cluster: ClusterNode | undefined;
  #sessionHost: SessionDirectoryHost | undefined;
  /** `runnerLost` calls still running (a user store may be slow): the store closes after them. */
  readonly #runnersLost = new Set<Promise<unknown>>();

  /** Allocates the shared tables (legacy sessions only for HTTP with `sessions` on). */
  constructor(config: ServerConfig, role: 'http' | 'stdio') {
    this.#config = config;
    const { options } = config;
    const sessions = role === 'http' && options.sessions ? options.maxSessions : undefined;
    this.tables = createSharedTables(options.registry, sessions, options.requestStateKeys);
  }

  get taskStore(): TaskStore | undefined {
    return this.#taskStore;
  }

  get cluster(): ClusterNode | undefined {
    return this.#cluster;
  }

  get sessionHost(): SessionDirectoryHost | undefined {
    return this.#sessionHost;
  }

  /**
   * Starts the janitor, the cluster link (HTTP, `cluster` set: rejects with cluster_unavailable
   * unless startDegraded), the task store, the session sweep and directory. On a failure the
   * caller closes `closer`: what had started is on it.
   */
  async start(closer: CloseList, cluster?: ClusterHooks): Promise<void> {
    const { options } = this.#config;
    const registry = this.tables.registry;
    if (options.janitor !== false) {
      const stopJanitor = registry.startJanitor(options.janitor);
      closer.add('the cancellation janitor', stopJanitor);
    }
    if (cluster !== undefined) await this.#startCluster(closer, cluster);
    if (options.tasks !== false) await this.#startTasks(closer, options.tasks.limits);
    const sessions = this.tables.sessions;
    if (sessions !== undefined) {
      const { histograms } = this.tables.counters;
      sessions.observeEnds((seconds) => histograms.observeSession(seconds)); // sessions the sweep expires
      const sweep = setInterval(() => sessions.sweep(options.sessionIdleMs), Math.min(60_000, options.sessionIdleMs));
      sweep.unref();
      closer.add('the session sweep', () => clearInterval(sweep));
      // Cluster sessions: loaded only in cluster mode (no cluster code on a single node's path).
      if (this.#cluster !== undefined) {
        const { SessionDirectoryHost } = await import('../cluster/sessions.js');
        const host = new SessionDirectoryHost(this.#cluster.context, {
          store: sessions, idleMs: options.sessionIdleMs, log: this.#config.log, revalidateMs: cluster?.sessionRevalidateMs,
          // A DELETE on another node: this node's threads cancel what of the session they run, as that node's do.
          onEnded: cluster === undefined ? undefined : (id) => cluster.sessionEnded(deriveScope({ sessionId: id })),
        });
        this.#sessionHost = host;
        closer.add('the session directory', () => host.close());
      }
    }
  }

  /** The tasks of a serving thread that holds the store itself (in-process HTTP, stdio); undefined when off. */
  localTasks(threadId?: number): LocalTasks | undefined {
    const { options } = this.#config;
    if (this.#taskStore === undefined || options.tasks === false) return undefined;
    return { store: this.#taskStore, limits: options.tasks.limits, runner: runnerId(options, threadId) };
  }

  /** A serving thread is gone: its unfinished tasks fail (their clients see why instead of waiting for the TTL). */
  runnerLost(threadId: number, why: string): void {
    const store = this.#taskStore;
    if (store === undefined) return;
    const lost = store.runnerLost(runnerId(this.#config.options, threadId), why)
      .catch((error: unknown) => this.#config.log('error', `sluice: could not fail the tasks of thread ${threadId}: ${String(error)}`))
      .finally(() => this.#runnersLost.delete(lost));
    this.#runnersLost.add(lost);
  }

  async #startCluster(closer: CloseList, hooks: ClusterHooks): Promise<void> {
    const cluster = this.#config.options.cluster;
    if (cluster === undefined) return;
    // Loaded here only: without `cluster` no Redis code is ever imported.
    const { ClusterNode } = await import('./cluster-node.js');
    // This thread makes the spans of cancels relayed from other nodes: it needs the SDK's provider too.
    await importTracingModule(this.#config.options.tracing);
    const { registry, counters, shared } = this.tables;
    const node = await ClusterNode.start({ cluster, registry, counters, log: this.#config.log, readiness: shared.readiness, deliverAnswer: hooks.deliverAnswer, listChanged: hooks.listChanged });
    this.#cluster = node;
    // The task store and the session directory use the link's connection: it closes after them.
    closer.add('the cluster link', () => node.close());
  }

  /** The user's store, else in memory, or in cluster mode the Redis store every node shares. */
  async #startTasks(closer: CloseList, limits: TaskLimits): Promise<void> {
    let store = this.#config.taskStore;
    if (store === undefined && this.#cluster !== undefined) {
      const { RedisTaskStore } = await import('../tasks/stores/redis-store.js');
      store = new RedisTaskStore(this.#cluster.context, limits);
    }
    store ??= new MemoryTaskStore(limits);
    this.#taskStore = store;
    const owned = store;
    // The tasks outlive every thread that could still use them, then go.
    closer.add('the task store', async () => {
      await Promise.all(this.#runnersLost);
      await owned.close();
    });
    if (owned instanceof MemoryTaskStore) {
      // /metrics is served by the serving threads: its size is posted where they read it.
      const { counters } = this.tables;
      const gauges = setInterval(() => {
        const stats = owned.stats();
        counters.set(Counter.TasksStored, stats.tasks);
        counters.set(Counter.TaskBytes, stats.bytes);
      }, kTaskGaugeMs);
      gauges.unref();
      closer.add('the task gauges', () => clearInterval(gauges));
    }
  }
}
