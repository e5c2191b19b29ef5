import { randomBytes } from 'node:crypto';
import { SluiceError } from '../../errors.js';
import type { RequestInput } from '../../tools/context.js';
import { toToolResult } from '../../tools/define.js';
import type { CallToolResult, Tool, ToolOutput } from '../../tools/define.js';
import type { InputRequired } from '../../tools/context.js';
import type { Run } from '../run.js';
import { Counter } from '../../telemetry/counters.js';
import { ErrorCode, ProtocolError } from '../wire.js';
import { TaskRun } from './task-run.js';
import type { TaskHost } from './task-run.js';
import { kNeedsTasksExtension, legacyTask, modernTask, optedIn, taskRowId } from './wire.js';

/** How a tools/call is served. */
export type CallMode = 'plain' | 'task';

type CallResult = CallToolResult | InputRequired | Record<string, unknown>;

const kBusy = Object.freeze(new ProtocolError(ErrorCode.InternalError, 'Server busy: no room to track another task', undefined, 503));

/** A task's id: 128 random bits (unguessable: the owner check is not the only guard). */
function newTaskId(): string {
  return randomBytes(16).toString('base64url');
}

/**
 * Whether a tools/call becomes a task, and starting it. The dialects differ:
 * - 2025-11-25 (legacy era): the client asks with `params.task`; a `forbidden` tool refuses that,
 *   a `required` tool refuses a call without it (both -32601). The task is stored before the tool
 *   starts and the result is `{ task }`.
 * - 2026-07-28: the client opts in per request in `_meta`; the server decides. A call whose handler
 *   settles before the event loop turns (a sync handler, or an async one that returned without
 *   waiting on I/O) is answered directly, an input-required round included (MRTR before a task);
 *   otherwise the task is stored and the flat `resultType: "task"` result is sent only then
 *   (a `tasks/get` right after resolves). Without the opt-in an `optional` tool runs as a plain
 *   call and a `required` one is refused with -32021.
 */
export class TaskCalls {
  readonly #host: TaskHost | undefined;

  constructor(host: TaskHost | undefined) {
    this.#host = host;
  }

  /** Decides (or refuses) for one call. */
  mode(run: Run, tool: Tool, params: Record<string, unknown> | undefined): CallMode {
    const support = tool.taskSupport ?? 'forbidden';
    if (run.era.name === 'modern') {
      if (support === 'forbidden') return 'plain';
      if (this.#host !== undefined && optedIn(params)) return 'task';
      if (support === 'optional') return 'plain';
      if (this.#host === undefined) throw new ProtocolError(ErrorCode.MethodNotFound, `Tool ${tool.name} must run as a task, and tasks are disabled on this server`);
      throw kNeedsTasksExtension;
    }
    if (this.#host === undefined) {
      // A server that has not declared tasks ignores the task field.
      if (support === 'required') throw new ProtocolError(ErrorCode.MethodNotFound, `Tool ${tool.name} must run as a task, and tasks are disabled on this server`);
      return 'plain';
    }
    const asked = params?.task;
    if (asked === undefined) {
      if (support === 'required') throw new ProtocolError(ErrorCode.MethodNotFound, `Tool ${tool.name} requires task-augmented execution (params.task)`);
      return 'plain';
    }
    if (asked === null || typeof asked !== 'object' || Array.isArray(asked)) throw new ProtocolError(ErrorCode.InvalidParams, 'params.task must be an object');
    if (support === 'forbidden') throw new ProtocolError(ErrorCode.MethodNotFound, `Tool ${tool.name} does not support task-augmented execution`);
    return 'task';
  }

  /** Starts `tool` as a task for `run` (mode was 'task'). */
  start(run: Run, tool: Tool, args: Record<string, unknown>, params: Record<string, unknown> | undefined, input: RequestInput): CallResult | Promise<CallResult> {
    const host = this.#host!;
    const taskId = newTaskId();
    const owner = run.info.scope;
    const handle = host.registry.track(taskRowId(taskId), owner);
    if (!handle.ok) throw kBusy;
    const token = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
    const legacy = run.era.name === 'legacy';
    const task = new TaskRun(host, taskId, owner, legacy ? 'legacy' : 'modern', tool, handle,
      legacy && (typeof token === 'string' || typeof token === 'number') ? token : undefined, input.clientCapabilities, run.info.auth);
    // Until the task exists, the request's cancel (its client gone) is the task's.
    const onAbort = (): void => task.cancel(run.signal.reason instanceof Error ? run.signal.reason.message : 'the request was cancelled');
    run.signal.addEventListener('abort', onAbort, { once: true });
    const unlink = (): void => run.signal.removeEventListener('abort', onAbort);
    return legacy ? this.#legacy(run, task, args, params, input, unlink) : this.#modern(run, task, args, input, unlink);
  }

  async #legacy(run: Run, task: TaskRun, args: Record<string, unknown>, params: Record<string, unknown> | undefined, input: RequestInput, unlink: () => void): Promise<CallResult> {
    const host = this.#host!;
    const ttl = (params?.task as Record<string, unknown>).ttl;
    let record;
    try {
      record = await host.store.create({
        taskId: task.taskId, owner: task.owner, client: run.info.client, dialect: 'legacy', toolName: task.tool.name, runner: host.runner,
        ttlMs: typeof ttl === 'number' && Number.isSafeInteger(ttl) && ttl > 0 ? ttl : undefined,
        progressToken: task.progressToken, traceparent: run.traceContext()?.traceparent,
      });
    } catch (error) {
      unlink();
      task.releaseUnused();
      throw storeRefusal(error, host);
    }
    unlink();
    const span = run.taskSpan(record.taskId, 'legacy', task.tool.name);
    let output: ToolOutput | Promise<ToolOutput>;
    try {
      output = task.invoke(args, input);
    } catch (error) {
      output = Promise.reject(error);
    }
    task.created(output, span);
    return { task: legacyTask(record) };
  }

  #modern(run: Run, task: TaskRun, args: Record<string, unknown>, input: RequestInput, unlink: () => void): CallResult | Promise<CallResult> {
    let output: ToolOutput | Promise<ToolOutput>;
    try {
      output = task.invoke(args, input);
    } catch (error) {
      unlink();
      task.releaseUnused();
      throw error;
    }
    if (!(output instanceof Promise)) {
      unlink();
      task.releaseUnused();
      return toToolResult(task.tool, output);
    }
    const pending = output;
    return new Promise<CallResult>((resolve, reject) => {
      let decided = false;
      // Settled before the event loop turns: answered directly (no task, nothing stored).
      const turn = setImmediate(() => {
        decided = true;
        this.#becomeTask(run, task, pending, unlink).then(resolve, reject);
      });
      const direct = (answer: () => void): void => {
        if (decided) return;
        decided = true;
        clearImmediate(turn);
        unlink();
        task.releaseUnused();
        answer();
      };
      pending.then(
        (value) => direct(() => resolve(toToolResult(task.tool, value))),
        (error: unknown) => direct(() => reject(error)),
      );
    });
  }

  /** The handler is still running: store the task, then answer with it. */
  async #becomeTask(run: Run, task: TaskRun, output: Promise<ToolOutput>, unlink: () => void): Promise<CallResult> {
    const host = this.#host!;
    let record;
    try {
      record = await host.store.create({ taskId: task.taskId, owner: task.owner, client: run.info.client, dialect: 'modern', toolName: task.tool.name, runner: host.runner, traceparent: run.traceContext()?.traceparent });
    } catch (error) {
      // A client at its own quota is refused (429), not served without a task: serving it would let
      // one client hold as many open requests as it likes past its share.
      if (!(error instanceof SluiceError && error.code === 'task_limit_reached')) {
        unlink();
        task.cancel(error instanceof SluiceError && error.code === 'task_quota_reached' ? 'this client is at its task quota' : 'the task could not be stored');
        task.releaseUnused();
        throw storeRefusal(error, host);
      }
      // Past a task bound the server serves the call without a task (its choice in 2026-07-28):
      // the request stays open until the tool ends, and its cancel still reaches the tool.
      try {
        return await toToolResult(task.tool, await output);
      } finally {
        unlink();
        task.releaseUnused();
      }
    }
    unlink();
    const span = run.taskSpan(record.taskId, 'modern', task.tool.name);
    if (run.cancelled) task.cancel('the request was cancelled');
    task.created(output, span);
    return { ...modernTask(record, false), resultType: 'task' };
  }
}

/** A store's refusal as the client sees it (429s carry Retry-After on HTTP). */
function storeRefusal(error: unknown, host: TaskHost): ProtocolError {
  if (error instanceof ProtocolError) return error;
  if (error instanceof SluiceError && error.code === 'task_quota_reached') {
    host.counters.add(Counter.TaskQuotaRefused);
    return new ProtocolError(ErrorCode.InvalidRequest, `Too many tasks for this client: ${error.message}`, undefined, 429);
  }
  if (error instanceof SluiceError && error.code === 'task_limit_reached') return new ProtocolError(ErrorCode.InvalidRequest, `Too many tasks: ${error.message}`, undefined, 429);
  return new ProtocolError(ErrorCode.InternalError, `The task could not be stored: ${error instanceof Error ? error.message : String(error)}`);
}
