import { Counter } from '../telemetry/counters.js';
import type { ListKind } from '../tools/context.js';
import { cancelNotification } from './cancel-notification.js';
import { CatalogIndex } from './catalog-index.js';
import type { ClientResponse, EngineConfig, Era, Reply, RequestInfo, Running } from './contract.js';
import { LegacyEra, legacyCapabilities } from './eras/legacy.js';
import { ModernEra, modernCapabilities } from './eras/modern.js';
import { LogBudget, droppedNote } from './failure-log.js';
import { describeFailure } from '../tools/result.js';
import { ClientRequests } from './methods/client-requests.js';
import { completionMethods } from './methods/completion.js';
import { legacyLifecycle, modernLifecycle } from './methods/lifecycle.js';
import { Listeners } from './methods/listen.js';
import { promptMethods } from './methods/prompts.js';
import { resourceMethods, subscribeMethod } from './methods/resources.js';
import { TaskMethods } from './methods/tasks.js';
import { toolMethods } from './methods/tools.js';
import { TaskCalls } from './tasks/calls.js';
import type { TaskHost, TaskRun } from './tasks/task-run.js';
import { RequestStateSealer } from './request-state.js';
import { refusalBody } from './refusals.js';
import { AsyncRuns } from './async-runs.js';
import { Run } from './run.js';
import type { Method } from './run.js';
import type { RunHost } from './run-host.js';
import type { JsonRpcId, ProtocolError } from './wire.js';

/** What a request or task of a legacy session its client DELETEd sees as its cancel's reason. */
export const kSessionDeletedReason = 'the client ended its session (DELETE)';

export type { ClientResponse, EngineConfig, Era, NotifyKind, Reply, RequestInfo, Running } from './contract.js';
export { toolError } from './methods/tools.js';

/**
 * The protocol core's facade, for every transport: it dispatches a request to its era's method
 * table and hands it to a `Run`; it never touches a socket (transports give it a `Reply`, and call
 * `clientGone` on the `Running` they get back when their client goes).
 */
export class Engine {
  readonly config: EngineConfig;
  readonly #legacy: LegacyEra;
  readonly #modern: ModernEra;
  readonly #host: RunHost<Run>;
  /** Runs whose handler went async and has not settled (shutdown cancels them). Sync runs never enter. */
  readonly #running = new AsyncRuns<Run>();
  readonly #listeners: Listeners;
  readonly #clientRequests: ClientRequests;
  readonly #failureLog = new LogBudget(10, 60_000);
  /** Tasks whose tool is still running here (shutdown cancels them). */
  readonly #tasks = new Set<TaskRun>();

  /** `listChanged` bound once, for every request's tool context. */
  readonly announceListChanged = (kind: ListKind): void => this.listChanged(kind);

  constructor(config: EngineConfig) {
    this.config = config;
    const index = new CatalogIndex(config.catalog);
    this.#listeners = new Listeners(index, config.tasks?.store);
    this.#clientRequests = new ClientRequests(config.forwardResponse, config.nodeId, config.clientRequestTimeoutMs);
    const clientRequests = this.#clientRequests;
    const taskHost: TaskHost | undefined = config.tasks === undefined ? undefined : {
      registry: config.registry,
      store: config.tasks.store,
      limits: config.tasks.limits,
      runner: config.tasks.runner,
      counters: config.counters,
      streamCancelTimeoutMs: config.streamCancelTimeoutMs,
      pool: config.pool,
      listChanged: this.announceListChanged,
      logFailure: (method, target, error) => this.logFailure(method, target, error),
      requestClient: (run, method, params) => clientRequests.send(run, method, params),
      running: this.#tasks,
      tracer: config.tracer,
    };
    const taskMethods = taskHost === undefined ? undefined : new TaskMethods(taskHost, config.authenticated === true);
    const capabilities = legacyCapabilities(index, taskHost === undefined ? undefined : { list: config.authenticated === true });
    const common = [...toolMethods(index, config, new TaskCalls(taskHost), taskHost !== undefined), ...resourceMethods(index), ...promptMethods(index), ...completionMethods(index)];
    this.#legacy = new LegacyEra(new Map<string, Method>([
      ...common,
      ...legacyLifecycle(config, capabilities),
      ['resources/subscribe', subscribeMethod],
      ['resources/unsubscribe', subscribeMethod],
      ...(taskMethods?.legacy() ?? []),
    ]));
    this.#modern = new ModernEra(new Map<string, Method>([
      ...common,
      ...modernLifecycle(config, modernCapabilities(capabilities, taskHost !== undefined)),
      ['subscriptions/listen', this.#listeners.method],
      ...(taskMethods?.modern() ?? []),
    ]), new RequestStateSealer(config.stateKeys), config.serverInfo);
    this.#host = {
      registry: config.registry,
      counters: config.counters,
      streamCancelTimeoutMs: config.streamCancelTimeoutMs,
      tracer: config.tracer,
      requestLog: config.requestLog,
      running: this.#running,
      listChanged: this.announceListChanged,
      logFailure: (method, target, error) => this.logFailure(method, target, error),
      requestClient: (run, method, params) => clientRequests.send(run, method, params),
      abandonClientRequest: (id, error) => clientRequests.abandon(id, error),
    };
  }

  /** True when the era implements the method (2026-07-28 answers 404 otherwise). */
  implements(era: Era, method: string): boolean {
    return (era === 'modern' ? this.#modern : this.#legacy).methods.has(method);
  }

  /**
   * Serves one request. Returns a handle for the transport, or undefined if it already ended; a
   * handle is announced to `reply.started` first.
   */
  handleRequest(id: JsonRpcId, method: string, params: Record<string, unknown> | undefined, info: RequestInfo, reply: Reply): Running | undefined {
    const modern = info.era === 'modern';
    const era = modern ? this.#modern : this.#legacy;
    const entry = era.methods.get(method);
    if (modern) {
      // The era's own refusals (capabilities, method not found) take no registry row.
      const refused = this.#modern.refusal(method, entry, info, params);
      if (refused !== undefined) {
        reply.respond(refusalBody(id, refused), refused.httpStatus);
        reply.released?.();
        return undefined;
      }
    }
    const { registry, counters } = this.config;
    counters.add(Counter.Requests);
    const handle = registry.track(id, info.scope);
    if (!handle.ok) {
      counters.add(Counter.Busy);
      reply.busy(id);
      reply.released?.();
      return undefined;
    }
    if (entry === undefined) {
      new Run(this.#host, era, id, method, '', info, reply, handle).fail(era.methodNotFound(method));
      return undefined;
    }
    const names = entry.names;
    const target = names === undefined ? '' : typeof params?.[names] === 'string' ? params[names] as string : '';
    const run = new Run(this.#host, era, id, method, target, info, reply, handle);
    const tracer = this.#host.tracer;
    if (tracer !== undefined) run.trace(tracer, names, params);
    run.start(entry.handler, params);
    return run.settled ? undefined : run;
  }

  /**
   * Handles a notification: undefined when accepted, else the refusal to report (HTTP: its
   * httpStatus and a JSON-RPC error with its rpcCode, message and data). `notifications/cancelled`
   * is honoured only for requests in flight in the sender's scope.
   */
  handleNotification(method: string, params: unknown, info: RequestInfo): ProtocolError | undefined {
    this.config.counters.add(Counter.Notifications);
    if (method !== 'notifications/cancelled') return undefined;
    const { registry, log, forwardCancel, tracer } = this.config;
    const span = tracer?.cancelReceived(params, info.scope, info.version);
    const outcome = cancelNotification(registry, log, params, info.scope, forwardCancel, span === undefined ? undefined : tracer!.carried(span));
    if (span !== undefined) tracer!.endCancel(span, typeof outcome === 'string' ? outcome : outcome.rpcCode);
    return typeof outcome === 'string' ? undefined : outcome;
  }

  /**
   * A response the client POSTed (or wrote on stdio): settles our waiting request if it is this
   * thread's and the sender's scope is the one we asked; forwards it if another thread asked.
   */
  handleResponse(response: ClientResponse, scope: string): void {
    this.#clientRequests.answer(response, scope);
  }

  /** A relayed response (JSON text from another thread; `via` names the thread or node that received it). */
  handleRelayedResponse(text: string, scope: string, via?: string): void {
    this.#clientRequests.relayed(text, scope, via);
  }

  /** Logs a handler failure with its stack, at most 10 a minute; the rest are counted and summarised. */
  logFailure(method: string, target: string, error: unknown): void {
    const dropped = this.#failureLog.take();
    if (dropped < 0) return;
    const name = target === '' ? method : `${method} ${target}`;
    this.config.log('warn', `sluice: ${name} failed${droppedNote(dropped)}: ${describeFailure(error)}`);
  }

  /**
   * A list changed: notify every listen stream here that asked for it, and (unless this came from
   * another thread) the other threads too.
   */
  listChanged(kind: ListKind, fromElsewhere = false): void {
    this.#listeners.notify(kind);
    if (!fromElsewhere) this.config.broadcastListChanged?.(kind);
  }

  /** Ends every listen stream with its completion result (graceful shutdown). */
  closeListeners(): void {
    this.#listeners.closeAll();
  }

  /**
   * The client can no longer answer (a stdio client closed its input): each request waiting for
   * one of its answers (`ctx.request`, a legacy input round) is cancelled with `reason`, as a
   * client cancel would, instead of waiting for ever. Returns how many.
   */
  cancelAwaitingClient(reason: string): number {
    return this.#clientRequests.cancelWaiting(reason);
  }

  /**
   * Cancels every request of this engine still running, through the registry (as a client cancel
   * would: polling tools and `ctx.signal` see it, SSE streams end, no response is sent), and arms
   * their kill timers. Returns how many were cancelled. Shutdown calls it when the grace ends.
   */
  cancelAll(reason: string): number {
    let count = 0;
    this.#running.flush();
    for (const run of [...this.#running.watching]) if (run.cancelByServer(reason)) count++;
    for (const task of [...this.#tasks]) {
      task.cancelForShutdown(reason);
      count++;
    }
    return count;
  }

  /**
   * A legacy session (registry scope `scope`) has ended by its client's DELETE: its client will
   * read none of its answers, so its requests and tasks still running here are cancelled, as its
   * client's cancel would (reason kSessionDeletedReason). Only what went async can be running when
   * this thread reads a DELETE, so the walk is over this engine's async runs and tasks, not the
   * registry's table. `threads`: the other threads of the node that served the session (a
   * `SessionStore.delete` result; 0: none, or the news came from another thread or node), told
   * through `broadcastSessionEnded`. Returns how many were cancelled here.
   */
  sessionEnded(scope: string, threads = 0): number {
    let count = 0;
    this.#running.flush();
    for (const run of [...this.#running.watching]) if (run.info.scope === scope && run.cancelByServer(kSessionDeletedReason)) count++;
    for (const task of [...this.#tasks]) {
      if (task.owner !== scope) continue;
      task.cancel(kSessionDeletedReason);
      count++;
    }
    if (threads !== 0) this.config.broadcastSessionEnded?.(scope, threads);
    return count;
  }

  /** Requests of this engine still running (async handlers not yet settled), and tasks whose tool still runs here. */
  get running(): number {
    return this.#running.size + this.#tasks.size;
  }
}
