/**
 * A task record as the flat hash of strings RedisTaskStore keeps (`<prefix>task:<id>`), and back.
 * Fields: id, owner, dialect, tool, runner, status, msg, createdAt, updatedAt, ttl, poll, version,
 * result (JSON text as given), error, reqs, resps, progress, ptoken and seen (JSON), and beside
 * the record: expiresAt, bytes (payload bytes counted), seq, node, client (the Lua scripts set
 * the last three). Pure: no Redis code here.
 */
import type { TaskDialect, TaskRecord, TaskStatus } from '../task.js';
import { deepFreeze, expiresAt, jsonText, payloadTextBytes } from '../transitions.js';
import type { Draft } from '../transitions.js';

/** A task as read from its hash: the record and what the store keeps beside it. */
export interface Row {
  readonly record: TaskRecord;
  /** Every input request key the task ever had (keys are never reused within a task). */
  readonly seen: readonly string[];
  readonly expiresAt: number;
}

/** The field/value pairs a create writes. */
export function createFields(record: TaskRecord): (string | number)[] {
  const fields: (string | number)[] = [
    'id', record.taskId, 'owner', record.owner, 'dialect', record.dialect, 'tool', record.toolName, 'runner', record.runner,
    'status', record.status, 'createdAt', record.createdAt, 'updatedAt', record.lastUpdatedAt, 'ttl', record.ttlMs,
    'poll', record.pollIntervalMs, 'version', record.version, 'expiresAt', expiresAt(record), 'bytes', 0,
  ];
  if (record.progressToken !== undefined) fields.push('ptoken', JSON.stringify(record.progressToken));
  if (record.traceparent !== undefined) fields.push('trace', record.traceparent);
  return fields;
}

/**
 * What a change writes: field/value pairs to set (flat), the fields to delete (now undefined), and
 * the payload bytes of `next` (`payloadBytes`, counted from the JSON text written here).
 */
export function changeFields(next: Draft, seen: readonly string[]): { set: string[]; del: string[]; bytes: number } {
  const error = jsonText(next.error);
  const requests = jsonText(next.inputRequests);
  const responses = jsonText(next.inputResponses);
  const fields: [string, string | undefined][] = [
    ['status', next.status],
    ['msg', next.statusMessage],
    ['result', next.resultJson],
    ['error', error],
    ['reqs', requests],
    ['resps', responses],
    ['progress', jsonText(next.progress)],
    ['seen', seen.length === 0 ? undefined : JSON.stringify(seen)],
  ];
  const set: string[] = [];
  const del: string[] = [];
  for (const [name, value] of fields) {
    if (value === undefined) del.push(name);
    else set.push(name, value);
  }
  return { set, del, bytes: payloadTextBytes(next.resultJson, error, requests, responses) };
}

/** A script's HGETALL reply (a flat field/value array; nil for no task) as an object. */
export function hashOf(reply: unknown): Record<string, string> {
  const out: Record<string, string> = {};
  if (!Array.isArray(reply)) return out;
  for (let i = 0; i + 1 < reply.length; i += 2) out[String(reply[i])] = String(reply[i + 1]);
  return out;
}

/** The task of a hash (undefined for an empty one: no task), deeply frozen like MemoryTaskStore's records. */
export function decodeRow(f: Record<string, string>): Row | undefined {
  if (f.id === undefined) return undefined;
  const record: Draft = {
    taskId: f.id,
    owner: f.owner,
    dialect: f.dialect as TaskDialect,
    toolName: f.tool,
    runner: f.runner,
    status: f.status as TaskStatus,
    createdAt: Number(f.createdAt),
    lastUpdatedAt: Number(f.updatedAt),
    ttlMs: Number(f.ttl),
    pollIntervalMs: Number(f.poll),
    version: Number(f.version),
  };
  if (f.msg !== undefined) record.statusMessage = f.msg;
  if (f.result !== undefined) record.resultJson = f.result;
  if (f.error !== undefined) record.error = JSON.parse(f.error) as TaskRecord['error'];
  if (f.reqs !== undefined) record.inputRequests = JSON.parse(f.reqs) as TaskRecord['inputRequests'];
  if (f.resps !== undefined) record.inputResponses = JSON.parse(f.resps) as TaskRecord['inputResponses'];
  if (f.ptoken !== undefined) record.progressToken = JSON.parse(f.ptoken) as string | number;
  if (f.trace !== undefined) record.traceparent = f.trace;
  if (f.progress !== undefined) record.progress = JSON.parse(f.progress) as TaskRecord['progress'];
  const seen = f.seen === undefined ? [] : JSON.parse(f.seen) as string[];
  return { record: deepFreeze(record), seen, expiresAt: Number(f.expiresAt) };
}
