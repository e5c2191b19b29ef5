/**
 * One TaskStore for every thread of a node: the supervisor keeps the store and serves it over a
 * MessagePort per HTTP worker (`TaskStoreHost`); each worker uses it through `TaskStoreClient`, a
 * TaskStore like any other. Requests and answers are plain data (structured clone), one message
 * each way per call; errors cross as `{ code, message }`. Watches cross as subscriptions: the
 * client asks once per task id, however many local listeners it has, and the host forwards only
 * the changes of ids that port watches.
 */
import type { MessagePort } from 'node:worker_threads';
import { SluiceError, kSluiceErrorCodes } from '../errors.js';
import type { SluiceErrorCode } from '../errors.js';
import type { TaskStore } from './store.js';
import type { NewTask, TaskChange, TaskPage, TaskRecord } from './task.js';

/** A call to the store, from a client to the host; `id` pairs it with its answer. */
export type TaskStoreRequest =
  | { id: number; op: 'create'; task: NewTask }
  | { id: number; op: 'get'; taskId: string; owner: string }
  | { id: number; op: 'list'; owner: string; cursor: string | undefined; limit: number }
  | { id: number; op: 'update'; taskId: string; change: TaskChange }
  | { id: number; op: 'respond'; taskId: string; owner: string; responses: Readonly<Record<string, unknown>> }
  | { id: number; op: 'cancel'; taskId: string; owner: string; statusMessage: string | undefined }
  | { id: number; op: 'runnerLost'; runner: string; reason: string };

/** What a client tells the host: a call, or a (un)subscription to one task's changes. */
export type ToTaskStoreHost =
  | TaskStoreRequest
  | { readonly op: 'watch'; readonly taskId: string }
  | { readonly op: 'unwatch'; readonly taskId: string };

/** An error as plain data: `code` when it was a SluiceError. */
export interface TaskStoreErrorWire {
  readonly code?: SluiceErrorCode | undefined;
  readonly message: string;
}

/** What the host tells a client: an answer, or a change of a task the client watches. */
export type FromTaskStoreHost =
  | { readonly type: 'result'; readonly id: number; readonly value: unknown }
  | { readonly type: 'error'; readonly id: number; readonly error: TaskStoreErrorWire }
  | { readonly type: 'changed'; readonly taskId: string; readonly task: TaskRecord | undefined };

type Listener = (task: TaskRecord | undefined) => void;

const kCodes: ReadonlySet<string> = new Set(kSluiceErrorCodes);

/** Supervisor side: serves one TaskStore to any number of ports (one per worker). */
export class TaskStoreHost {
  readonly #store: TaskStore;
  /** Each attached port and how to detach it. */
  readonly #ports = new Map<MessagePort, () => void>();

  constructor(store: TaskStore) {
    this.#store = store;
  }

  /**
   * Serves the requests arriving on `port` until it closes (its worker exited, or either side
   * closed it). `runnerPrefix`: the runner this port's thread is (its thread id); tasks it creates,
   * and runners it reports lost, must be that runner or under it (`<prefix>/…`), so a worker cannot
   * file tasks under another's name. Returns the function that detaches and closes the port.
   */
  attach(port: MessagePort, runnerPrefix?: string): () => void {
    /** This port's subscriptions: task id → unwatch on the store. */
    const watches = new Map<string, () => void>();
    const detach = (): void => {
      if (this.#ports.get(port) !== detach) return;
      this.#ports.delete(port);
      port.off('message', onMessage);
      port.off('close', detach);
      for (const unwatch of watches.values()) unwatch();
      watches.clear();
    };
    const onMessage = (message: ToTaskStoreHost): void => {
      if (message === null || typeof message !== 'object') return;
      if (message.op === 'watch' || message.op === 'unwatch') this.#subscription(port, watches, message.op, message.taskId);
      else this.#serve(port, message, runnerPrefix);
    };
    this.#ports.set(port, detach);
    port.on('message', onMessage);
    port.on('close', detach);
    // The workers keep the supervisor alive, not these ports.
    port.unref();
    return () => {
      detach();
      port.close();
    };
  }

  /** Detaches and closes every port (the store itself stays open: it is its owner's to close). */
  close(): void {
    for (const [port, detach] of [...this.#ports]) {
      detach();
      port.close();
    }
  }

  #subscription(port: MessagePort, watches: Map<string, () => void>, op: 'watch' | 'unwatch', taskId: string): void {
    if (typeof taskId !== 'string') return;
    if (op === 'unwatch') {
      watches.get(taskId)?.();
      watches.delete(taskId);
      return;
    }
    if (watches.has(taskId)) return;
    const unwatch = this.#store.watch(taskId, (task) => {
      send(port, { type: 'changed', taskId, task });
      // Deleted or expired: the store tells no more, and the client forgets the id too.
      if (task === undefined && watches.get(taskId) === unwatch) {
        watches.delete(taskId);
        unwatch();
      }
    });
    watches.set(taskId, unwatch);
  }

  #serve(port: MessagePort, request: TaskStoreRequest, runnerPrefix: string | undefined): void {
    const id = request.id;
    this.#call(request, runnerPrefix).then(
      (value) => {
        try {
          port.postMessage({ type: 'result', id, value } satisfies FromTaskStoreHost);
        } catch (error) {
          // A user store answering with something that cannot cross a thread: the call fails, the host serves on.
          send(port, { type: 'error', id, error: errorToWire(error) });
        }
      },
      (error: unknown) => send(port, { type: 'error', id, error: errorToWire(error) }),
    );
  }

  async #call(request: TaskStoreRequest, runnerPrefix: string | undefined): Promise<unknown> {
    const store = this.#store;
    switch (request.op) {
      case 'get': return store.get(request.taskId, request.owner);
      case 'create':
        checkRunner(request.task?.runner, runnerPrefix);
        return store.create(request.task);
      case 'list': return store.list(request.owner, request.cursor, request.limit);
      case 'update': return store.update(request.taskId, request.change);
      case 'respond': return store.respond(request.taskId, request.owner, request.responses);
      case 'cancel': return store.cancel(request.taskId, request.owner, request.statusMessage);
      case 'runnerLost':
        checkRunner(request.runner, runnerPrefix);
        return store.runnerLost(request.runner, request.reason);
      default: throw new TypeError(`unknown task store operation ${String((request as { op?: unknown }).op)}`);
    }
  }
}

/** Worker side: a TaskStore whose calls are answered by a `TaskStoreHost` at the other end of `port`. */
export class TaskStoreClient implements TaskStore {
  readonly #port: MessagePort;
  readonly #pending = new Map<number, { resolve: (value: unknown) => void; reject: (error: Error) => void }>();
  /** Local listeners per watched task id: the host is asked once per id. */
  readonly #watchers = new Map<string, Set<Listener>>();
  #nextId = 0;
  #closed = false;

  constructor(port: MessagePort) {
    this.#port = port;
    port.on('message', (message: FromTaskStoreHost) => this.#onMessage(message));
    port.on('close', () => this.#shut());
    // Referenced only while a call waits for its answer: an idle client keeps no thread alive.
    port.unref();
  }

  create(task: NewTask): Promise<TaskRecord> {
    return this.#call({ id: 0, op: 'create', task }) as Promise<TaskRecord>;
  }

  get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    return this.#call({ id: 0, op: 'get', taskId, owner }) as Promise<TaskRecord | undefined>;
  }

  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> {
    return this.#call({ id: 0, op: 'list', owner, cursor, limit }) as Promise<TaskPage>;
  }

  update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> {
    return this.#call({ id: 0, op: 'update', taskId, change }) as Promise<TaskRecord | undefined>;
  }

  respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined> {
    return this.#call({ id: 0, op: 'respond', taskId, owner, responses }) as Promise<TaskRecord | undefined>;
  }

  cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined> {
    return this.#call({ id: 0, op: 'cancel', taskId, owner, statusMessage }) as Promise<TaskRecord | undefined>;
  }

  runnerLost(runner: string, reason: string): Promise<number> {
    return this.#call({ id: 0, op: 'runnerLost', runner, reason }) as Promise<number>;
  }

  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void {
    let listeners = this.#watchers.get(taskId);
    if (listeners === undefined) {
      this.#watchers.set(taskId, listeners = new Set());
      this.#post({ op: 'watch', taskId });
    }
    const own: Listener = (task) => listener(task);
    listeners.add(own);
    return () => {
      const set = this.#watchers.get(taskId);
      if (set === undefined || !set.delete(own) || set.size > 0) return;
      this.#watchers.delete(taskId);
      this.#post({ op: 'unwatch', taskId });
    };
  }

  /** Closes this end of the port: pending calls reject with `transport_closed`. The host's store stays open. */
  async close(): Promise<void> {
    this.#shut();
    this.#port.close();
  }

  #call(request: TaskStoreRequest): Promise<unknown> {
    if (this.#closed) return Promise.reject(closedError());
    const id = request.id = ++this.#nextId;
    return new Promise((resolve, reject) => {
      // Throws synchronously for what cannot be cloned: the call fails, nothing is pending.
      this.#port.postMessage(request);
      if (this.#pending.size === 0) this.#port.ref();
      this.#pending.set(id, { resolve, reject });
    });
  }

  #post(message: ToTaskStoreHost): void {
    if (!this.#closed) this.#port.postMessage(message);
  }

  #onMessage(message: FromTaskStoreHost): void {
    if (message.type === 'changed') {
      const listeners = this.#watchers.get(message.taskId);
      if (listeners === undefined) return;
      // The host has dropped a deleted task's watch: forget it here too (its unwatch is then a no-op).
      if (message.task === undefined) this.#watchers.delete(message.taskId);
      for (const listener of [...listeners]) {
        try {
          listener(message.task);
        } catch (error) {
          process.emitWarning(`a task watcher threw: ${error instanceof Error ? error.message : String(error)}`, 'SluiceWarning');
        }
      }
      return;
    }
    const pending = this.#pending.get(message.id);
    if (pending === undefined) return;
    this.#pending.delete(message.id);
    if (this.#pending.size === 0) this.#port.unref();
    if (message.type === 'result') pending.resolve(message.value);
    else pending.reject(errorFromWire(message.error));
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#watchers.clear();
    for (const { reject } of pending) reject(closedError());
  }
}

function closedError(): SluiceError {
  return new SluiceError('transport_closed', 'the task store port is closed');
}

function send(port: MessagePort, message: FromTaskStoreHost): void {
  try {
    port.postMessage(message);
  } catch {
    // Closed port or an uncloneable record: nothing more this port can be told.
  }
}

function checkRunner(runner: unknown, prefix: string | undefined): void {
  if (prefix === undefined) return;
  if (runner === prefix || (typeof runner === 'string' && runner.startsWith(`${prefix}/`))) return;
  throw new TypeError(`runner ${String(runner)} is not this thread's (${prefix})`);
}

export function errorToWire(error: unknown): TaskStoreErrorWire {
  if (error instanceof SluiceError) return { code: error.code, message: error.message };
  return { message: error instanceof Error ? error.message : String(error) };
}

export function errorFromWire(wire: TaskStoreErrorWire): Error {
  if (wire.code !== undefined && kCodes.has(wire.code)) return SluiceError.fromWire({ code: wire.code, message: wire.message });
  return new Error(wire.message);
}
