import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/errors.js';
import { MemoryTaskStore } from '../../src/tasks/stores/memory-store.js';
import type { TaskRecord, TaskStatus } from '../../src/tasks/task.js';
import { kTableLimits, ops, runAgainstTable } from './table-model.js';

/**
 * Model-based test: random sequences of create, update, respond, cancel, get, list and the clock
 * moving on, over three owners, run against MemoryTaskStore and against a plain Map model of the
 * TaskStore contract; after every step each task's status and version (or its absence, for its
 * owner and for the others) and the counts must agree.
 */

const kLimits = { maxTasks: 6, maxTasksPerOwner: 3, defaultTtlMs: 100, maxTtlMs: 300 };
const kOwners = ['session:a', 'principal:b', 'ip:c'] as const;
const kKeys = ['k1', 'k2', 'k3'] as const;

interface ModelTask {
  owner: string;
  status: TaskStatus;
  version: number;
  expiresAt: number;
  outstanding: Set<string>;
  responses: Set<string>;
  seen: Set<string>;
}
interface Model {
  now: number;
  /** Every id ever created, in creation order (commands pick from it; some are gone). */
  ids: string[];
  tasks: Map<string, ModelTask>;
}
interface Real {
  store: MemoryTaskStore;
  clock: { now: number };
}

const terminal = (s: TaskStatus) => s === 'completed' || s === 'failed' || s === 'cancelled';

function modelExpire(m: Model): void {
  for (const [id, t] of m.tasks) if (m.now >= t.expiresAt) m.tasks.delete(id);
}

function visible(m: Model, id: string | undefined, owner: string): ModelTask | undefined {
  if (id === undefined) return undefined;
  const t = m.tasks.get(id);
  return t !== undefined && t.owner === owner ? t : undefined;
}

function same(record: TaskRecord | undefined, t: ModelTask | undefined, what: string): void {
  if (t === undefined) {
    expect(record, what).toBeUndefined();
    return;
  }
  expect(record, what).toBeDefined();
  expect({ status: record!.status, version: record!.version }, what).toEqual({ status: t.status, version: t.version });
  expect(Object.keys(record!.inputRequests ?? {}).sort(), `${what} requests`).toEqual([...t.outstanding].sort());
  expect(Object.keys(record!.inputResponses ?? {}).sort(), `${what} responses`).toEqual([...t.responses].sort());
}

async function check(m: Model, r: Real): Promise<void> {
  modelExpire(m);
  for (const id of m.ids) {
    for (const owner of kOwners) same(await r.store.get(id, owner), visible(m, id, owner), `get(${id}, ${owner})`);
  }
  r.store.sweep();
  const owners = new Set([...m.tasks.values()].map((t) => t.owner));
  const stats = r.store.stats();
  expect({ tasks: stats.tasks, owners: stats.owners }).toEqual({ tasks: m.tasks.size, owners: owners.size });
  expect(stats.bytes).toBeGreaterThanOrEqual(0);
}

type Cmd = fc.AsyncCommand<Model, Real>;

class Create implements Cmd {
  constructor(readonly owner: string, readonly ttlMs: number | undefined) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const id = `t${m.ids.length}`;
    const full = m.tasks.size >= kLimits.maxTasks || [...m.tasks.values()].filter((t) => t.owner === this.owner).length >= kLimits.maxTasksPerOwner;
    const outcome = await r.store.create({ taskId: id, owner: this.owner, dialect: 'modern', toolName: 'x', runner: '1', ttlMs: this.ttlMs }).catch((e: unknown) => e);
    m.ids.push(id);
    if (full) {
      expect(outcome).toBeInstanceOf(SluiceError);
      expect((outcome as SluiceError).code).toBe('task_limit_reached');
    } else {
      const ttl = Math.min(this.ttlMs ?? kLimits.defaultTtlMs, kLimits.maxTtlMs);
      expect(outcome).toMatchObject({ taskId: id, status: 'working', ttlMs: ttl, version: 1 });
      m.tasks.set(id, { owner: this.owner, status: 'working', version: 1, expiresAt: m.now + ttl, outstanding: new Set(), responses: new Set(), seen: new Set() });
    }
    await check(m, r);
  }
  toString = () => `create(${this.owner}, ${String(this.ttlMs)})`;
}

type UpdateKind = { kind: 'complete' } | { kind: 'fail' } | { kind: 'working' } | { kind: 'ask'; keys: string[] } | { kind: 'consume'; keys: string[] };

class Update implements Cmd {
  constructor(readonly pick: number, readonly change: UpdateKind) {}
  check = (m: Readonly<Model>) => m.ids.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const id = m.ids[this.pick % m.ids.length];
    const c = this.change;
    const record = await r.store.update(id, c.kind === 'complete' ? { status: 'completed', resultJson: '{}' }
      : c.kind === 'fail' ? { status: 'failed', error: { code: 1, message: 'x' } }
      : c.kind === 'working' ? { status: 'working' }
      : c.kind === 'ask' ? { addInputRequests: Object.fromEntries(c.keys.map((k) => [k, { method: 'roots/list' }])) }
      : { consumedResponses: c.keys });
    const t = m.tasks.get(id);
    if (t !== undefined && !terminal(t.status)) {
      t.version++;
      if (c.kind === 'complete' || c.kind === 'fail') {
        t.status = c.kind === 'complete' ? 'completed' : 'failed';
        t.outstanding.clear();
        t.responses.clear();
      } else if (c.kind === 'working') {
        t.status = 'working';
      } else if (c.kind === 'ask') {
        const fresh = c.keys.filter((k) => !t.seen.has(k));
        for (const k of fresh) { t.seen.add(k); t.outstanding.add(k); }
        if (fresh.length > 0) t.status = 'input_required';
      } else {
        for (const k of c.keys) t.responses.delete(k);
      }
    }
    same(record, t, `update(${id})`);
    await check(m, r);
  }
  toString = () => `update(#${this.pick}, ${JSON.stringify(this.change)})`;
}

class Respond implements Cmd {
  constructor(readonly pick: number, readonly owner: string, readonly keys: string[]) {}
  check = (m: Readonly<Model>) => m.ids.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const id = m.ids[this.pick % m.ids.length];
    const record = await r.store.respond(id, this.owner, Object.fromEntries(this.keys.map((k) => [k, { answer: k }])));
    const t = visible(m, id, this.owner);
    if (t !== undefined && !terminal(t.status)) {
      const moved = this.keys.filter((k) => t.outstanding.has(k));
      if (moved.length > 0) {
        t.version++;
        for (const k of moved) { t.outstanding.delete(k); t.responses.add(k); }
        if (t.outstanding.size === 0 && t.status === 'input_required') t.status = 'working';
      }
    }
    same(record, t, `respond(${id}, ${this.owner})`);
    await check(m, r);
  }
  toString = () => `respond(#${this.pick}, ${this.owner}, ${this.keys.join(',')})`;
}

class Cancel implements Cmd {
  constructor(readonly pick: number, readonly owner: string) {}
  check = (m: Readonly<Model>) => m.ids.length > 0;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const id = m.ids[this.pick % m.ids.length];
    const record = await r.store.cancel(id, this.owner, 'stop');
    const t = visible(m, id, this.owner);
    if (t !== undefined && !terminal(t.status)) {
      t.version++;
      t.status = 'cancelled';
      t.outstanding.clear();
      t.responses.clear();
    }
    same(record, t, `cancel(${id}, ${this.owner})`);
    await check(m, r);
  }
  toString = () => `cancel(#${this.pick}, ${this.owner})`;
}

class List implements Cmd {
  constructor(readonly owner: string, readonly limit: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const listed: string[] = [];
    let cursor: string | undefined;
    do {
      const page = await r.store.list(this.owner, cursor, this.limit);
      expect(page.tasks.length).toBeLessThanOrEqual(this.limit);
      listed.push(...page.tasks.map((t) => t.taskId));
      cursor = page.nextCursor;
    } while (cursor !== undefined);
    const expected = m.ids.filter((id) => visible(m, id, this.owner) !== undefined).reverse();
    expect(listed).toEqual(expected);
  }
  toString = () => `list(${this.owner}, ${this.limit})`;
}

class Advance implements Cmd {
  constructor(readonly ms: number) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    m.now += this.ms;
    r.clock.now += this.ms;
    await check(m, r);
  }
  toString = () => `advance(${this.ms})`;
}

const owner = fc.constantFrom(...kOwners);
const keys = fc.subarray([...kKeys], { minLength: 1 });
const commands = [
  fc.tuple(owner, fc.constantFrom(undefined, 50, 150, 1_000)).map(([o, ttl]) => new Create(o, ttl)),
  fc.tuple(fc.nat(), fc.oneof(
    fc.constantFrom({ kind: 'complete' as const }, { kind: 'fail' as const }, { kind: 'working' as const }),
    fc.tuple(fc.constantFrom('ask' as const, 'consume' as const), keys).map(([kind, ks]): UpdateKind => (kind === 'ask' ? { kind, keys: ks } : { kind, keys: ks })),
  )).map(([pick, change]) => new Update(pick, change)),
  fc.tuple(fc.nat(), owner, keys).map(([pick, o, ks]) => new Respond(pick, o, ks)),
  fc.tuple(fc.nat(), owner).map(([pick, o]) => new Cancel(pick, o)),
  fc.tuple(owner, fc.integer({ min: 1, max: 3 })).map(([o, limit]) => new List(o, limit)),
  fc.integer({ min: 1, max: 120 }).map((ms) => new Advance(ms)),
];

describe('MemoryTaskStore against a model', () => {
  it('agrees on status, version, visibility, lists and counts over random sequences', async () => {
    await fc.assert(fc.asyncProperty(fc.commands(commands, { maxCommands: 60 }), async (cmds) => {
      const clock = { now: 0 };
      const store = new MemoryTaskStore(kLimits, { now: () => clock.now, sweepIntervalMs: 2 ** 30 });
      try {
        await fc.asyncModelRun(() => ({ model: { now: 0, ids: [], tasks: new Map() }, real: { store, clock } }), cmds);
      } finally {
        await store.close();
      }
    }), { numRuns: 200 });
  });
});

describe('MemoryTaskStore against the transition table', () => {
  it('gives the same answers, records, counts and bytes as src/tasks/transitions.ts over random sequences', async () => {
    await fc.assert(fc.asyncProperty(ops, async (sequence) => {
      const clock = { now: 0 };
      const store = new MemoryTaskStore(kTableLimits, { now: () => clock.now, sweepIntervalMs: 2 ** 30 });
      try {
        await runAgainstTable(sequence, {
          on: () => store,
          sweep: async () => { store.sweep(); },
          count: async () => store.stats().tasks,
          bytes: async () => ({ total: store.stats().bytes, clients: undefined }),
          advance: (ms) => { clock.now += ms; },
        });
      } finally {
        await store.close();
      }
    }), { numRuns: 100 });
  });
});
