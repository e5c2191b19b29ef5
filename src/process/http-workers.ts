/**
 * The supervisor's HTTP worker threads: starting them on one shared port (and a replacement when
 * one dies), relaying what they tell each other, releasing what a dead one held, and their part
 * of shutdown. Each worker reaches the supervisor's task store and session directory over ports
 * of its own.
 */
import { channel } from 'node:diagnostics_channel';
import { MessageChannel, Worker } from 'node:worker_threads';
import { catalogDifference, catalogMismatch } from '../catalog/catalog.js';
import type { CatalogNames } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import type { CloseList } from '../server/close-list.js';
import type { ServerConfig } from '../server/config.js';
import { runnerId } from '../server/config.js';
import type { NodeServices } from '../server/node-services.js';
import { TaskStoreHost } from '../tasks/stores/port-store.js';
import type { ListKind } from '../tools/context.js';
import type { AdapterKind } from '../transport/http/adapter.js';
import { checkPortFree, freePort } from './port-probe.js';
import { threadEntry } from './thread-entry.js';
import type { FromHttpWorker, HttpWorkerData, ToHttpWorker } from './worker-messages.js';

/** How many picked ports (port 0) the first HTTP worker tries before the start fails. */
const kFreePortAttempts = 4;

/** How long after its grace a worker that has not closed itself is terminated. */
const kTerminateAfterGraceMs = 2_000;

/** How long a process exiting without close() waits, at most, for uWS workers to end their sockets. */
const kExitWaitMs = 500;

/** One start's promise: settled by the worker's `listening`/`failed`, or by its exit before either. */
interface Start {
  started: boolean;
  resolve(port: number): void;
  reject(error: Error): void;
}

export class HttpWorkers {
  readonly #config: ServerConfig;
  readonly #services: NodeServices;
  readonly #closer: CloseList;
  readonly #adapter: AdapterKind;
  /** A message between threads could not be read, or a call between them passed its deadline. */
  readonly #portProblem: (message: string) => void;
  readonly #workers = new Map<Worker, number>();
  /** Pool threads alive per HTTP worker: they die with it, unreported, and are released then. */
  readonly #poolThreads = new Map<Worker, Set<number>>();
  /** Every thread's tasks are the supervisor's: served to each worker over its own port. */
  readonly #taskHost: TaskStoreHost | undefined;
  #port = 0;
  /** Every worker of `start` listens: a later one is a replacement, compared with them but not refused. */
  #allListening = false;
  /** What the first worker serves (the CLI's start-up line). */
  served: CatalogNames | undefined;

  constructor(config: ServerConfig, services: NodeServices, adapter: AdapterKind, closer: CloseList, portProblem: (message: string) => void) {
    this.#config = config;
    this.#services = services;
    this.#adapter = adapter;
    this.#closer = closer;
    this.#portProblem = portProblem;
    const store = services.taskStore;
    if (store !== undefined) {
      const host = new TaskStoreHost(store, { onProblem: portProblem });
      this.#taskHost = host;
      closer.add('the task store ports', () => host.close());
    }
  }

  get threadIds(): readonly number[] {
    return [...this.#workers.values()];
  }

  /**
   * Starts `count` workers on the configured port (or one picked: SO_REUSEPORT cannot share a
   * port the kernel picked for the first socket, nor can a replacement take it back after a
   * crash). Resolves with the port; on a failure the caller closes the close list.
   */
  async start(count: number): Promise<number> {
    const { host, port } = this.#config.options;
    this.#closer.add('the HTTP workers', (shutdown) => this.#closeAll(shutdown.graceLeft()));
    if (this.#adapter === 'uws') {
      process.on('exit', this.#endSocketsAtExit);
      this.#closer.add('the exit hook', () => { process.off('exit', this.#endSocketsAtExit); });
    }
    if (port !== 0) {
      await checkPortFree(host, port);
      this.#port = await this.#spawn(port, true);
    } else {
      this.#port = await this.#spawnOnFreePort(host);
    }
    await Promise.all(Array.from({ length: count - 1 }, () => this.#spawn(this.#port)));
    this.#allListening = true;
    return this.#port;
  }

  /**
   * The process exits while the server runs (process.exit, an uncaught error, no close()): uWS
   * aborts the whole process (SIGABRT, exit 134) when a thread is torn down with a socket open,
   * so each worker is asked to end its sockets, and the exit waits for them (synchronously: an
   * 'exit' listener cannot await) up to kExitWaitMs. The workers' own loops run meanwhile.
   */
  readonly #endSocketsAtExit = (): void => {
    const workers = [...this.#workers.keys()];
    if (workers.length === 0) return;
    const acks = new Int32Array(new SharedArrayBuffer(4));
    for (const worker of workers) post(worker, { type: 'exiting', acks });
    const deadline = Date.now() + kExitWaitMs;
    for (let done = 0; done < workers.length; done = Atomics.load(acks, 0)) {
      const left = deadline - Date.now();
      if (left <= 0) return;
      Atomics.wait(acks, 0, done, left);
    }
  };

  /** Tells every worker (but `except`) that a list changed. */
  broadcastListChanged(kind: ListKind, except?: Worker): void {
    for (const worker of this.#workers.keys()) if (worker !== except) post(worker, { type: 'listChanged', kind });
  }

  /**
   * Tells workers (but `except`) that a legacy session (its scope) was DELETEd: those `threads`
   * names (the session store's bits of the threads that served it), else every one (another node's
   * DELETE: which threads here served it is no longer known).
   */
  broadcastSessionEnded(scope: string, except?: Worker, threads?: number): void {
    const sessions = this.#services.tables.sessions;
    const named = threads === undefined || sessions === undefined ? undefined : new Set(sessions.threadsOf(threads));
    for (const [worker, id] of this.#workers) if (worker !== except && (named === undefined || named.has(id))) post(worker, { type: 'sessionEnded', scope });
  }

  /** Hands a client's answer (as text) to worker `thread`; false when no such worker runs. `via`: who received it. */
  deliver(thread: number, response: string, scope: string, via: string): boolean {
    for (const [worker, id] of this.#workers) {
      if (id !== thread) continue;
      post(worker, { type: 'response', response, scope, via });
      return true;
    }
    return false;
  }

  /** Cluster drain: every worker ends its listen streams (their clients reconnect to another node). */
  drain(): void {
    for (const worker of this.#workers.keys()) post(worker, { type: 'drain' });
  }

  /**
   * The first HTTP worker on a port picked for it (port 0). The pick is free when probed, but
   * another process may bind it before the worker does (tests starting servers in parallel do):
   * a listen failure then means "pick again", a few times, rather than a failed start. So does a
   * port that the worker, once listening, finds shared with another SO_REUSEPORT socket.
   */
  async #spawnOnFreePort(host: string): Promise<number> {
    for (let attempt = 1; ; attempt++) {
      const port = await freePort(host);
      try {
        return await this.#spawn(port, true);
      } catch (error) {
        if (attempt >= kFreePortAttempts || !(error instanceof SluiceError) || (error.code !== 'listen_failed' && error.code !== 'port_in_use')) throw error;
        this.#config.log('info', `sluice: port ${port} was taken before the HTTP worker could listen on it alone; picking another`);
      }
    }
  }

  /** Starts one HTTP worker on `port` (`firstOnPort`: see HttpWorkerData); resolves with the port it listens on. */
  #spawn(port: number, firstOnPort = false): Promise<number> {
    // The worker's ends of its task store and session directory channels travel with its workerData.
    const tasks = this.#taskHost === undefined ? undefined : new MessageChannel();
    const sessions = this.#services.sessionHost === undefined ? undefined : new MessageChannel();
    const tools = this.#config.tools.module!;
    const data: HttpWorkerData = { shared: this.#services.tables.shared, options: this.#config.options, toolsModule: tools, adapter: this.#adapter, port, firstOnPort, tasks: tasks?.port2, sessionDirectory: sessions?.port2 };
    let worker: Worker;
    try {
      worker = new Worker(threadEntry('http-worker'), { workerData: data, transferList: [tasks?.port2, sessions?.port2].filter((p) => p !== undefined) });
    } catch (error) {
      tasks?.port1.close();
      sessions?.port1.close();
      throw error;
    }
    const threadId = worker.threadId;
    if (tasks !== undefined) this.#taskHost!.attach(tasks.port1, runnerId(this.#config.options, threadId));
    if (sessions !== undefined) this.#services.sessionHost!.attach(sessions.port1, this.#portProblem);
    this.#workers.set(worker, threadId);
    return new Promise((resolve, reject) => {
      const start: Start = { started: false, resolve, reject };
      // A message the worker sent that this thread cannot read: logged and counted (what it carried is lost).
      worker.on('messageerror', (error) => this.#portProblem(`sluice: a message from HTTP worker ${threadId} could not be read: ${error.message}`));
      worker.on('message', (message: FromHttpWorker) => {
        try {
          this.#onMessage(worker, message, start);
        } catch (error) {
          // The supervisor must outlive anything a worker relays.
          this.#config.log('error', `sluice: could not handle a message from HTTP worker ${threadId}: ${String(error)}`);
        }
      });
      worker.on('error', (error) => this.#config.log('error', `sluice: HTTP worker ${threadId} crashed: ${error.stack ?? error.message}`));
      worker.once('exit', (code) => this.#onExit(worker, threadId, code, start));
    });
  }

  /** A worker is gone: what it held in shared memory is released; a replacement starts unless the server is closing. */
  #onExit(worker: Worker, threadId: number, code: number, start: Start): void {
    const { registry, counters, sessions } = this.#services.tables;
    this.#workers.delete(worker);
    // Its in-flight rows are swept, and those of the pool threads that died with it (only pool
    // threads use the registry alone).
    registry.threadExited(threadId);
    for (const id of this.#poolThreads.get(worker) ?? []) registry.threadExited(id);
    this.#poolThreads.delete(worker);
    counters.threadExited(threadId);
    sessions?.threadExited(threadId);
    // While the server closes, every thread is on its way out and the tables go with it: a sweep
    // would only read them end to end, faulting in their never-touched pages (67 MiB at the
    // default sizes, ~200 ms of CPU here on a fresh registry) for rows nobody will look up again.
    if (!this.#closer.closing) registry.cleanup(Infinity);
    this.#services.runnerLost(threadId, 'the worker running this task exited');
    if (!start.started) {
      start.reject(new SluiceError('listen_failed', `HTTP worker exited (code ${code}) before listening`));
      return;
    }
    if (this.#closer.closing) return;
    this.#config.log('error', `sluice: HTTP worker ${threadId} exited (code ${code}); starting a replacement`);
    const again = setTimeout(() => {
      if (!this.#closer.closing) this.#spawn(this.#port).catch((error: unknown) => this.#config.log('error', `sluice: replacement worker failed: ${String(error)}`));
    }, 100);
    again.unref();
  }

  #onMessage(worker: Worker, message: FromHttpWorker, start: Start): void {
    switch (message.type) {
      case 'listening': {
        start.started = true;
        const differs = this.served === undefined ? undefined : catalogDifference(this.served, message.served);
        if (differs !== undefined) {
          const problem = catalogMismatch(this.#config.tools.module!, 'in different HTTP workers', differs);
          // At start the server refuses to serve (its caller closes everything); a replacement
          // worker, after a crash, cannot be refused that way: it serves, and it is said loudly.
          if (!this.#allListening) {
            start.reject(new SluiceError('tools_module_failed', problem));
            break;
          }
          this.#config.log('error', `sluice: replacement HTTP worker ${this.#workers.get(worker) ?? '?'}: ${problem}`);
        }
        this.served ??= message.served;
        start.resolve(message.port);
        break;
      }
      case 'failed':
        // The tools module not loading is the user's to fix, not a listen failure: say so as it is.
        // A port another process took while we started is port_in_use, as when the probe sees it.
        start.reject(message.code === 'tools_module_failed' || message.code === 'port_in_use' ? new SluiceError(message.code, message.message) : new SluiceError('listen_failed', `HTTP worker failed to start: ${message.message}`));
        break;
      case 'event':
        channel(message.channel).publish(message.message);
        break;
      case 'log':
        this.#config.log(message.level, message.message);
        break;
      case 'closed':
        break;
      case 'poolThread':
        this.#onPoolThread(worker, message.threadId, message.alive);
        break;
      case 'listChanged':
        this.broadcastListChanged(message.kind, worker);
        this.#services.cluster?.listChanged(message.kind);
        break;
      case 'sessionEnded':
        // Other nodes hear of it from the session directory (Redis), not from here.
        if (typeof message.scope === 'string') this.broadcastSessionEnded(message.scope, worker, typeof message.threads === 'number' ? message.threads : undefined);
        break;
      case 'response':
        // A client answered a request of another worker's tool: hand it over (as text); another
        // node's goes over the bus (a node not in cluster mode never names one).
        if (typeof message.response !== 'string') break;
        if (message.node !== undefined) this.#services.cluster?.answer(message.node, message.target, message.response, message.scope);
        else this.deliver(message.target, message.response, message.scope, `thread ${this.#workers.get(worker) ?? '?'}`);
        break;
      case 'cancel':
        this.#services.cluster?.cancel(message.requestId, message.reason, message.scope, message.trace);
        break;
    }
  }

  #onPoolThread(worker: Worker, threadId: unknown, alive: boolean): void {
    if (typeof threadId !== 'number' || !this.#workers.has(worker)) return;
    let ids = this.#poolThreads.get(worker);
    if (ids === undefined) this.#poolThreads.set(worker, ids = new Set());
    if (alive) ids.add(threadId);
    else ids.delete(threadId);
  }

  /**
   * Each worker closes its listen socket and connections itself (uWS aborts the process
   * otherwise) within `graceMs`; only one that does not finish in time is terminated.
   */
  async #closeAll(graceMs: number): Promise<void> {
    await Promise.all([...this.#workers.keys()].map((worker) => new Promise<void>((done) => {
      const timer = setTimeout(() => { void worker.terminate(); }, graceMs + kTerminateAfterGraceMs);
      worker.once('exit', () => { clearTimeout(timer); done(); });
      post(worker, { type: 'close', graceMs });
    })));
  }
}

/** The one way a message reaches a worker: typed. */
function post(worker: Worker, message: ToHttpWorker): void {
  worker.postMessage(message);
}
