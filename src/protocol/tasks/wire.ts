/**
 * The two task dialects on the wire. They are not compatible and never mix: 2025-11-25 experimental
 * tasks (legacy era: `capabilities.tasks`, nested create result, `ttl`/`pollInterval`) and the
 * 2026-07-28 extension `io.modelcontextprotocol/tasks` (modern era: per-request opt-in, flat
 * `resultType: "task"`, `ttlMs`/`pollIntervalMs`, inlined result/error/inputRequests).
 */
import type { TaskRecord } from '../../tasks/task.js';
import { isTerminal } from '../../tasks/task.js';
import { ErrorCode, ProtocolError, kMetaClientCapabilities } from '../wire.js';

export const kTasksExtension = 'io.modelcontextprotocol/tasks';
export const kMetaRelatedTask = 'io.modelcontextprotocol/related-task';
/** Where a task record that tasks/get returns carries the tool's latest progress (`{ progress, total?, message? }`). */
export const kMetaTaskProgress = 'sluice/progress';

/** The registry row of a task's running tool (in its owner's scope). */
export function taskRowId(taskId: string): string {
  return `task:${taskId}`;
}

/** 2026-07-28: the request's own `_meta` capabilities opt into the tasks extension. */
export function optedIn(params: Record<string, unknown> | undefined): boolean {
  const meta = params?._meta as Record<string, unknown> | undefined;
  const capabilities = meta?.[kMetaClientCapabilities] as Record<string, unknown> | undefined;
  const extensions = capabilities?.extensions as Record<string, unknown> | undefined;
  const tasks = extensions?.[kTasksExtension];
  return tasks !== null && typeof tasks === 'object';
}

export const kNeedsTasksExtension = Object.freeze(new ProtocolError(
  ErrorCode.MissingRequiredClientCapability, 'Missing required client capability',
  Object.freeze({ requiredCapabilities: { extensions: { [kTasksExtension]: {} } } }), 400,
));

export const kTaskNotFound = Object.freeze(new ProtocolError(ErrorCode.InvalidParams, 'Failed to retrieve task: Task not found'));

/** A task id from params: a short printable string, or -32602. */
export function taskIdOf(params: Record<string, unknown> | undefined): string {
  const id = params?.taskId;
  if (typeof id !== 'string' || id.length === 0 || id.length > 256) throw new ProtocolError(ErrorCode.InvalidParams, 'taskId must be a non-empty string');
  return id;
}

function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** 2025-11-25 `Task`. */
export function legacyTask(task: TaskRecord): Record<string, unknown> {
  const out: Record<string, unknown> = {
    taskId: task.taskId,
    status: task.status,
    createdAt: iso(task.createdAt),
    lastUpdatedAt: iso(task.lastUpdatedAt),
    ttl: task.ttlMs,
    pollInterval: task.pollIntervalMs,
  };
  if (task.statusMessage !== undefined) out.statusMessage = task.statusMessage;
  return out;
}

/** 2026-07-28 `Task`; `detailed` adds what its status inlines (tasks/get, notifications/tasks). */
export function modernTask(task: TaskRecord, detailed: boolean): Record<string, unknown> {
  const out: Record<string, unknown> = {
    taskId: task.taskId,
    status: task.status,
    createdAt: iso(task.createdAt),
    lastUpdatedAt: iso(task.lastUpdatedAt),
    ttlMs: task.ttlMs,
    pollIntervalMs: task.pollIntervalMs,
  };
  if (task.statusMessage !== undefined) out.statusMessage = task.statusMessage;
  if (!detailed) return out;
  // The inlined result is the original request's result, and every 2026-07-28 result says its type.
  if (task.status === 'completed' && task.resultJson !== undefined) out.result = { ...JSON.parse(task.resultJson) as Record<string, unknown>, resultType: 'complete' };
  else if (task.status === 'failed') out.error = task.error ?? { code: ErrorCode.InternalError, message: task.statusMessage ?? 'Task failed' };
  else if (task.status === 'input_required') out.inputRequests = task.inputRequests ?? {};
  return out;
}

/**
 * tasks/get of an unfinished task: its latest progress, as both dialects allow (a client that polls
 * sees no notifications/progress). `statusMessage` says it in words when the task has no message of
 * its own; `_meta["sluice/progress"]` has the numbers. A finished task reports none (progress ends
 * with the task).
 */
export function withProgress(out: Record<string, unknown>, task: TaskRecord): Record<string, unknown> {
  const p = task.progress;
  if (p === undefined || isTerminal(task.status)) return out;
  const progress: Record<string, unknown> = { progress: p.progress };
  if (p.total !== undefined) progress.total = p.total;
  if (p.message !== undefined) progress.message = p.message;
  out._meta = { [kMetaTaskProgress]: progress };
  out.statusMessage ??= p.message ?? `progress ${p.progress}${p.total === undefined ? '' : `/${p.total}`}`;
  return out;
}
