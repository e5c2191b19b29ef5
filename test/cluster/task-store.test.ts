/**
 * RedisTaskStore against the TaskStore contract on a real redis-server (test/helpers/redis.ts),
 * with two stores as two nodes (each its own connection and nodeId) on one Redis: what one node
 * does, the other reads, answers, cancels and watches. MemoryTaskStore's scenarios
 * (test/tasks/memory-store.test.ts) run here too, then the cluster's own: races between nodes,
 * heartbeats of a killed node, Redis killed and restarted.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTaskStore, SluiceError } from '../../src/index.js';
import type { NewTask, TaskLimits, TaskRecord } from '../../src/index.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';

const cleanup = cleanupAfterEach();
let server: RedisInstance;
let prefixes = 0;

beforeAll(async () => { server = await startRedis(); });
afterAll(async () => { await server?.stop(); });

interface Node {
  store: RedisTaskStore;
  redis: Redis;
}

async function connect(): Promise<Redis> {
  const redis = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true, retryStrategy: () => 50 });
  redis.on('error', () => {});
  await redis.connect();
  cleanup(() => redis.disconnect());
  return redis;
}

/** Two nodes on one key prefix (fresh per test), sharing a fake clock. */
async function makeNodes(limits?: Partial<TaskLimits>, options: { heartbeatMs?: number; realClock?: boolean } = {}) {
  const clock = { now: 1_000_000 };
  const keyPrefix = `t${++prefixes}:`;
  const nodes: Node[] = [];
  for (const nodeId of ['A', 'B']) {
    const redis = await connect();
    const store = new RedisTaskStore({ redis, keyPrefix, nodeId }, limits, {
      now: options.realClock === true ? undefined : () => clock.now,
      heartbeatMs: options.heartbeatMs ?? 60_000,
    });
    cleanup(() => store.close());
    nodes.push({ store, redis });
  }
  return { a: nodes[0].store, b: nodes[1].store, nodes, clock, keyPrefix };
}

let nextId = 0;
function newTask(owner = 'session:a', extra: Partial<NewTask> = {}): NewTask {
  return { taskId: `t${++nextId}`, owner, dialect: 'modern', toolName: 'slow', runner: 'A/1', ...extra };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof SluiceError ? error.code : String(error);
  }
}

async function bytesOf(redis: Redis, keyPrefix: string): Promise<number> {
  return Number(await redis.get(`${keyPrefix}bytes`) ?? 0);
}

/** Waits until `watching` got a change made on the other node (its subscription is live), and for stragglers. */
async function subscribed(other: RedisTaskStore, taskId: string, seen: readonly unknown[]): Promise<void> {
  await until(async () => { await other.update(taskId, { statusMessage: `probe ${seen.length}` }); return seen.length > 0; });
  await new Promise((r) => setTimeout(r, 50));
}

async function until(what: () => boolean | Promise<boolean>, ms = 5_000): Promise<void> {
  const deadline = Date.now() + ms;
  while (!(await what())) {
    if (Date.now() > deadline) throw new Error('condition not met in time');
    await new Promise((r) => setTimeout(r, 10));
  }
}

describe('create and read across nodes', () => {
  it('a task created on A is found on B at once, with the limits granted', async () => {
    const { a, b, clock } = await makeNodes({ pollIntervalMs: 500 });
    const created = await a.create(newTask('session:a', { progressToken: 'p1', ttlMs: 5_000 }));
    expect(created).toMatchObject({ status: 'working', owner: 'session:a', dialect: 'modern', toolName: 'slow', runner: 'A/1', ttlMs: 5_000, pollIntervalMs: 500, progressToken: 'p1', version: 1, createdAt: clock.now, lastUpdatedAt: clock.now });
    expect(await b.get(created.taskId, 'session:a')).toEqual(created);
    expect(Object.isFrozen(created)).toBe(true);
    const numeric = await a.create(newTask('session:a', { progressToken: 7 }));
    expect((await b.get(numeric.taskId, 'session:a'))?.progressToken).toBe(7);
  });

  it('grants the default lifetime when none (or no positive one) is asked, and never more than the maximum', async () => {
    const { a } = await makeNodes({ defaultTtlMs: 1_000, maxTtlMs: 60_000 });
    expect((await a.create(newTask())).ttlMs).toBe(1_000);
    expect((await a.create(newTask('s', { ttlMs: 0 }))).ttlMs).toBe(1_000);
    expect((await a.create(newTask('s', { ttlMs: -5 }))).ttlMs).toBe(1_000);
    expect((await a.create(newTask('s', { ttlMs: Number.NaN }))).ttlMs).toBe(1_000);
    expect((await a.create(newTask('t', { ttlMs: 2_500.7 }))).ttlMs).toBe(2_500);
    expect((await a.create(newTask('t', { ttlMs: 10 ** 9 }))).ttlMs).toBe(60_000);
  });

  it('bounds hold across nodes: maxTasksPerOwner and maxTasks with task_limit_reached; a reused id is refused', async () => {
    const { a, b } = await makeNodes({ maxTasks: 3, maxTasksPerOwner: 2 });
    await a.create(newTask('a'));
    await b.create(newTask('a'));
    const perOwner = await a.create(newTask('a')).catch((e: unknown) => e);
    expect(perOwner).toBeInstanceOf(SluiceError);
    expect(perOwner).toMatchObject({ code: 'task_limit_reached', message: expect.stringContaining('maxTasksPerOwner') });
    const last = await b.create(newTask('b'));
    expect(await b.create(newTask('c')).catch((e: unknown) => e)).toMatchObject({ code: 'task_limit_reached', message: expect.stringContaining('(maxTasks)') });
    await expect(a.create({ ...newTask('b'), taskId: last.taskId })).rejects.toThrow(/already in use/);
  });

  it('expired tasks do not count against the bounds', async () => {
    const { a, b, clock } = await makeNodes({ maxTasks: 2, maxTasksPerOwner: 2, defaultTtlMs: 1_000 });
    await a.create(newTask('a'));
    await b.create(newTask('a'));
    expect(await codeOf(a.create(newTask('a')))).toBe('task_limit_reached');
    clock.now += 1_000;
    expect(await codeOf(b.create(newTask('a')))).toBe('resolved');
  });
});

describe('owners', () => {
  it('a task of another owner is unknown to get, respond, cancel and list, on every node', async () => {
    const { a, b } = await makeNodes();
    const task = await a.create(newTask('session:a'));
    await a.update(task.taskId, { addInputRequests: { k1: { method: 'elicitation/create' } } });
    for (const store of [a, b]) {
      expect(await store.get(task.taskId, 'session:b')).toBeUndefined();
      expect(await store.respond(task.taskId, 'session:b', { k1: { action: 'accept' } })).toBeUndefined();
      expect(await store.cancel(task.taskId, 'session:b')).toBeUndefined();
      expect(await store.list('session:b', undefined, 10)).toEqual({ tasks: [] });
    }
    expect(await b.get(task.taskId, 'session:a')).toMatchObject({ status: 'input_required', version: 2, inputRequests: { k1: { method: 'elicitation/create' } } });
    expect((await b.get(task.taskId, 'session:a'))?.inputResponses).toBeUndefined();
  });

  it('unknown ids are undefined everywhere', async () => {
    const { a } = await makeNodes();
    expect(await a.get('nope', 'a')).toBeUndefined();
    expect(await a.update('nope', { status: 'completed' })).toBeUndefined();
    expect(await a.respond('nope', 'a', {})).toBeUndefined();
    expect(await a.cancel('nope', 'a')).toBeUndefined();
  });
});

describe('list', () => {
  it('pages an owner\'s tasks newest first; a cursor of A is followed by B', async () => {
    const { a, b } = await makeNodes();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await (i % 2 === 0 ? a : b).create(newTask('a'))).taskId);
      await a.create(newTask('b'));
    }
    const first = await a.list('a', undefined, 2);
    expect(first.tasks.map((t) => t.taskId)).toEqual([ids[4], ids[3]]);
    const second = await b.list('a', first.nextCursor, 2);
    expect(second.tasks.map((t) => t.taskId)).toEqual([ids[2], ids[1]]);
    const third = await a.list('a', second.nextCursor, 2);
    expect(third.tasks.map((t) => t.taskId)).toEqual([ids[0]]);
    expect(third.nextCursor).toBeUndefined();
    expect((await b.list('a', undefined, 100)).nextCursor).toBeUndefined();
  });

  it('a cursor stays valid when its task is gone', async () => {
    const { a, clock } = await makeNodes({ defaultTtlMs: 10_000 });
    const old = await a.create(newTask('a'));
    clock.now += 5_000;
    const ids = [(await a.create(newTask('a', { ttlMs: 100 }))).taskId, (await a.create(newTask('a'))).taskId];
    const page = await a.list('a', undefined, 1);
    expect(page.tasks.map((t) => t.taskId)).toEqual([ids[1]]);
    clock.now += 200;
    const next = await a.list('a', page.nextCursor, 5);
    expect(next.tasks.map((t) => t.taskId)).toEqual([old.taskId]);
  });

  it('refuses a garbled cursor, one of another owner and one of another cluster with invalid_cursor', async () => {
    const { a, b } = await makeNodes();
    for (let i = 0; i < 3; i++) {
      await a.create(newTask('a'));
      await a.create(newTask('b'));
    }
    const cursorOfB = (await a.list('b', undefined, 1)).nextCursor!;
    expect(await codeOf(b.list('a', cursorOfB, 1))).toBe('invalid_cursor');
    expect(await codeOf(b.list('a', 'garbage', 1))).toBe('invalid_cursor');
    expect(await codeOf(b.list('a', '', 1))).toBe('invalid_cursor');
    expect(await codeOf(b.list('a', `${cursorOfB.split('.')[0]}.AAAAAAAAAAAAAAAA`, 1))).toBe('invalid_cursor');
    const other = (await makeNodes()).a;
    for (let i = 0; i < 3; i++) await other.create(newTask('b'));
    expect(await codeOf(other.list('b', cursorOfB, 1))).toBe('invalid_cursor');
    expect(await codeOf(b.list('b', cursorOfB, 1))).toBe('resolved');
  });
});

describe('update, respond, cancel across nodes', () => {
  it('A creates, B answers, A picks the answer up, B cancels; terminal is final', async () => {
    const { a, b, clock } = await makeNodes();
    const task = await a.create(newTask());
    clock.now += 10;
    const progressed = await a.update(task.taskId, { progress: { progress: 1, total: 3, message: 'one' }, statusMessage: 'going' });
    expect(progressed).toMatchObject({ status: 'working', version: 2, lastUpdatedAt: clock.now, progress: { progress: 1, total: 3 }, statusMessage: 'going' });
    const asked = await a.update(task.taskId, { addInputRequests: { a: { method: 'elicitation/create', params: { message: 'name?' } }, b: { method: 'roots/list' } } });
    expect(asked).toMatchObject({ status: 'input_required', inputRequests: { a: {}, b: {} } });
    const partial = await b.respond(task.taskId, 'session:a', { a: { action: 'accept', content: { name: 'x' } }, zzz: 'ignored' });
    expect(partial?.status).toBe('input_required');
    expect(Object.keys(partial?.inputRequests ?? {})).toEqual(['b']);
    expect(partial?.inputResponses).toEqual({ a: { action: 'accept', content: { name: 'x' } } });
    expect(await b.respond(task.taskId, 'session:a', { a: 'again' })).toEqual(partial);
    const all = await b.respond(task.taskId, 'session:a', { b: { roots: [] } });
    expect(all).toMatchObject({ status: 'working', inputResponses: { a: {}, b: { roots: [] } } });
    expect(all?.inputRequests).toBeUndefined();
    expect((await a.update(task.taskId, { consumedResponses: ['a'] }))?.inputResponses).toEqual({ b: { roots: [] } });
    expect((await a.update(task.taskId, { consumedResponses: ['b'] }))?.inputResponses).toBeUndefined();
    const cancelled = await b.cancel(task.taskId, 'session:a', 'client asked');
    expect(cancelled).toMatchObject({ status: 'cancelled', statusMessage: 'client asked', version: 8 });
    expect(await a.update(task.taskId, { status: 'completed', resultJson: '{}' })).toEqual(cancelled);
    expect(await a.cancel(task.taskId, 'session:a')).toEqual(cancelled);
    expect(await a.get(task.taskId, 'session:a')).toEqual(cancelled);
  });

  it('never reuses an input request key within a task', async () => {
    const { a, b } = await makeNodes();
    const task = await a.create(newTask());
    await a.update(task.taskId, { addInputRequests: { k: { method: 'roots/list' } } });
    await b.respond(task.taskId, 'session:a', { k: { roots: [] } });
    const reused = await a.update(task.taskId, { addInputRequests: { k: { method: 'elicitation/create' } }, consumedResponses: ['k'] });
    expect(reused?.status).toBe('working');
    expect(reused?.inputRequests).toBeUndefined();
    expect(await b.respond(task.taskId, 'session:a', { k: 'a second answer' })).toEqual(reused);
    const fresh = await a.update(task.taskId, { addInputRequests: { k: { method: 'x' }, k2: { method: 'roots/list' } } });
    expect(Object.keys(fresh?.inputRequests ?? {})).toEqual(['k2']);
  });

  it('a racing cancel (B) and result (A) always end in one terminal state that stays', async () => {
    const { a, b } = await makeNodes({ maxTasksPerOwner: 1_000 });
    const outcomes = new Set<string>();
    for (let i = 0; i < 150; i++) {
      const task = await a.create(newTask());
      await a.update(task.taskId, { addInputRequests: { k: { method: 'roots/list' } } });
      const [done, cancelled, answered] = await Promise.all([
        a.update(task.taskId, { status: 'completed', resultJson: '{"n":1}' }),
        b.cancel(task.taskId, 'session:a', 'stop'),
        b.respond(task.taskId, 'session:a', { k: 1 }),
      ]);
      const final = await b.get(task.taskId, 'session:a');
      expect(final?.status === 'completed' || final?.status === 'cancelled').toBe(true);
      // Each caller saw a terminal record, and the same final one (whoever lost saw the winner).
      expect(done).toEqual(final);
      expect(cancelled).toEqual(final);
      expect(answered?.version).toBeLessThanOrEqual(final!.version);
      // Version 3 is the terminal change; 4 when the answer landed first (it is then dropped).
      expect([3, 4]).toContain(final!.version);
      if (final?.status === 'cancelled') expect(final.resultJson).toBeUndefined();
      outcomes.add(final!.status);
      expect(await a.update(task.taskId, { status: 'failed', error: { code: 1, message: 'late' } })).toEqual(final);
    }
    expect(outcomes.size).toBeGreaterThanOrEqual(1); // usually both: the race is real
  });
});

describe('bytes', () => {
  it('counts results, errors, requests and answers node-wide, and frees them when the task goes', async () => {
    const { a, b, nodes, keyPrefix, clock } = await makeNodes({ defaultTtlMs: 1_000 });
    const r = nodes[0].redis;
    const t = await a.create(newTask());
    const request = { k: { method: 'roots/list' } };
    await a.update(t.taskId, { addInputRequests: request });
    expect(await bytesOf(r, keyPrefix)).toBe(JSON.stringify(request).length);
    await b.respond(t.taskId, 'session:a', { k: { roots: [] } });
    expect(await bytesOf(r, keyPrefix)).toBe(JSON.stringify({ k: { roots: [] } }).length);
    await a.update(t.taskId, { status: 'completed', resultJson: 'ééé' });
    expect(await bytesOf(r, keyPrefix)).toBe(6);
    const u = await b.create(newTask());
    const error = { code: -32000, message: 'boom', data: { why: 'x' } };
    await b.update(u.taskId, { status: 'failed', error });
    expect(await bytesOf(r, keyPrefix)).toBe(6 + JSON.stringify(error).length);
    clock.now += 1_000;
    expect(await b.sweep()).toEqual({ expired: 2, failed: 0 });
    expect(await bytesOf(r, keyPrefix)).toBe(0);
    // Nothing of the two tasks is left in Redis but counters that expire.
    const keys = (await r.keys(`${keyPrefix}*`)).sort();
    expect(keys.filter((k) => !/(bytes|seq|nodes|node:[AB]|cursor-key|running:A)$/.test(k))).toEqual([]);
    for (const key of keys.filter((k) => !k.endsWith('cursor-key'))) expect(await r.pttl(key), key).toBeGreaterThan(0);
  });

  it('a result past maxTaskBytes fails the task; past maxStoredBytes (total of both nodes) it is "store full"', async () => {
    const { a, b, nodes, keyPrefix, clock } = await makeNodes({ maxTaskBytes: 100, maxStoredBytes: 150, defaultTtlMs: 10_000 });
    const over = await a.create(newTask());
    const failed = await a.update(over.taskId, { status: 'completed', resultJson: 'x'.repeat(101) });
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task result exceeds 100 bytes' } });
    expect(failed?.resultJson).toBeUndefined();
    const asked = await a.create(newTask());
    await a.update(asked.taskId, { addInputRequests: { k: { method: 'elicitation/create' } } });
    expect(await b.respond(asked.taskId, 'session:a', { k: 'y'.repeat(200) })).toMatchObject({ status: 'failed', error: { message: expect.stringMatching(/input exceeds 100 bytes/) } });
    const x = await a.create(newTask('a', { ttlMs: 1_000 }));
    const y = await b.create(newTask('b'));
    await a.update(x.taskId, { status: 'completed', resultJson: 'a'.repeat(100) });
    const full = await b.update(y.taskId, { status: 'completed', resultJson: 'b'.repeat(60) });
    expect(full).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task store full (150 bytes)' } });
    expect(await bytesOf(nodes[1].redis, keyPrefix)).toBe(100);
    clock.now += 1_000; // x expires: its 100 bytes are free again
    const again = await b.create(newTask('b'));
    expect(await b.update(again.taskId, { status: 'completed', resultJson: 'd'.repeat(60) })).toMatchObject({ status: 'completed' });
    expect(await bytesOf(nodes[1].redis, keyPrefix)).toBe(60);
  });
});

describe('lifetime and watch', () => {
  it('an expired task is unknown at once; an unfinished one is failed ("task expired") then deleted for watchers on the other node', async () => {
    const { a, b, clock } = await makeNodes({ defaultTtlMs: 1_000 });
    const task = await a.create(newTask());
    const seen: (TaskRecord | undefined)[] = [];
    a.watch(task.taskId, (t) => seen.push(t));
    await subscribed(b, task.taskId, seen);
    const before = seen.length;
    clock.now += 999;
    expect(await b.get(task.taskId, 'session:a')).toBeDefined();
    clock.now += 1;
    expect(await b.get(task.taskId, 'session:a')).toBeUndefined();
    await until(() => seen.length === before + 2);
    expect(seen[before]).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task expired' } });
    expect(seen[before + 1]).toBeUndefined();
  });

  it('A\'s watcher sees B\'s changes in order, once each, and a local change before the call resolves', async () => {
    const { a, b } = await makeNodes();
    const task = await a.create(newTask());
    const versions: number[] = [];
    const stop = a.watch(task.taskId, (t) => versions.push(t!.version));
    await subscribed(b, task.taskId, versions);
    versions.length = 0;
    const local = a.update(task.taskId, { statusMessage: 'local' });
    const v = (await local)!.version;
    expect(versions).toEqual([v]);
    await b.update(task.taskId, { progress: { progress: 1 } });
    await b.cancel(task.taskId, 'session:a');
    await until(() => versions.length === 3);
    expect(versions).toEqual([v, v + 1, v + 2]);
    stop();
    stop();
    const u = await a.create(newTask());
    await b.cancel(u.taskId, 'session:a');
    await new Promise((r) => setTimeout(r, 50));
    expect(versions).toHaveLength(3);
  });

  it('real Redis expiry: a task key lives its lifetime plus a grace, then is gone with its indexes', async () => {
    const { a, nodes, keyPrefix } = await makeNodes({ defaultTtlMs: 300 }, { realClock: true });
    const task = await a.create(newTask());
    const ttl = await nodes[0].redis.pttl(`${keyPrefix}task:${task.taskId}`);
    expect(ttl).toBeGreaterThan(300);
    expect(ttl).toBeLessThanOrEqual(300 + 60_000);
    await new Promise((r) => setTimeout(r, 320));
    expect(await a.get(task.taskId, 'session:a')).toBeUndefined();
    expect(await nodes[0].redis.exists(`${keyPrefix}task:${task.taskId}`, `${keyPrefix}owner:session:a`)).toBe(0);
  });
});

describe('runners and nodes', () => {
  it('runnerLost fails that runner\'s unfinished tasks only, from any node', async () => {
    const { a, b } = await makeNodes();
    const mine = [await a.create(newTask('a', { runner: 'A/7' })), await a.create(newTask('b', { runner: 'A/7' }))];
    const finished = await a.create(newTask('a', { runner: 'A/7' }));
    await a.update(finished.taskId, { status: 'completed', resultJson: '{}' });
    const other = await a.create(newTask('a', { runner: 'A/8' }));
    expect(await b.runnerLost('A/7', 'the worker running this task exited')).toBe(2);
    for (const t of mine) {
      expect(await b.get(t.taskId, t.owner)).toMatchObject({ status: 'failed', statusMessage: 'the worker running this task exited', error: { code: -32603 } });
    }
    expect((await a.get(finished.taskId, 'a'))?.status).toBe('completed');
    expect((await a.get(other.taskId, 'a'))?.status).toBe('working');
    expect(await a.runnerLost('A/7', 'again')).toBe(0);
  });

  it('a node killed without close: the other fails its unfinished tasks within about three heartbeats', async () => {
    const { a, b, nodes } = await makeNodes(undefined, { heartbeatMs: 100, realClock: true });
    const onA = [await a.create(newTask('a', { runner: 'A/1' })), await b.create(newTask('a', { runner: 'A/2' }))];
    const onB = await b.create(newTask('a', { runner: 'B/1' }));
    const done = await a.create(newTask('a', { runner: 'A/1' }));
    await a.update(done.taskId, { status: 'completed', resultJson: '{}' });
    await new Promise((r) => setTimeout(r, 150)); // A heartbeats
    const seen: (TaskRecord | undefined)[] = [];
    b.watch(onA[0].taskId, (t) => seen.push(t));
    // SIGKILL, as far as Redis can tell: A's connection drops and its timers never run again.
    nodes[0].redis.disconnect();
    const killedAt = Date.now();
    await until(async () => (await b.get(onA[0].taskId, 'a'))?.status === 'failed', 3_000);
    expect(Date.now() - killedAt).toBeLessThan(600);
    for (const t of onA) expect(await b.get(t.taskId, 'a')).toMatchObject({ status: 'failed', error: { code: -32603, message: 'the node running this task stopped' } });
    expect((await b.get(onB.taskId, 'a'))?.status).toBe('working');
    expect((await b.get(done.taskId, 'a'))?.status).toBe('completed');
    await until(() => seen.some((t) => t?.status === 'failed'));
  });

  it('close deletes the heartbeat (its tasks fail at the next sweep) and refuses later calls', async () => {
    const { a, b, nodes, keyPrefix } = await makeNodes(undefined, { heartbeatMs: 100, realClock: true });
    const task = await a.create(newTask('a', { runner: 'A/1' }));
    await until(async () => (await nodes[1].redis.exists(`${keyPrefix}node:A`)) === 1);
    await a.close();
    expect(await nodes[1].redis.exists(`${keyPrefix}node:A`)).toBe(0);
    expect(await codeOf(a.get(task.taskId, 'a'))).toBe('transport_closed');
    await b.sweep();
    expect((await b.get(task.taskId, 'a'))?.status).toBe('failed');
    await a.close();
  });
});

describe('Redis lost', () => {
  it('calls reject with cluster_unavailable promptly, and after a restart the store works again', async () => {
    const own = await startRedis();
    cleanup(() => own.stop());
    const redis = new Redis(own.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, retryStrategy: () => 50, lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    cleanup(() => redis.disconnect());
    const store = new RedisTaskStore({ redis, keyPrefix: 'x:', nodeId: 'A' }, undefined, { heartbeatMs: 100 });
    cleanup(() => store.close());
    const task = await store.create(newTask());
    await own.kill();
    const started = Date.now();
    const codes = await Promise.all([
      store.get(task.taskId, 'session:a'), store.create(newTask()), store.cancel(task.taskId, 'session:a'),
      store.list('session:a', undefined, 5), store.update(task.taskId, { statusMessage: 'x' }), store.runnerLost('A/1', 'x'),
    ].map(codeOf));
    expect(codes).toEqual(Array(6).fill('cluster_unavailable'));
    expect(Date.now() - started).toBeLessThan(2_500);
    await own.restart();
    await until(() => redis.status === 'ready');
    expect(await store.get(task.taskId, 'session:a')).toBeUndefined(); // an empty Redis
    const again = await store.create(newTask());
    expect(await store.cancel(again.taskId, 'session:a')).toMatchObject({ status: 'cancelled' });
    expect((await store.list('session:a', undefined, 5)).tasks).toHaveLength(1);
  });

  it('a command queued on a connection with an offline queue times out with cluster_unavailable', async () => {
    const redis = new Redis('redis://127.0.0.1:1', { lazyConnect: true, retryStrategy: () => 1000 });
    redis.on('error', () => {});
    cleanup(() => redis.disconnect());
    const store = new RedisTaskStore({ redis, keyPrefix: 'y:', nodeId: 'A' }, undefined, { commandTimeoutMs: 200 });
    cleanup(() => store.close());
    const started = Date.now();
    expect(await codeOf(store.get('t', 'a'))).toBe('cluster_unavailable');
    expect(Date.now() - started).toBeLessThan(1_000);
  });
});
