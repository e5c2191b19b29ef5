/**
 * One TaskStore for every thread of a node: the supervisor keeps the store and serves it over a
 * MessagePort per HTTP worker (`TaskStoreHost`); each worker uses it through `TaskStoreClient`, a
 * TaskStore like any other. Requests and answers are plain data (structured clone), one message
 * each way per call; errors cross as `{ code, message }`. Watches cross as subscriptions: the
 * client asks once per task id, however many local listeners it has, and the host forwards only
 * the changes of ids that port watches.
 *
 * Nothing a port carries may wedge a call. Values are checked before they are posted (`valueProblem`:
 * what one thread serialises another may be unable to deserialise), every call has a deadline
 * (`callTimeoutMs`), and a message the far side could not deserialise ('messageerror') is reported
 * back by its position in the port's order (both sides count the messages they post and receive),
 * so the one call it belonged to fails at once with a clear error instead of waiting. That protocol
 * is src/ports/ (shared with the session directory's port); this file is the store's calls over it.
 */
import type { MessagePort } from 'node:worker_threads';
import { SluiceError, kSluiceErrorCodes } from '../../errors.js';
import type { SluiceErrorCode } from '../../errors.js';
import type { TaskStore } from '../store.js';
import type { NewTask, TaskChange, TaskPage, TaskRecord } from '../task.js';
import { addWatcher, tellAll } from '../watchers.js';
import type { TaskListener } from '../watchers.js';
import { valueProblem } from '../../ports/value-bounds.js';
import { PortClient } from '../../ports/client.js';
import { PortHost } from '../../ports/host.js';
import type { HostLink } from '../../ports/host.js';
import { warnProblem } from '../../ports/problem.js';
import type { PortProblem, UndeliverableToClient, UndeliverableToHost } from '../../ports/problem.js';

/** A call to the store, from a client to the host; `id` pairs it with its answer. */
export type TaskStoreRequest =
  | { id: number; op: 'create'; task: NewTask }
  | { id: number; op: 'get'; taskId: string; owner: string }
  | { id: number; op: 'list'; owner: string; cursor: string | undefined; limit: number }
  | { id: number; op: 'update'; taskId: string; change: TaskChange }
  | { id: number; op: 'respond'; taskId: string; owner: string; responses: Readonly<Record<string, unknown>> }
  | { id: number; op: 'cancel'; taskId: string; owner: string; statusMessage: string | undefined }
  | { id: number; op: 'runnerLost'; runner: string; reason: string };

/** A client's (un)subscription to one task's changes. */
type Subscription = { readonly op: 'watch'; readonly taskId: string } | { readonly op: 'unwatch'; readonly taskId: string };

/** What a client tells the host: a call, or a (un)subscription to one task's changes. */
export type ToTaskStoreHost = TaskStoreRequest | Subscription | UndeliverableToHost;

/** An error as plain data: `code` when it was a SluiceError. */
export interface TaskStoreErrorWire {
  readonly code?: SluiceErrorCode | undefined;
  readonly message: string;
}

/** What the host tells a client: an answer, or a change of a task the client watches. */
export type FromTaskStoreHost =
  | { readonly type: 'result'; readonly id: number; readonly value: unknown }
  | { readonly type: 'error'; readonly id: number; readonly error: TaskStoreErrorWire }
  | { readonly type: 'changed'; readonly taskId: string; readonly task: TaskRecord | undefined }
  | UndeliverableToClient;

/** Levels of nesting the ports carry: well under what a thread can deserialise (about 2 000 on the main thread). */
const kMaxPortDepth = 1_000;

/** Default deadline of one call over the port. */
export const kDefaultCallTimeoutMs = 10_000;

export type { PortProblem } from '../../ports/problem.js';

export interface TaskStoreClientOptions {
  /** Longest wait for one call's answer before it rejects. Default 10 s. */
  readonly callTimeoutMs?: number | undefined;
  /** A message that could not cross, or a call past its deadline. Default: a process warning. */
  readonly onProblem?: PortProblem | undefined;
}

export interface TaskStoreHostOptions {
  /** A message that could not cross. Default: a process warning. */
  readonly onProblem?: PortProblem | undefined;
}

const kCodes: ReadonlySet<string> = new Set(kSluiceErrorCodes);

const kWording = { name: 'task store', failure: 'fails' } as const;

/** Supervisor side: serves one TaskStore to any number of ports (one per worker). */
export class TaskStoreHost {
  readonly #store: TaskStore;
  readonly #ports = new PortHost();
  readonly #onProblem: PortProblem;

  constructor(store: TaskStore, options: TaskStoreHostOptions = {}) {
    this.#store = store;
    this.#onProblem = options.onProblem ?? warnProblem;
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
    return this.#ports.attach<TaskStoreRequest | Subscription, FromTaskStoreHost>(port, {
      ...kWording,
      onProblem: this.#onProblem,
      // Any object: an unknown operation is answered with its own error by #call.
      accept: (message): message is TaskStoreRequest | Subscription => message !== null && typeof message === 'object',
      serve: (message, link) => {
        if (message.op === 'watch' || message.op === 'unwatch') this.#subscription(link, watches, message.op, message.taskId);
        else this.#serve(link, message, runnerPrefix);
      },
      failed: (id) => ({ type: 'error', id, error: { message: 'the task store\'s answer could not cross to this thread' } }),
      onDetach: () => {
        for (const unwatch of watches.values()) unwatch();
        watches.clear();
      },
    });
  }

  /** Detaches and closes every port (the store itself stays open: it is its owner's to close). */
  close(): void {
    this.#ports.close();
  }

  #subscription(link: Link, watches: Map<string, () => void>, op: 'watch' | 'unwatch', taskId: string): void {
    if (typeof taskId !== 'string') return;
    if (op === 'unwatch') {
      watches.get(taskId)?.();
      watches.delete(taskId);
      return;
    }
    if (watches.has(taskId)) return;
    const unwatch = this.#store.watch(taskId, (task) => {
      link.post({ type: 'changed', taskId, task: task === undefined || valueProblem(task, kMaxPortDepth) === undefined ? task : undefined });
      // Deleted or expired: the store tells no more, and the client forgets the id too.
      if (task === undefined && watches.get(taskId) === unwatch) {
        watches.delete(taskId);
        unwatch();
      }
    });
    watches.set(taskId, unwatch);
  }

  #serve(link: Link, request: TaskStoreRequest, runnerPrefix: string | undefined): void {
    const id = request.id;
    this.#call(request, runnerPrefix).then(
      (value) => {
        // A user store answering with something that cannot cross a thread: the call fails, the host serves on.
        const problem = valueProblem(value, kMaxPortDepth);
        if (problem !== undefined) {
          link.post({ type: 'error', id, error: { message: `the task store's answer cannot cross to the worker: ${problem.message}` } });
          return;
        }
        if (!link.answer(id, { type: 'result', id, value })) link.post({ type: 'error', id, error: { message: 'the task store\'s answer cannot cross to the worker' } });
      },
      (error: unknown) => link.post({ type: 'error', id, error: errorToWire(error) }),
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

type Link = HostLink<FromTaskStoreHost>;

/** Worker side: a TaskStore whose calls are answered by a `TaskStoreHost` at the other end of `port`. */
export class TaskStoreClient implements TaskStore {
  readonly #client: PortClient<TaskStoreRequest, unknown, Subscription>;
  /** Local listeners per watched task id: the host is asked once per id. */
  readonly #watchers = new Map<string, Set<TaskListener>>();

  constructor(port: MessagePort, options: TaskStoreClientOptions = {}) {
    this.#client = new PortClient(port, {
      ...kWording,
      timeoutMs: options.callTimeoutMs ?? kDefaultCallTimeoutMs,
      onProblem: options.onProblem ?? warnProblem,
      receive: (message) => this.#onMessage(message as FromTaskStoreHost),
      onShut: () => this.#watchers.clear(),
    });
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
    // The host is asked once per id, however many listeners this thread has.
    return addWatcher(this.#watchers, taskId, listener, () => this.#client.post({ op: 'watch', taskId }), () => this.#client.post({ op: 'unwatch', taskId }));
  }

  /** Closes this end of the port: pending calls reject with `transport_closed`. The host's store stays open. */
  async close(): Promise<void> {
    this.#client.close();
  }

  #call(request: TaskStoreRequest): Promise<unknown> {
    if (this.#client.closed) return this.#client.call(request);
    // What the host could not deserialise is refused here, before it is sent.
    const problem = valueProblem(request, kMaxPortDepth);
    if (problem !== undefined) return Promise.reject(new TypeError(`a task store call cannot cross threads: ${problem.message}`));
    return this.#client.call(request);
  }

  #onMessage(message: FromTaskStoreHost): void {
    if (message === null || typeof message !== 'object') return;
    if (message.type === 'changed') {
      const listeners = this.#watchers.get(message.taskId);
      if (listeners === undefined) return;
      // The host has dropped a deleted task's watch: forget it here too (its unwatch is then a no-op).
      if (message.task === undefined) this.#watchers.delete(message.taskId);
      tellAll(listeners, message.task);
      return;
    }
    if (message.type === 'result') this.#client.resolve(message.id, message.value);
    else if (message.type === 'error') this.#client.reject(message.id, errorFromWire(message.error));
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
