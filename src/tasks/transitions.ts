/**
 * The task state machine, written once: pure functions from a record (and the limits) and a change
 * to the next record, or to a refusal. The stores only persist what these return. MemoryTaskStore
 * calls them all; RedisTaskStore calls them for create's record, update and respond, and its Lua
 * scripts (stores/redis-lua.ts) mirror the rest inside Redis, where a transition must be one
 * script: create's bounds (`createRefusal`), cancel (`applyCancel`), the byte bounds
 * (`byteRefusal`) and the store ending a task (`failedDraft`). test/tasks/table-model.ts drives
 * both stores and these functions with the same random operations and compares every answer.
 */
import { SluiceError } from '../errors.js';
import type { TaskLimits } from './store.js';
import { isTerminal } from './task.js';
import type { NewTask, TaskChange, TaskError, TaskInputRequest, TaskRecord, TaskStatus } from './task.js';

/** A record being built: TaskRecord with its fields writable. */
export type Draft = { -readonly [K in keyof TaskRecord]: TaskRecord[K] };

/** What a change's payload is, for the message of the bound it passes. */
export type PayloadKind = 'result' | 'input' | 'data';

/** A change to commit: the next record (version and time not yet stamped) and the input request keys it used. */
export interface Transition {
  readonly next: Draft;
  /** Input request keys first used by this change (keys are never reused within a task). */
  readonly added: readonly string[];
  readonly what: PayloadKind;
}

/** JSON-RPC internal error: what a task fails with when the store ends it (bounds, expiry, a lost runner). */
export const kInternalError = -32603;

/** Why a task past its lifetime failed (its watchers see it before the task is deleted). */
export const kExpiredReason = 'task expired';

/** No keys added: shared, so a change that adds none allocates no array. */
const kNoKeys: readonly string[] = Object.freeze([]);

const kStatuses: ReadonlySet<string> = new Set<TaskStatus>(['working', 'input_required', 'completed', 'failed', 'cancelled']);

/** Throws a TypeError unless `task` is a NewTask (a caller's bug, not a client's). */
export function checkNewTask(task: NewTask): void {
  if (task === null || typeof task !== 'object') throw new TypeError('create needs a task');
  for (const key of ['taskId', 'owner', 'toolName', 'runner'] as const) {
    if (typeof task[key] !== 'string' || task[key] === '') throw new TypeError(`task.${key} must be a non-empty string`);
  }
  if (task.dialect !== 'legacy' && task.dialect !== 'modern') throw new TypeError(`task.dialect must be 'legacy' or 'modern'`);
}

/** Throws a TypeError when `change` names no task status (checked before the task is looked up). */
export function checkChange(change: TaskChange): void {
  if (change.status !== undefined && !kStatuses.has(change.status)) throw new TypeError(`not a task status: ${String(change.status)}`);
}

/** The client named for per-client quotas, or undefined (none, or empty: only per-owner and node-wide bounds apply). */
export function clientOf(task: NewTask): string | undefined {
  return typeof task.client === 'string' && task.client !== '' ? task.client : undefined;
}

/** The lifetime granted: a positive request (floored) capped at `maxTtlMs`; anything else gets the default. */
export function grantedTtl(requested: number | undefined, limits: TaskLimits): number {
  const asked = typeof requested === 'number' && Number.isFinite(requested) && requested >= 1 ? Math.floor(requested) : limits.defaultTtlMs;
  return Math.min(asked, limits.maxTtlMs);
}

/** The record a create stores (version 1, working), frozen. */
export function newRecord(task: NewTask, limits: TaskLimits, now: number): TaskRecord {
  const draft: Draft = {
    taskId: task.taskId,
    owner: task.owner,
    dialect: task.dialect,
    toolName: task.toolName,
    runner: task.runner,
    status: 'working',
    createdAt: now,
    lastUpdatedAt: now,
    ttlMs: grantedTtl(task.ttlMs, limits),
    pollIntervalMs: limits.pollIntervalMs,
    version: 1,
  };
  if (task.progressToken !== undefined) draft.progressToken = task.progressToken;
  if (typeof task.traceparent === 'string' && task.traceparent.length <= 256) draft.traceparent = task.traceparent;
  return Object.freeze(draft);
}

/** When the task stops existing (the stores' clock, epoch ms): at that instant it is already unknown. */
export function expiresAt(record: TaskRecord): number {
  return record.createdAt + record.ttlMs;
}

/** What is held when a task is created: live tasks in the store and the owner's, and the client's (none: undefined). */
export interface Holdings {
  readonly tasks: number;
  readonly ownerTasks: number;
  readonly client?: { readonly tasks: number; readonly bytes: number } | undefined;
}

/** The bound a create passes, and how much is held against it. */
export interface CreateRefusal {
  readonly bound: 'maxTasksPerClient' | 'maxStoredBytesPerClient' | 'maxTasks' | 'maxTasksPerOwner';
  readonly held: number;
}

/**
 * Undefined when a task may be created. The client's own bounds first: a client at its quota is
 * told so (and others are unaffected) before it could ever reach the node-wide bound.
 */
export function createRefusal(held: Holdings, limits: TaskLimits): CreateRefusal | undefined {
  const { client } = held;
  if (client !== undefined && client.tasks >= limits.maxTasksPerClient) return { bound: 'maxTasksPerClient', held: client.tasks };
  if (client !== undefined && client.bytes >= limits.maxStoredBytesPerClient) return { bound: 'maxStoredBytesPerClient', held: client.bytes };
  if (held.tasks >= limits.maxTasks) return { bound: 'maxTasks', held: held.tasks };
  if (held.ownerTasks >= limits.maxTasksPerOwner) return { bound: 'maxTasksPerOwner', held: held.ownerTasks };
  return undefined;
}

/** The error a refused create rejects with: `task_quota_reached` for the client's own bounds, else `task_limit_reached`. */
export function refusalError(refusal: CreateRefusal, limits: TaskLimits): SluiceError {
  const { bound, held } = refusal;
  switch (bound) {
    case 'maxTasksPerClient':
      return new SluiceError('task_quota_reached', `this client keeps ${held} tasks, its limit (maxTasksPerClient ${limits.maxTasksPerClient}); they go when they expire`);
    case 'maxStoredBytesPerClient':
      return new SluiceError('task_quota_reached', `this client's tasks hold ${held} bytes, its limit (maxStoredBytesPerClient ${limits.maxStoredBytesPerClient})`);
    case 'maxTasks':
      return new SluiceError('task_limit_reached', `the server keeps at most ${limits.maxTasks} tasks (maxTasks) and holds that many`);
    case 'maxTasksPerOwner':
      return new SluiceError('task_limit_reached', `a client may keep at most ${limits.maxTasksPerOwner} tasks (maxTasksPerOwner) and this one has that many`);
  }
}

/**
 * The runner's change (`TaskStore.update`); undefined when the task is terminal (terminal is
 * final). `seen` says which input request keys the task ever had.
 */
export function applyUpdate(current: TaskRecord, change: TaskChange, seen: { has(key: string): boolean }): Transition | undefined {
  if (isTerminal(current.status)) return undefined;
  const next: Draft = { ...current };
  if (change.statusMessage !== undefined) next.statusMessage = String(change.statusMessage);
  if (change.resultJson !== undefined) next.resultJson = String(change.resultJson);
  if (change.error !== undefined) next.error = frozenCopy(change.error);
  if (change.progress !== undefined) next.progress = frozenCopy(change.progress);
  let added = kNoKeys;
  if (change.addInputRequests !== undefined) {
    const fresh: string[] = [];
    const requests: Record<string, TaskInputRequest> = { ...current.inputRequests };
    for (const [key, request] of Object.entries(change.addInputRequests)) {
      // A key once used stays used: an answer can never be taken for a later request.
      if (seen.has(key)) continue;
      fresh.push(key);
      requests[key] = request;
    }
    if (fresh.length > 0) {
      next.inputRequests = frozenCopy(requests);
      added = fresh;
    }
  }
  if (change.consumedResponses !== undefined && current.inputResponses !== undefined) {
    const responses: Record<string, unknown> = { ...current.inputResponses };
    for (const key of change.consumedResponses) delete responses[key];
    next.inputResponses = Object.keys(responses).length === 0 ? undefined : Object.freeze(responses);
  }
  if (change.status !== undefined) next.status = change.status;
  if (isTerminal(next.status)) {
    // Nothing can answer a finished task, nor pick an answer up: let their memory go.
    next.inputRequests = undefined;
    next.inputResponses = undefined;
  } else if (added.length > 0) {
    next.status = 'input_required';
  }
  return { next, added, what: change.resultJson !== undefined ? 'result' : 'data' };
}

/**
 * The client's answers (`TaskStore.respond`): those whose key is outstanding move to
 * `inputResponses`; with none left outstanding the task is `working` again. Undefined: nothing to
 * change (terminal, nothing outstanding, no key answered).
 */
export function applyRespond(current: TaskRecord, responses: Readonly<Record<string, unknown>>): Transition | undefined {
  const outstanding = current.inputRequests;
  if (isTerminal(current.status) || outstanding === undefined || responses === null || typeof responses !== 'object') return undefined;
  const answered = Object.keys(responses).filter((key) => Object.hasOwn(outstanding, key));
  if (answered.length === 0) return undefined;
  const requests: Record<string, TaskInputRequest> = { ...outstanding };
  const answers: Record<string, unknown> = { ...current.inputResponses };
  for (const key of answered) {
    delete requests[key];
    answers[key] = frozenCopy(responses[key]);
  }
  const left = Object.keys(requests).length;
  const next: Draft = { ...current, inputRequests: left === 0 ? undefined : Object.freeze(requests), inputResponses: Object.freeze(answers) };
  if (left === 0 && current.status === 'input_required') next.status = 'working';
  return { next, added: kNoKeys, what: 'input' };
}

/**
 * `cancelled`, its input dropped, unless terminal (undefined: the protocol layer decides what a
 * cancel of a finished task answers, and it gets the task as is).
 */
export function applyCancel(current: TaskRecord, statusMessage: string | undefined): Transition | undefined {
  if (isTerminal(current.status)) return undefined;
  const next: Draft = { ...current, status: 'cancelled', inputRequests: undefined, inputResponses: undefined };
  if (statusMessage !== undefined) next.statusMessage = String(statusMessage);
  return { next, added: kNoKeys, what: 'data' };
}

/**
 * The store ends the task: `failed` with an internal error, every payload dropped. That error is
 * not counted in the bytes (it is small and one per task, so bounded by `maxTasks`): what is
 * counted never passes `maxStoredBytes`.
 */
export function failedDraft(current: TaskRecord, message: string): Draft {
  const error: TaskError = Object.freeze({ code: kInternalError, message });
  return {
    ...current, status: 'failed', statusMessage: message, error,
    resultJson: undefined, inputRequests: undefined, inputResponses: undefined,
  };
}

/** Bytes a task makes the node hold for it: its result, error and input requests/answers as UTF-8 JSON. */
export function payloadBytes(record: Draft | TaskRecord): number {
  return payloadTextBytes(record.resultJson, jsonText(record.error), jsonText(record.inputRequests), jsonText(record.inputResponses));
}

/**
 * `payloadBytes` of a payload already made JSON text (undefined: absent), for a store that writes
 * that text anyway (RedisTaskStore): each part is serialised once.
 */
export function payloadTextBytes(result: string | undefined, error: string | undefined, requests: string | undefined, responses: string | undefined): number {
  return textBytes(result) + textBytes(error) + textBytes(requests) + textBytes(responses);
}

/** `value` as JSON text; undefined when it is absent. */
export function jsonText(value: unknown): string | undefined {
  return value === undefined ? undefined : JSON.stringify(value);
}

function textBytes(text: string | undefined): number {
  return text === undefined ? 0 : Buffer.byteLength(text);
}

/** Payload bytes held besides a change: the task's own before it, its client's (none: undefined) and the store's. */
export interface ByteHoldings {
  readonly task: number;
  readonly client: number | undefined;
  readonly total: number;
}

/** A change whose payload passes a bound: the task fails with `message` instead. */
export interface ByteRefusal {
  readonly message: string;
  /** A shared bound (the client's, the store's): expired tasks not yet swept may hold the room, so sweep and ask again. */
  readonly shared: boolean;
}

/** The failure messages of the three byte bounds, in the order checked: the task's, its client's, the store's. */
export function byteMessages(limits: TaskLimits, what: PayloadKind): readonly [string, string, string] {
  return [
    `task ${what} exceeds ${limits.maxTaskBytes} bytes`,
    `this client's task storage is full (maxStoredBytesPerClient ${limits.maxStoredBytesPerClient} bytes)`,
    `task store full (${limits.maxStoredBytes} bytes)`,
  ];
}

/**
 * Undefined when a payload of `bytes` may be stored; else why not. The client's own room is
 * checked before the store's: one client's results can fill only its share, never another's.
 */
export function byteRefusal(limits: TaskLimits, what: PayloadKind, bytes: number, held: ByteHoldings): ByteRefusal | undefined {
  // The messages are made only for a refusal: a commit within the bounds allocates none.
  if (bytes > limits.maxTaskBytes) return { message: byteMessages(limits, what)[0], shared: false };
  if (held.client !== undefined && held.client - held.task + bytes > limits.maxStoredBytesPerClient) return { message: byteMessages(limits, what)[1], shared: true };
  if (held.total - held.task + bytes > limits.maxStoredBytes) return { message: byteMessages(limits, what)[2], shared: true };
  return undefined;
}

/** `next` as the version after `previous`, changed at `now`: its undefined fields dropped, frozen. */
export function stamp(next: Draft, previous: TaskRecord, now: number): TaskRecord {
  next.version = previous.version + 1;
  next.lastUpdatedAt = now;
  // Without its undefined fields, what crosses a thread then matches what `get` gives.
  for (const key of Object.keys(next) as (keyof Draft)[]) if (next[key] === undefined) delete next[key];
  return Object.freeze(next);
}

/** A deep copy, deeply frozen: what a caller passed in can no longer change what the store keeps. */
export function frozenCopy<T>(value: T): T {
  return deepFreeze(structuredClone(value));
}

/** Freezes `value` and everything in it; typed arrays are left as they are. */
export function deepFreeze<T>(value: T): T {
  // Typed arrays cannot be frozen (their elements are not properties); JSON never makes them.
  if (ArrayBuffer.isView(value)) return value;
  if (value !== null && typeof value === 'object' && !Object.isFrozen(value)) {
    Object.freeze(value);
    for (const inner of Object.values(value)) deepFreeze(inner);
  }
  return value;
}
