import fc from 'fast-check';
import { expect } from 'vitest';
import { SluiceError } from '../../src/errors.js';
import { resolveTaskLimits } from '../../src/tasks/limits.js';
import type { TaskStore } from '../../src/tasks/store.js';
import type { NewTask, TaskChange, TaskRecord } from '../../src/tasks/task.js';
import {
  applyCancel, applyRespond, applyUpdate, byteRefusal, createRefusal, expiresAt, failedDraft, newRecord,
  payloadBytes, refusalError, stamp,
} from '../../src/tasks/transitions.js';
import type { Transition } from '../../src/tasks/transitions.js';

/**
 * The transition table as a store: every decision is src/tasks/transitions.ts's, kept in plain
 * maps with no cleverness (expired tasks are dropped before every operation). A property test
 * drives this and a real store (MemoryTaskStore, RedisTaskStore over a real redis-server) with the
 * same random operations and requires every answer (whole records, refusals with their code and
 * message, counts) and every stored record and byte count to agree: so the Lua scripts, which
 * cannot call TypeScript, are checked against the same table the memory store runs.
 */

/** Small bounds, so random sequences reach every one of them. */
export const kTableLimits = resolveTaskLimits({
  maxTasks: 8, maxTasksPerOwner: 4, maxTasksPerClient: 5, maxTaskBytes: 96, maxStoredBytesPerClient: 160, maxStoredBytes: 240,
  defaultTtlMs: 100, maxTtlMs: 300, pollIntervalMs: 7,
});

const kOwners = ['session:a', 'principal:b', 'ip:c'] as const;
export const kClients = [undefined, 'principal:x', 'ip:y'] as const;
/** Runners on the two nodes a cluster test runs (`<node>/<thread>`: a lost runner is looked for on its node). */
const kRunners = ['A/1', 'A/2', 'B/1'] as const;
const kKeys = ['k1', 'k2', 'k3'] as const;

interface Entry {
  record: TaskRecord;
  seen: string[];
  bytes: number;
  readonly client: string | undefined;
}

export class TableStore {
  readonly tasks = new Map<string, Entry>();
  now = 0;

  #expire(): void {
    for (const [id, e] of this.tasks) if (this.now >= expiresAt(e.record)) this.tasks.delete(id);
  }

  #live(id: string, owner?: string): Entry | undefined {
    this.#expire();
    const e = this.tasks.get(id);
    return e !== undefined && (owner === undefined || e.record.owner === owner) ? e : undefined;
  }

  #clientBytes(client: string | undefined): number | undefined {
    if (client === undefined) return undefined;
    let bytes = 0;
    for (const e of this.tasks.values()) if (e.client === client) bytes += e.bytes;
    return bytes;
  }

  bytes(): { total: number; clients: Record<string, number> } {
    this.#expire();
    const clients: Record<string, number> = {};
    let total = 0;
    for (const e of this.tasks.values()) {
      total += e.bytes;
      if (e.client !== undefined) clients[e.client] = (clients[e.client] ?? 0) + e.bytes;
    }
    return { total, clients };
  }

  create(task: NewTask): TaskRecord {
    this.#expire();
    const client = task.client === undefined || task.client === '' ? undefined : task.client;
    const all = [...this.tasks.values()];
    const mine = client === undefined ? undefined : all.filter((e) => e.client === client);
    const refusal = createRefusal({
      tasks: all.length,
      ownerTasks: all.filter((e) => e.record.owner === task.owner).length,
      client: mine === undefined ? undefined : { tasks: mine.length, bytes: this.#clientBytes(client)! },
    }, kTableLimits);
    if (refusal !== undefined) throw refusalError(refusal, kTableLimits);
    const record = newRecord(task, kTableLimits, this.now);
    this.tasks.set(task.taskId, { record, seen: [], bytes: 0, client });
    return record;
  }

  get(id: string, owner: string): TaskRecord | undefined {
    return this.#live(id, owner)?.record;
  }

  /** The owner's live ids, newest first. */
  list(owner: string, created: readonly string[]): string[] {
    this.#expire();
    return created.filter((id) => this.tasks.get(id)?.record.owner === owner).reverse();
  }

  update(id: string, change: TaskChange): TaskRecord | undefined {
    const e = this.#live(id);
    if (e === undefined) return undefined;
    return this.#commit(e, applyUpdate(e.record, change, new Set(e.seen)));
  }

  respond(id: string, owner: string, responses: Record<string, unknown>): TaskRecord | undefined {
    const e = this.#live(id, owner);
    return e === undefined ? undefined : this.#commit(e, applyRespond(e.record, responses));
  }

  cancel(id: string, owner: string, message: string | undefined): TaskRecord | undefined {
    const e = this.#live(id, owner);
    return e === undefined ? undefined : this.#commit(e, applyCancel(e.record, message));
  }

  runnerLost(runner: string, reason: string): number {
    this.#expire();
    let n = 0;
    for (const e of this.tasks.values()) {
      if (e.record.runner !== runner || ['completed', 'failed', 'cancelled'].includes(e.record.status)) continue;
      this.#fail(e, reason);
      n++;
    }
    return n;
  }

  #commit(e: Entry, step: Transition | undefined): TaskRecord {
    if (step === undefined) return e.record;
    const bytes = payloadBytes(step.next);
    const refusal = byteRefusal(kTableLimits, step.what, bytes, { task: e.bytes, client: this.#clientBytes(e.client), total: this.bytes().total });
    if (refusal !== undefined) return this.#fail(e, refusal.message);
    e.seen.push(...step.added);
    e.bytes = bytes;
    e.record = stamp(step.next, e.record, this.now);
    return e.record;
  }

  #fail(e: Entry, message: string): TaskRecord {
    e.bytes = 0;
    e.record = stamp(failedDraft(e.record, message), e.record, this.now);
    return e.record;
  }
}

/** A store under test, as the table test sees it. */
export interface Subject {
  /** Where the n-th operation goes (a cluster test spreads them over its nodes). */
  on(pick: number): TaskStore;
  /** The store's own sweep of expired tasks. */
  sweep(): Promise<void>;
  /** Tasks kept (after a sweep). */
  count(): Promise<number>;
  /** Payload bytes counted in total and per client (`clients` undefined: the store does not tell). */
  bytes(): Promise<{ total: number; clients: Record<string, number> | undefined }>;
  /** Moves the store's clock on. */
  advance(ms: number): void;
}

type ChangeSpec =
  | { kind: 'result'; size: number; final: boolean; message?: string }
  | { kind: 'error' }
  | { kind: 'status'; status: 'working' | 'input_required' | 'completed' }
  | { kind: 'ask'; keys: string[] }
  | { kind: 'consume'; keys: string[] }
  | { kind: 'progress'; progress: number; message?: string };

export type Op =
  | { op: 'create'; owner: string; client: string | undefined; runner: string; ttlMs: number | undefined; token: boolean }
  | { op: 'update'; pick: number; change: ChangeSpec }
  | { op: 'respond'; pick: number; owner: string; keys: string[] }
  | { op: 'cancel'; pick: number; owner: string; message: string | undefined }
  | { op: 'runnerLost'; runner: string }
  | { op: 'list'; owner: string; limit: number }
  | { op: 'advance'; ms: number };

const owner = fc.constantFrom(...kOwners);
const keys = fc.subarray([...kKeys], { minLength: 1 });
const message = fc.option(fc.constantFrom('half way', 'stop now', 'ünïcode ✓'), { nil: undefined });
const change: fc.Arbitrary<ChangeSpec> = fc.oneof(
  // Sizes that add up to the bounds exactly (96 per task, 160 per client, 240 in all) and pass them by one.
  fc.record({ kind: fc.constant('result' as const), size: fc.constantFrom(10, 40, 80, 96, 97), final: fc.boolean(), message }, { requiredKeys: ['kind', 'size', 'final'] }),
  fc.constant({ kind: 'error' as const }),
  fc.record({ kind: fc.constant('status' as const), status: fc.constantFrom('working' as const, 'input_required' as const, 'completed' as const) }),
  fc.record({ kind: fc.constant('ask' as const), keys }),
  fc.record({ kind: fc.constant('consume' as const), keys }),
  fc.record({ kind: fc.constant('progress' as const), progress: fc.nat(10), message }, { requiredKeys: ['kind', 'progress'] }),
);

export const ops: fc.Arbitrary<Op[]> = fc.array(fc.oneof(
  { weight: 3, arbitrary: fc.record({ op: fc.constant('create' as const), owner, client: fc.constantFrom(...kClients, 'principal:x'), runner: fc.constantFrom(...kRunners), ttlMs: fc.constantFrom(undefined, 0, 50, 150.5, 1_000), token: fc.boolean() }) },
  { weight: 4, arbitrary: fc.record({ op: fc.constant('update' as const), pick: fc.nat(), change }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('respond' as const), pick: fc.nat(), owner, keys }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('cancel' as const), pick: fc.nat(), owner, message }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('runnerLost' as const), runner: fc.constantFrom(...kRunners) }) },
  { weight: 1, arbitrary: fc.record({ op: fc.constant('list' as const), owner, limit: fc.integer({ min: 1, max: 3 }) }) },
  { weight: 2, arbitrary: fc.record({ op: fc.constant('advance' as const), ms: fc.integer({ min: 1, max: 120 }) }) },
), { minLength: 1, maxLength: 60, size: 'max' });

function toChange(c: ChangeSpec): TaskChange {
  switch (c.kind) {
    // Not final: a result kept while the task goes on (what a later failure must drop).
    case 'result': return { status: c.final ? 'completed' : undefined, resultJson: JSON.stringify('r'.repeat(c.size - 2)), statusMessage: c.message };
    case 'error': return { status: 'failed', error: { code: -32000, message: 'tool broke', data: { why: 'x' } } };
    case 'status': return { status: c.status };
    case 'ask': return { addInputRequests: Object.fromEntries(c.keys.map((k) => [k, { method: 'elicitation/create', params: { message: k } }])) };
    case 'consume': return { consumedResponses: c.keys };
    case 'progress': return { progress: { progress: c.progress, total: 10 }, statusMessage: c.message };
  }
}

/** A store's answer in a comparable form: the value, or a refusal's class, code and message. */
async function outcome<T>(run: () => Promise<T> | T): Promise<unknown> {
  try {
    return { value: await run() };
  } catch (error) {
    if (error instanceof SluiceError) return { refused: error.code, message: error.message };
    throw error;
  }
}

/** Runs `sequence` through the table and `subject`, comparing after every operation. */
export async function runAgainstTable(sequence: readonly Op[], subject: Subject): Promise<void> {
  const table = new TableStore();
  const created: string[] = [];
  const id = (pick: number) => (created.length === 0 ? 'none' : created[pick % created.length]);
  for (const [step, o] of sequence.entries()) {
    const what = `step ${step}: ${JSON.stringify(o)}`;
    const store = subject.on(step);
    let expected: unknown;
    let actual: unknown;
    switch (o.op) {
      case 'create': {
        const task: NewTask = {
          taskId: `t${created.length}`, owner: o.owner, client: o.client, dialect: 'modern', toolName: 'x', runner: o.runner, ttlMs: o.ttlMs,
          progressToken: o.token ? `p${created.length}` : undefined,
        };
        created.push(task.taskId);
        expected = await outcome(() => table.create(task));
        actual = await outcome(() => store.create(task));
        break;
      }
      case 'update':
        expected = await outcome(() => table.update(id(o.pick), toChange(o.change)));
        actual = await outcome(() => store.update(id(o.pick), toChange(o.change)));
        break;
      case 'respond': {
        const answers = Object.fromEntries(o.keys.map((k) => [k, { action: 'accept', content: { k } }]));
        expected = await outcome(() => table.respond(id(o.pick), o.owner, answers));
        actual = await outcome(() => store.respond(id(o.pick), o.owner, answers));
        break;
      }
      case 'cancel':
        expected = await outcome(() => table.cancel(id(o.pick), o.owner, o.message));
        actual = await outcome(() => store.cancel(id(o.pick), o.owner, o.message));
        break;
      case 'runnerLost':
        expected = await outcome(() => table.runnerLost(o.runner, 'runner gone'));
        actual = await outcome(() => store.runnerLost(o.runner, 'runner gone'));
        break;
      case 'list':
        expected = table.list(o.owner, created);
        actual = await listAll(store, o.owner, o.limit);
        break;
      case 'advance':
        table.now += o.ms;
        subject.advance(o.ms);
        break;
    }
    expect(actual, what).toEqual(expected);
    await compareState(table, subject, created, what);
  }
}

async function listAll(store: TaskStore, owner: string, limit: number): Promise<string[]> {
  const ids: string[] = [];
  let cursor: string | undefined;
  do {
    const page = await store.list(owner, cursor, limit);
    expect(page.tasks.length).toBeLessThanOrEqual(limit);
    ids.push(...page.tasks.map((t) => t.taskId));
    cursor = page.nextCursor;
  } while (cursor !== undefined);
  return ids;
}

/** Every task as each owner sees it, then (after a sweep) the counts and the bytes held. */
async function compareState(table: TableStore, subject: Subject, created: readonly string[], what: string): Promise<void> {
  for (const [i, taskId] of created.entries()) {
    for (const owner of kOwners) {
      expect(await subject.on(i).get(taskId, owner), `${what}: get(${taskId}, ${owner})`).toEqual(table.get(taskId, owner));
    }
  }
  await subject.sweep();
  const bytes = table.bytes();
  expect(await subject.count(), `${what}: tasks kept`).toBe(table.tasks.size);
  const held = await subject.bytes();
  expect(held.total, `${what}: bytes`).toBe(bytes.total);
  if (held.clients !== undefined) expect(nonzero(held.clients), `${what}: bytes per client`).toEqual(nonzero(bytes.clients));
}

/** A store may keep a client's count at 0 after its last task went: only what is held counts. */
function nonzero(bytes: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(bytes).filter(([, n]) => n !== 0));
}
