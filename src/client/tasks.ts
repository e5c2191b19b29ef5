/**
 * MCP tasks, client side: a tools/call the server turned into a task, driven to its end. Both
 * dialects: the 2026-07-28 extension `io.modelcontextprotocol/tasks` (flat CreateTaskResult,
 * tasks/get polling, input through tasks/update) and 2025-11-25's experimental tasks (nested
 * `{ task }`, tasks/result blocking while the server asks for input with ordinary server requests).
 */
import { CancelledError, SluiceError } from '../errors.js';
import { ProtocolError } from '../protocol/wire.js';
import type { CallToolResult, RequestOptions, ResultFields } from './types.js';
import type { JsonRpcMessage } from './transport.js';

/** The extension id a 2026-07-28 client opts in with, per request. */
export const kTasksExtension = 'io.modelcontextprotocol/tasks';

/** A task's state. `completed`, `failed` and `cancelled` are terminal and final. */
export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** One thing a task asks the client for: a server request (elicitation/create, sampling/createMessage, …). */
export interface InputRequest {
  method: string;
  params?: Record<string, unknown>;
}

/** The answers to input requests, by the key of each request: the result of that request (e.g. `{ action: 'accept', content: {…} }`). */
export type InputResponses = Record<string, Record<string, unknown>>;

/**
 * A task as the server reports it (creation, tasks/get, tasks/list). The timing fields depend on
 * the dialect: 2026-07-28 `ttlMs`/`pollIntervalMs`, 2025-11-25 `ttl`/`pollInterval` (both in ms).
 * Only a 2026-07-28 tasks/get inlines `result` (completed), `error` (failed) or `inputRequests`.
 */
export interface TaskInfo extends ResultFields {
  taskId: string;
  status: TaskStatus;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  ttlMs?: number | null;
  pollIntervalMs?: number;
  ttl?: number | null;
  pollInterval?: number;
  result?: CallToolResult;
  error?: { code: number; message: string; data?: unknown };
  inputRequests?: Record<string, InputRequest>;
}

/** A tasks/list page (2025-11-25 only). */
export interface ListTasksResult extends ResultFields {
  tasks: TaskInfo[];
  nextCursor?: string;
}

/**
 * Options of `client.callTool(name, args, { task: true, … })`. `signal` and `timeoutMs` cover the
 * whole task, not only the creating request: either sends tasks/cancel and rejects with a
 * CancelledError. `onProgress` covers the creating request only.
 */
export interface TaskCallOptions extends RequestOptions {
  /** Ask the server to run the call as a task (it may still answer synchronously). */
  task: true;
  /** 2025-11-25: the time to live to ask for (the server may change it). 2026-07-28 has no such field: ignored. */
  ttlMs?: number;
  /** Each change of status or status message, the first one included. */
  onStatus?: (task: TaskInfo) => void;
  /**
   * The task needs input: answer every request given, by key. 2026-07-28: the answers go back with
   * tasks/update. 2025-11-25: called once per server request the task sends (key: its JSON-RPC id),
   * and the answer is that request's result (declare `elicitation`/`sampling` in ClientOptions
   * `capabilities` so the server asks). Without it (or when it leaves a request unanswered), a
   * 2026-07-28 task is cancelled and result() rejects with code 'missing_client_capability'; a
   * 2025-11-25 server request is declined with -32601 and the server decides what the task does.
   * A callback that throws cancels the task and rejects result() with its error.
   */
  onInputRequired?: (requests: Record<string, InputRequest>, task: TaskInfo | undefined) => InputResponses | Promise<InputResponses>;
}

/**
 * A tool call that may run as a task. `result()` drives it to the end: it polls tasks/get at the
 * server's poll interval (held between 50 ms and 30 s) under 2026-07-28, or waits on tasks/result
 * under 2025-11-25 (polling tasks/get beside it only for `onStatus`).
 * When the server answered synchronously, there is no task: `taskId` is undefined, `status` is
 * 'completed', and `result()` resolves at once to that answer.
 */
export interface TaskHandle {
  /** The task's id; undefined when the server answered synchronously. */
  readonly taskId: string | undefined;
  /** The last status seen. */
  readonly status: TaskStatus;
  /** The last task state seen (undefined when there is no task). */
  readonly task: TaskInfo | undefined;
  /**
   * The tool's result (a tool error too: `isError`, as callTool gives it). Rejects with an RpcError
   * when the task failed (the task's error code, message and data), with a CancelledError when it
   * was cancelled (by anyone). Memoised: every call returns the same promise.
   */
  result(): Promise<CallToolResult>;
  /** Sends tasks/cancel (cooperative: the task may still end otherwise); result() settles as the task does. */
  cancel(): Promise<void>;
}

/** What a handle needs of its client. */
export interface TaskPeer {
  readonly era: 'legacy' | 'modern';
  request(method: string, params: Record<string, unknown>, options: RequestOptions & { onRequest?: (message: JsonRpcMessage) => Promise<JsonRpcMessage> }): Promise<Record<string, unknown>>;
  /** Keeps a cancel on its way alive past close() (bounded), like the client's other cancels. */
  track(sending: Promise<void>): void;
}

const kMinPollMs = 50;
const kMaxPollMs = 30_000;
/** When the server suggests no interval. */
const kDefaultPollMs = 500;

export class Task implements TaskHandle {
  readonly #peer: TaskPeer;
  readonly #options: TaskCallOptions;
  /** Aborted by the caller's signal or timeout (linked by the client); the reason is the cancel's. */
  readonly #signal: AbortSignal;
  readonly #release: () => void;
  #task: TaskInfo | undefined;
  #immediate: CallToolResult | undefined;
  #done: Promise<CallToolResult> | undefined;
  #cancelSent = false;

  /** `created` is the task the server made, or undefined with `immediate` its synchronous result. */
  constructor(peer: TaskPeer, created: TaskInfo | undefined, immediate: CallToolResult | undefined, options: TaskCallOptions, signal: AbortSignal, release: () => void) {
    this.#peer = peer;
    this.#options = options;
    this.#signal = signal;
    this.#release = release;
    this.#task = created;
    this.#immediate = immediate;
    if (created === undefined) {
      release();
      return;
    }
    options.onStatus?.(created);
    // The cancel goes out when the caller aborts, whether or not result() is being awaited.
    signal.addEventListener('abort', () => { if (!isTerminal(this.status)) this.#sendCancel(); }, { once: true });
    if (signal.aborted) this.#sendCancel();
  }

  get taskId(): string | undefined {
    return this.#task?.taskId;
  }

  get status(): TaskStatus {
    return this.#task?.status ?? 'completed';
  }

  get task(): TaskInfo | undefined {
    return this.#task;
  }

  result(): Promise<CallToolResult> {
    if (this.#done !== undefined) return this.#done;
    if (this.#task === undefined) return (this.#done = Promise.resolve(this.#immediate!));
    const drive = this.#peer.era === 'modern' ? this.#poll() : this.#wait();
    this.#done = drive.catch((error: unknown) => {
      // Whatever ended the drive, a caller's abort is the reason given.
      if (this.#signal.aborted) throw new CancelledError(reasonOf(this.#signal.reason));
      throw error;
    }).finally(() => this.#release());
    return this.#done;
  }

  async cancel(): Promise<void> {
    if (this.#task === undefined) return;
    this.#cancelSent = true;
    await this.#peer.request('tasks/cancel', { taskId: this.#task.taskId }, {});
  }

  /** Best effort, once: a cancel that fails leaves the task to its TTL. */
  #sendCancel(): void {
    if (this.#cancelSent || this.#task === undefined) return;
    this.#cancelSent = true;
    this.#peer.track(this.#peer.request('tasks/cancel', { taskId: this.#task.taskId }, {}).then(() => {}, () => {}));
  }

  #see(task: TaskInfo): void {
    const before = this.#task;
    this.#task = task;
    if (before === undefined || before.status !== task.status || before.statusMessage !== task.statusMessage) this.#options.onStatus?.(task);
  }

  #get(signal: AbortSignal): Promise<TaskInfo> {
    return this.#peer.request('tasks/get', { taskId: this.#task!.taskId }, { signal }) as Promise<TaskInfo>;
  }

  #interval(): number {
    const suggested = this.#task?.pollIntervalMs ?? this.#task?.pollInterval;
    return Math.min(kMaxPollMs, Math.max(kMinPollMs, typeof suggested === 'number' && Number.isFinite(suggested) ? suggested : kDefaultPollMs));
  }

  /** A user callback: if it throws, the task is cancelled (nobody is left to drive it) and the error is result()'s. */
  async #callback<T>(run: () => T | Promise<T>): Promise<T> {
    try {
      return await run();
    } catch (error) {
      this.#sendCancel();
      throw error;
    }
  }

  /** 2026-07-28: tasks/get until terminal, answering input with tasks/update. */
  async #poll(): Promise<CallToolResult> {
    const taskId = this.#task!.taskId;
    const answered = new Set<string>(); // tasks/update is eventually consistent: a key answered is not answered again
    for (;;) {
      const task = await this.#get(this.#signal);
      await this.#callback(() => this.#see(task));
      switch (task.status) {
        case 'completed':
          if (task.result === undefined) throw new SluiceError('invalid_response', `the task ${taskId} completed without a result`);
          return task.result;
        case 'failed':
          throw new ProtocolError(task.error?.code ?? -32603, task.error?.message ?? task.statusMessage ?? 'the task failed', task.error?.data);
        case 'cancelled':
          throw new CancelledError(task.statusMessage ?? 'the task was cancelled');
        case 'input_required': {
          const pending = Object.entries(task.inputRequests ?? {}).filter(([key]) => !answered.has(key));
          if (pending.length === 0) break;
          const requests = Object.fromEntries(pending);
          const onInput = this.#options.onInputRequired;
          const responses = onInput === undefined ? {} : await this.#callback(() => onInput(requests, task));
          const missing = Object.keys(requests).filter((key) => responses[key] === undefined);
          if (missing.length > 0) {
            this.#sendCancel();
            const methods = [...new Set(missing.map((key) => requests[key]!.method))].join(', ');
            throw new SluiceError('missing_client_capability', `the task ${taskId} needs input (${methods}) that ${onInput === undefined ? 'no onInputRequired was given to answer' : 'onInputRequired left unanswered'}: it was cancelled`);
          }
          const inputResponses = Object.fromEntries(Object.keys(requests).map((key) => [key, responses[key]!]));
          await this.#peer.request('tasks/update', { taskId, inputResponses }, { signal: this.#signal });
          for (const key of Object.keys(requests)) answered.add(key);
          continue; // read the effect at once
        }
        default:
          break;
      }
      await sleep(this.#interval(), this.#signal);
    }
  }

  /** 2025-11-25: tasks/result blocks until terminal; the server's input requests come on its stream. */
  async #wait(): Promise<CallToolResult> {
    const taskId = this.#task!.taskId;
    const polling = new AbortController();
    const onAbort = () => polling.abort();
    this.#signal.addEventListener('abort', onAbort, { once: true });
    // tasks/result says nothing until the end: status changes come from tasks/get beside it.
    const poller = this.#options.onStatus === undefined ? Promise.resolve() : this.#pollStatus(polling.signal);
    try {
      const result = await this.#peer.request('tasks/result', { taskId }, { signal: this.#signal, onRequest: (m) => this.#answerServerRequest(m) }) as CallToolResult;
      // Without onStatus nothing read the end state: tasks/result returning means terminal (a tool error is 'failed' in 2025-11-25).
      if (this.#options.onStatus === undefined) this.#task = { ...this.#task!, status: result.isError === true ? 'failed' : 'completed' };
      return result;
    } catch (error) {
      // The result of a task someone cancelled is an error: say cancelled, as the 2026-07-28 path does.
      if (error instanceof ProtocolError && !this.#signal.aborted) {
        const task = await this.#get(polling.signal).catch(() => undefined);
        if (task !== undefined) this.#see(task);
        if (task?.status === 'cancelled') throw new CancelledError(task.statusMessage ?? 'the task was cancelled');
        if (task === undefined && this.#options.onStatus === undefined) this.#task = { ...this.#task!, status: 'failed' };
      }
      throw error;
    } finally {
      polling.abort();
      this.#signal.removeEventListener('abort', onAbort);
      await poller;
      // The terminal status, for onStatus (the task may already be gone: best effort).
      if (this.#options.onStatus !== undefined && !isTerminal(this.status) && !this.#signal.aborted) {
        const task = await this.#get(new AbortController().signal).catch(() => undefined);
        if (task !== undefined) this.#see(task);
      }
    }
  }

  async #pollStatus(signal: AbortSignal): Promise<void> {
    try {
      while (!signal.aborted && !isTerminal(this.status)) {
        await sleep(this.#interval(), signal);
        this.#see(await this.#get(signal));
      }
    } catch {
      // Stopped, or a failed poll: status reports are best effort; tasks/result decides the outcome.
    }
  }

  /** A server request on the tasks/result stream (elicitation, sampling, …): onInputRequired answers. */
  async #answerServerRequest(message: JsonRpcMessage): Promise<JsonRpcMessage> {
    const id = message.id;
    const method = String(message.method);
    if (method === 'ping') return { jsonrpc: '2.0', id, result: {} };
    const onInput = this.#options.onInputRequired;
    const key = String(id);
    if (onInput !== undefined) {
      const params = message.params as Record<string, unknown> | undefined;
      const task: TaskInfo = { ...this.#task!, status: 'input_required' };
      const responses = await this.#callback(() => onInput({ [key]: params === undefined ? { method } : { method, params } }, task));
      const answer = responses[key];
      if (answer !== undefined) return { jsonrpc: '2.0', id, result: answer };
    }
    return { jsonrpc: '2.0', id, error: { code: -32601, message: 'Method not found' } };
  }
}

export function isTerminal(status: TaskStatus): boolean {
  return status === 'completed' || status === 'failed' || status === 'cancelled';
}

function sleep(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal.aborted) {
      reject(new CancelledError(reasonOf(signal.reason)));
      return;
    }
    const onAbort = () => {
      clearTimeout(timer);
      reject(new CancelledError(reasonOf(signal.reason)));
    };
    const timer = setTimeout(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    }, ms);
    signal.addEventListener('abort', onAbort, { once: true });
  });
}

export function reasonOf(reason: unknown): string {
  if (typeof reason === 'string') return reason;
  if (reason instanceof Error) return reason.message;
  return reason === undefined ? 'cancelled' : String(reason);
}
