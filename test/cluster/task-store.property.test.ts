import fc from 'fast-check';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/tasks/stores/redis-store.js';
import { SluiceError } from '../../src/errors.js';
import type { TaskRecord, TaskStatus } from '../../src/tasks/task.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { kClients, kTableLimits, ops, runAgainstTable } from '../tasks/table-model.js';

/**
 * Model-based test (test/tasks/memory-store.property.test.ts's model, unchanged): random sequences
 * of create, update, respond, cancel, get, list and the clock moving on, over three owners, run
 * against two RedisTaskStore nodes on one real redis-server (each command goes to node A or B by
 * its pick) and against a plain Map model of the TaskStore contract; after every step each task's
 * status and version (or its absence, for its owner and for the others), through both nodes, and
 * the counts held in Redis must agree.
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
  nodes: readonly [RedisTaskStore, RedisTaskStore];
  redis: Redis;
  prefix: string;
  clock: { now: number };
}

/** The node a command goes to: the model says nothing of nodes, so either must do. */
const on = (r: Real, pick: number) => r.nodes[pick % 2];

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
    for (const owner of kOwners) same(await on(r, id.length + owner.length).get(id, owner), visible(m, id, owner), `get(${id}, ${owner})`);
  }
  await r.nodes[0].sweep();
  const owners = new Set([...m.tasks.values()].map((t) => t.owner));
  let stored = 0;
  for (const owner of kOwners) stored += Number(await r.redis.exists(`${r.prefix}owner:${owner}`));
  expect({ tasks: await r.redis.zcard(`${r.prefix}tasks`), owners: stored }).toEqual({ tasks: m.tasks.size, owners: owners.size });
  expect(Number(await r.redis.get(`${r.prefix}bytes`) ?? 0)).toBeGreaterThanOrEqual(0);
}

type Cmd = fc.AsyncCommand<Model, Real>;

class Create implements Cmd {
  constructor(readonly owner: string, readonly ttlMs: number | undefined) {}
  check = () => true;
  async run(m: Model, r: Real): Promise<void> {
    modelExpire(m);
    const id = `t${m.ids.length}`;
    const full = m.tasks.size >= kLimits.maxTasks || [...m.tasks.values()].filter((t) => t.owner === this.owner).length >= kLimits.maxTasksPerOwner;
    const outcome = await on(r, m.ids.length).create({ taskId: id, owner: this.owner, dialect: 'modern', toolName: 'x', runner: '1', ttlMs: this.ttlMs }).catch((e: unknown) => e);
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
    const record = await on(r, this.pick).update(id, c.kind === 'complete' ? { status: 'completed', resultJson: '{}' }
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
    const record = await on(r, this.pick + 1).respond(id, this.owner, Object.fromEntries(this.keys.map((k) => [k, { answer: k }])));
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
    const record = await on(r, this.pick).cancel(id, this.owner, 'stop');
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
      const page = await on(r, listed.length).list(this.owner, cursor, this.limit);
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

let server: RedisInstance;
const connections: Redis[] = [];
beforeAll(async () => {
  server = await startRedis();
  for (let i = 0; i < 2; i++) {
    const redis = new Redis(server.url, { enableOfflineQueue: false, lazyConnect: true });
    await redis.connect();
    connections.push(redis);
  }
});
afterAll(async () => {
  for (const redis of connections) redis.disconnect();
  await server?.stop();
});

let runs = 0;
describe('RedisTaskStore (two nodes) against a model', () => {
  it('agrees on status, version, visibility, lists and counts over random sequences', async () => {
    await fc.assert(fc.asyncProperty(fc.commands(commands, { maxCommands: 60, size: 'medium' }), async (cmds) => {
      const clock = { now: 0 };
      const prefix = `p${++runs}:`;
      const options = { now: () => clock.now, heartbeatMs: 600_000 };
      const nodes = [
        new RedisTaskStore({ redis: connections[0], keyPrefix: prefix, nodeId: 'A' }, kLimits, options),
        new RedisTaskStore({ redis: connections[1], keyPrefix: prefix, nodeId: 'B' }, kLimits, options),
      ] as const;
      try {
        await fc.asyncModelRun(() => ({ model: { now: 0, ids: [], tasks: new Map() }, real: { nodes, redis: connections[0], prefix, clock } }), cmds);
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
    }), { numRuns: 60 });
  });
});

describe('RedisTaskStore (two nodes) against the transition table', () => {
  it('gives the same answers, records, counts and bytes as src/tasks/transitions.ts over random sequences', async () => {
    await fc.assert(fc.asyncProperty(ops, async (sequence) => {
      const clock = { now: 0 };
      const prefix = `q${++runs}:`;
      const options = { now: () => clock.now, heartbeatMs: 600_000 };
      const nodes = [
        new RedisTaskStore({ redis: connections[0], keyPrefix: prefix, nodeId: 'A' }, kTableLimits, options),
        new RedisTaskStore({ redis: connections[1], keyPrefix: prefix, nodeId: 'B' }, kTableLimits, options),
      ] as const;
      const redis = connections[0];
      try {
        await runAgainstTable(sequence, {
          // The table says nothing of nodes, so either must do.
          on: (pick) => nodes[pick % 2],
          sweep: async () => { await nodes[0].sweep(); },
          count: () => redis.zcard(`${prefix}tasks`),
          bytes: async () => {
            const clients: Record<string, number> = {};
            for (const client of kClients) if (client !== undefined) clients[client] = Number(await redis.get(`${prefix}cbytes:${client}`) ?? 0);
            return { total: Number(await redis.get(`${prefix}bytes`) ?? 0), clients };
          },
          advance: (ms) => { clock.now += ms; },
        });
      } finally {
        await Promise.all(nodes.map((n) => n.close()));
      }
    }), { numRuns: 60 });
  });
});
