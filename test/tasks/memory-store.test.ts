/**
 * MemoryTaskStore against the TaskStore contract (src/tasks/store.ts) and the bounds of
 * TaskLimits: creation bounds, lifetimes (a fake clock), bytes held and freed, owner isolation,
 * terminal finality, input requests and answers, watches, lost runners, frozen snapshots.
 */
import { describe, expect, it } from 'vitest';
import { MemoryTaskStore, SluiceError, kDefaultTaskLimits } from '../../src/index.js';
import type { NewTask, TaskLimits, TaskRecord } from '../../src/index.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';

const cleanup = cleanupAfterEach();

interface Clocked {
  store: MemoryTaskStore;
  clock: { now: number };
}

/** A store on a fake clock (the janitor effectively off: tests call `sweep` or rely on lazy expiry). */
function makeStore(limits?: Partial<TaskLimits>): Clocked {
  const clock = { now: 1_000_000 };
  const store = new MemoryTaskStore(limits, { now: () => clock.now, sweepIntervalMs: 2 ** 30 });
  cleanup(() => store.close());
  return { store, clock };
}

let nextId = 0;
function newTask(owner = 'session:a', extra: Partial<NewTask> = {}): NewTask {
  return { taskId: `t${++nextId}`, owner, dialect: 'modern', toolName: 'slow', runner: '1', ...extra };
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error instanceof SluiceError ? error.code : String(error);
  }
}

describe('create', () => {
  it('stores a working task that get finds at once, with the limits the store grants', async () => {
    const { store, clock } = makeStore({ pollIntervalMs: 500 });
    const created = await store.create(newTask('session:a', { progressToken: 'p1', ttlMs: 5_000 }));
    expect(created).toMatchObject({ status: 'working', owner: 'session:a', dialect: 'modern', toolName: 'slow', runner: '1', ttlMs: 5_000, pollIntervalMs: 500, progressToken: 'p1', version: 1, createdAt: clock.now, lastUpdatedAt: clock.now });
    expect(await store.get(created.taskId, 'session:a')).toEqual(created);
    expect(store.stats()).toEqual({ tasks: 1, bytes: 0, owners: 1 });
  });

  it('grants the default lifetime when none (or no positive one) is asked, and never more than the maximum', async () => {
    const { store } = makeStore({ defaultTtlMs: 1_000, maxTtlMs: 60_000 });
    expect((await store.create(newTask())).ttlMs).toBe(1_000);
    expect((await store.create(newTask('s', { ttlMs: 0 }))).ttlMs).toBe(1_000);
    expect((await store.create(newTask('s', { ttlMs: -5 }))).ttlMs).toBe(1_000);
    expect((await store.create(newTask('s', { ttlMs: Number.NaN }))).ttlMs).toBe(1_000);
    expect((await store.create(newTask('t', { ttlMs: 2_500.7 }))).ttlMs).toBe(2_500);
    expect((await store.create(newTask('t', { ttlMs: 10 ** 9 }))).ttlMs).toBe(60_000);
  });

  it('refuses past maxTasksPerOwner and past maxTasks with task_limit_reached, naming the bound', async () => {
    const { store } = makeStore({ maxTasks: 3, maxTasksPerOwner: 2 });
    await store.create(newTask('a'));
    await store.create(newTask('a'));
    const perOwner = await store.create(newTask('a')).catch((e: unknown) => e);
    expect(perOwner).toBeInstanceOf(SluiceError);
    expect(perOwner).toMatchObject({ code: 'task_limit_reached', message: expect.stringContaining('maxTasksPerOwner') });
    await store.create(newTask('b'));
    const total = await store.create(newTask('c')).catch((e: unknown) => e);
    expect(total).toMatchObject({ code: 'task_limit_reached', message: expect.stringContaining('(maxTasks)') });
    expect(store.stats()).toEqual({ tasks: 3, bytes: 0, owners: 2 });
  });

  it('expired tasks do not count against the bounds, even before the janitor ran', async () => {
    const { store, clock } = makeStore({ maxTasks: 2, maxTasksPerOwner: 2, defaultTtlMs: 1_000 });
    await store.create(newTask('a'));
    await store.create(newTask('a'));
    expect(await codeOf(store.create(newTask('a')))).toBe('task_limit_reached');
    clock.now += 1_000;
    expect(await codeOf(store.create(newTask('a')))).toBe('resolved');
    expect(store.stats().tasks).toBe(1);
  });

  it('checks its limits (positive integers) with invalid_option errors', () => {
    for (const bad of [{ maxTasks: 0 }, { maxTaskBytes: 1.5 }, { defaultTtlMs: -1 }, { pollIntervalMs: '250' }, { maxTask: 5 }]) {
      expect(() => new MemoryTaskStore(bad as Partial<TaskLimits>), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    }
    expect(() => new MemoryTaskStore({ defaultTtlMs: 5_000, maxTtlMs: 1_000 })).toThrow(/defaultTtlMs/);
    // Lowering only the maximum pulls the default down with it.
    const store = new MemoryTaskStore({ maxTtlMs: 1_000 });
    cleanup(() => store.close());
    expect(store.limits).toMatchObject({ defaultTtlMs: 1_000, maxTtlMs: 1_000, maxTasks: kDefaultTaskLimits.maxTasks });
  });
});

describe('owners', () => {
  it('a task of another owner is unknown to get, respond, cancel and list', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask('session:a'));
    await store.update(task.taskId, { addInputRequests: { k1: { method: 'elicitation/create' } } });
    expect(await store.get(task.taskId, 'session:b')).toBeUndefined();
    expect(await store.respond(task.taskId, 'session:b', { k1: { action: 'accept' } })).toBeUndefined();
    expect(await store.cancel(task.taskId, 'session:b')).toBeUndefined();
    expect(await store.list('session:b', undefined, 10)).toEqual({ tasks: [] });
    // Nothing the foreign owner did reached the task.
    expect(await store.get(task.taskId, 'session:a')).toMatchObject({ status: 'input_required', version: 2, inputRequests: { k1: { method: 'elicitation/create' } } });
    expect((await store.get(task.taskId, 'session:a'))?.inputResponses).toBeUndefined();
  });

  it('unknown ids are undefined everywhere', async () => {
    const { store } = makeStore();
    expect(await store.get('nope', 'a')).toBeUndefined();
    expect(await store.update('nope', { status: 'completed' })).toBeUndefined();
    expect(await store.respond('nope', 'a', {})).toBeUndefined();
    expect(await store.cancel('nope', 'a')).toBeUndefined();
  });
});

describe('list', () => {
  it('pages an owner\'s tasks newest first with cursors, and only its own', async () => {
    const { store, clock } = makeStore();
    const ids: string[] = [];
    for (let i = 0; i < 5; i++) {
      ids.push((await store.create(newTask('a'))).taskId);
      await store.create(newTask('b'));
      clock.now += 1;
    }
    const first = await store.list('a', undefined, 2);
    expect(first.tasks.map((t) => t.taskId)).toEqual([ids[4], ids[3]]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await store.list('a', first.nextCursor, 2);
    expect(second.tasks.map((t) => t.taskId)).toEqual([ids[2], ids[1]]);
    const third = await store.list('a', second.nextCursor, 2);
    expect(third.tasks.map((t) => t.taskId)).toEqual([ids[0]]);
    expect(third.nextCursor).toBeUndefined();
    expect((await store.list('a', undefined, 100)).nextCursor).toBeUndefined();
  });

  it('a cursor stays valid when its task is gone, and the page continues after it', async () => {
    const { store, clock } = makeStore({ defaultTtlMs: 10_000 });
    const old = await store.create(newTask('a'));
    clock.now += 5_000;
    const ids = [(await store.create(newTask('a', { ttlMs: 100 }))).taskId, (await store.create(newTask('a'))).taskId];
    const page = await store.list('a', undefined, 1);
    expect(page.tasks.map((t) => t.taskId)).toEqual([ids[1]]);
    clock.now += 200; // ids[0] expires
    const next = await store.list('a', page.nextCursor, 5);
    expect(next.tasks.map((t) => t.taskId)).toEqual([old.taskId]);
  });

  it('refuses a garbled cursor, one of another owner and one of another store with invalid_cursor', async () => {
    const { store } = makeStore();
    for (let i = 0; i < 3; i++) {
      await store.create(newTask('a'));
      await store.create(newTask('b'));
    }
    const cursorOfB = (await store.list('b', undefined, 1)).nextCursor!;
    expect(cursorOfB).toBeDefined();
    expect(await codeOf(store.list('a', cursorOfB, 1))).toBe('invalid_cursor');
    expect(await codeOf(store.list('a', 'garbage', 1))).toBe('invalid_cursor');
    expect(await codeOf(store.list('a', '', 1))).toBe('invalid_cursor');
    expect(await codeOf(store.list('a', `${cursorOfB.split('.')[0]}.AAAAAAAAAAAAAAAA`, 1))).toBe('invalid_cursor');
    const other = makeStore().store;
    for (let i = 0; i < 3; i++) await other.create(newTask('b'));
    expect(await codeOf(other.list('b', cursorOfB, 1))).toBe('invalid_cursor');
    expect(await codeOf(store.list('b', cursorOfB, 1))).toBe('resolved');
  });
});

describe('update, respond, cancel', () => {
  it('a runner\'s change bumps the version and lastUpdatedAt; terminal is final', async () => {
    const { store, clock } = makeStore();
    const task = await store.create(newTask());
    clock.now += 10;
    const progressed = await store.update(task.taskId, { progress: { progress: 1, total: 3, message: 'one' }, statusMessage: 'going' });
    expect(progressed).toMatchObject({ status: 'working', version: 2, lastUpdatedAt: clock.now, progress: { progress: 1, total: 3 }, statusMessage: 'going' });
    const done = await store.update(task.taskId, { status: 'completed', resultJson: '{"content":[]}' });
    expect(done).toMatchObject({ status: 'completed', version: 3, resultJson: '{"content":[]}' });
    expect(await store.update(task.taskId, { status: 'failed', error: { code: 1, message: 'late' } })).toBe(done);
    expect(await store.cancel(task.taskId, 'session:a')).toBe(done);
    expect(await store.respond(task.taskId, 'session:a', { x: 1 })).toBe(done);
    expect(await store.get(task.taskId, 'session:a')).toBe(done);
  });

  it('cancel makes an unfinished task cancelled with the message, and drops its outstanding requests', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    await store.update(task.taskId, { addInputRequests: { k: { method: 'roots/list' } } });
    const cancelled = await store.cancel(task.taskId, 'session:a', 'client asked');
    expect(cancelled).toMatchObject({ status: 'cancelled', statusMessage: 'client asked', version: 3 });
    expect(cancelled?.inputRequests).toBeUndefined();
    expect(store.stats().bytes).toBe(0);
  });

  it('input requests: input_required; partial answers move only outstanding keys; all answered: working', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    const asked = await store.update(task.taskId, { addInputRequests: { a: { method: 'elicitation/create', params: { message: 'name?' } }, b: { method: 'roots/list' } } });
    expect(asked).toMatchObject({ status: 'input_required', inputRequests: { a: {}, b: {} } });
    const partial = await store.respond(task.taskId, 'session:a', { a: { action: 'accept', content: { name: 'x' } }, zzz: 'ignored' });
    expect(partial?.status).toBe('input_required');
    expect(Object.keys(partial?.inputRequests ?? {})).toEqual(['b']);
    expect(partial?.inputResponses).toEqual({ a: { action: 'accept', content: { name: 'x' } } });
    // Answering a key no longer outstanding changes nothing (same record, same version).
    expect(await store.respond(task.taskId, 'session:a', { a: 'again' })).toBe(partial);
    const all = await store.respond(task.taskId, 'session:a', { b: { roots: [] } });
    expect(all).toMatchObject({ status: 'working', inputResponses: { a: {}, b: { roots: [] } } });
    expect(all?.inputRequests).toBeUndefined();
    const consumed = await store.update(task.taskId, { consumedResponses: ['a'] });
    expect(consumed?.inputResponses).toEqual({ b: { roots: [] } });
    const empty = await store.update(task.taskId, { consumedResponses: ['b'] });
    expect(empty?.inputResponses).toBeUndefined();
  });

  it('never reuses an input request key within a task', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    await store.update(task.taskId, { addInputRequests: { k: { method: 'roots/list' } } });
    await store.respond(task.taskId, 'session:a', { k: { roots: [] } });
    const reused = await store.update(task.taskId, { addInputRequests: { k: { method: 'elicitation/create' } }, consumedResponses: ['k'] });
    expect(reused?.status).toBe('working');
    expect(reused?.inputRequests).toBeUndefined();
    expect(await store.respond(task.taskId, 'session:a', { k: 'a second answer' })).toBe(reused);
    const fresh = await store.update(task.taskId, { addInputRequests: { k: { method: 'x' }, k2: { method: 'roots/list' } } });
    expect(Object.keys(fresh?.inputRequests ?? {})).toEqual(['k2']);
  });

  it('records are frozen snapshots: neither they nor what was passed in can change the store', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    const params = { message: 'hi', nested: { n: 1 } };
    const asked = await store.update(task.taskId, { addInputRequests: { k: { method: 'elicitation/create', params } } });
    params.nested.n = 2;
    expect(Object.isFrozen(asked)).toBe(true);
    expect(() => { (asked as { status: string }).status = 'completed'; }).toThrow(TypeError);
    expect(() => { (asked!.inputRequests!.k.params!.nested as { n: number }).n = 3; }).toThrow(TypeError);
    const answer = { content: { a: [1] } };
    const answered = await store.respond(task.taskId, 'session:a', { k: answer });
    answer.content.a.push(2);
    expect((await store.get(task.taskId, 'session:a'))?.inputResponses).toEqual({ k: { content: { a: [1] } } });
    expect(asked?.inputRequests?.k.params).toEqual({ message: 'hi', nested: { n: 1 } });
    expect(answered?.version).toBe(3);
  });
});

describe('bytes', () => {
  it('counts results, errors, requests and answers, and frees them when the task goes', async () => {
    const { store, clock } = makeStore({ defaultTtlMs: 1_000 });
    const a = await store.create(newTask());
    const request = { k: { method: 'roots/list' } };
    await store.update(a.taskId, { addInputRequests: request });
    expect(store.stats().bytes).toBe(JSON.stringify(request).length);
    await store.respond(a.taskId, 'session:a', { k: { roots: [] } });
    expect(store.stats().bytes).toBe(JSON.stringify({ k: { roots: [] } }).length);
    await store.update(a.taskId, { status: 'completed', resultJson: 'ééé' }); // UTF-8: 6 bytes
    expect(store.stats().bytes).toBe(6);
    const b = await store.create(newTask());
    const error = { code: -32000, message: 'boom', data: { why: 'x' } };
    await store.update(b.taskId, { status: 'failed', error });
    expect(store.stats().bytes).toBe(6 + JSON.stringify(error).length);
    clock.now += 1_000;
    expect(store.sweep()).toBe(2);
    expect(store.stats()).toEqual({ tasks: 0, bytes: 0, owners: 0 });
  });

  it('a result past maxTaskBytes fails the task instead and drops it', async () => {
    const { store } = makeStore({ maxTaskBytes: 100 });
    const task = await store.create(newTask());
    const failed = await store.update(task.taskId, { status: 'completed', resultJson: 'x'.repeat(101) });
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task result exceeds 100 bytes' } });
    expect(failed?.resultJson).toBeUndefined();
    // The store's own failure holds no payload bytes (its error is small and one per task).
    expect(store.stats().bytes).toBe(0);
    const fits = await store.create(newTask());
    expect(await store.update(fits.taskId, { status: 'completed', resultJson: 'x'.repeat(100) })).toMatchObject({ status: 'completed' });
  });

  it('answers past maxTaskBytes fail the task too (a client cannot make the node hold more)', async () => {
    const { store } = makeStore({ maxTaskBytes: 100 });
    const task = await store.create(newTask());
    await store.update(task.taskId, { addInputRequests: { k: { method: 'elicitation/create' } } });
    const failed = await store.respond(task.taskId, 'session:a', { k: 'y'.repeat(200) });
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32603, message: expect.stringMatching(/exceeds 100 bytes/) } });
    expect(failed?.inputResponses).toBeUndefined();
    expect(failed?.inputRequests).toBeUndefined();
  });

  it('a change that would pass maxStoredBytes fails its task ("store full"); freed bytes make room again', async () => {
    const { store, clock } = makeStore({ maxTaskBytes: 100, maxStoredBytes: 150, defaultTtlMs: 10_000 });
    const a = await store.create(newTask('a', { ttlMs: 1_000 }));
    const b = await store.create(newTask('b'));
    await store.update(a.taskId, { status: 'completed', resultJson: 'a'.repeat(100) });
    const full = await store.update(b.taskId, { status: 'completed', resultJson: 'b'.repeat(60) });
    expect(full).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task store full (150 bytes)' } });
    expect(full?.resultJson).toBeUndefined();
    expect(store.stats().bytes).toBe(100);
    const fits = await store.create(newTask('b'));
    expect(await store.update(fits.taskId, { status: 'completed', resultJson: 'c'.repeat(50) })).toMatchObject({ status: 'completed' });
    expect(store.stats().bytes).toBe(150);
    clock.now += 1_000; // a expires: its 100 bytes are free again
    const again = await store.create(newTask('b'));
    expect(await store.update(again.taskId, { status: 'completed', resultJson: 'd'.repeat(60) })).toMatchObject({ status: 'completed' });
    expect(store.stats()).toEqual({ tasks: 4 - 1, bytes: 110, owners: 1 });
  });
});

describe('lifetime', () => {
  it('an expired task is unknown at once; an unfinished one is failed ("task expired") then deleted for its watchers', async () => {
    const { store, clock } = makeStore({ defaultTtlMs: 1_000 });
    const task = await store.create(newTask());
    const seen: (TaskRecord | undefined)[] = [];
    store.watch(task.taskId, (t) => seen.push(t));
    clock.now += 999;
    expect(await store.get(task.taskId, 'session:a')).toBeDefined();
    clock.now += 1;
    expect(await store.get(task.taskId, 'session:a')).toBeUndefined();
    expect(seen).toHaveLength(2);
    expect(seen[0]).toMatchObject({ status: 'failed', error: { code: -32603, message: 'task expired' } });
    expect(seen[1]).toBeUndefined();
    expect(store.stats()).toEqual({ tasks: 0, bytes: 0, owners: 0 });
  });

  it('a finished task expires without a failure first', async () => {
    const { store, clock } = makeStore({ defaultTtlMs: 1_000 });
    const task = await store.create(newTask());
    await store.update(task.taskId, { status: 'completed', resultJson: '{}' });
    const seen: (TaskRecord | undefined)[] = [];
    store.watch(task.taskId, (t) => seen.push(t));
    clock.now += 1_000;
    expect(store.sweep()).toBe(1);
    expect(seen).toEqual([undefined]);
  });

  it('the janitor deletes expired tasks on its own (real clock, short lifetimes)', async () => {
    const store = new MemoryTaskStore({ defaultTtlMs: 40 });
    cleanup(() => store.close());
    const task = await store.create(newTask());
    const gone = new Promise<TaskRecord | undefined>((resolve) => {
      store.watch(task.taskId, (t) => { if (t === undefined) resolve(t); });
    });
    expect(store.stats().tasks).toBe(1);
    await gone;
    expect(store.stats()).toEqual({ tasks: 0, bytes: 0, owners: 0 });
  });

  it('close stops the janitor and refuses later calls with transport_closed', async () => {
    const store = new MemoryTaskStore();
    await store.create(newTask());
    await store.close();
    expect(store.stats().tasks).toBe(0);
    expect(await codeOf(store.create(newTask()))).toBe('transport_closed');
    expect(await codeOf(store.get('t', 'a'))).toBe('transport_closed');
    await store.close(); // twice is fine
  });
});

describe('watch', () => {
  it('tells each listener every change synchronously, until unwatched', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    const one: number[] = [];
    const two: number[] = [];
    const stopOne = store.watch(task.taskId, (t) => one.push(t!.version));
    store.watch(task.taskId, (t) => two.push(t!.version));
    const updating = store.update(task.taskId, { statusMessage: 'a' });
    expect(one).toEqual([2]); // before the promise settles
    await updating;
    stopOne();
    stopOne();
    await store.update(task.taskId, { statusMessage: 'b' });
    await store.cancel(task.taskId, 'session:a');
    expect(one).toEqual([2]);
    expect(two).toEqual([2, 3, 4]);
  });

  it('a listener that throws does not keep the others from being told', async () => {
    const { store } = makeStore();
    const task = await store.create(newTask());
    const told: string[] = [];
    const warned = new Promise((resolve) => process.once('warning', resolve));
    store.watch(task.taskId, () => { throw new Error('bad listener'); });
    store.watch(task.taskId, (t) => told.push(t!.status));
    expect(await store.update(task.taskId, { status: 'completed', resultJson: '{}' })).toMatchObject({ status: 'completed' });
    expect(told).toEqual(['completed']);
    expect(String(await warned)).toMatch(/bad listener/);
  });
});

describe('runnerLost', () => {
  it('fails every unfinished task of that runner only, with the reason', async () => {
    const { store } = makeStore();
    const mine = [await store.create(newTask('a', { runner: '7' })), await store.create(newTask('b', { runner: '7' }))];
    const finished = await store.create(newTask('a', { runner: '7' }));
    await store.update(finished.taskId, { status: 'completed', resultJson: '{}' });
    const other = await store.create(newTask('a', { runner: '8' }));
    const seen: (TaskRecord | undefined)[] = [];
    store.watch(mine[1].taskId, (t) => seen.push(t));
    expect(await store.runnerLost('7', 'the worker running this task exited')).toBe(2);
    for (const t of mine) {
      expect(await store.get(t.taskId, t.owner)).toMatchObject({ status: 'failed', statusMessage: 'the worker running this task exited', error: { code: -32603, message: 'the worker running this task exited' } });
    }
    expect(seen).toHaveLength(1);
    expect((await store.get(finished.taskId, 'a'))?.status).toBe('completed');
    expect((await store.get(other.taskId, 'a'))?.status).toBe('working');
    expect(await store.runnerLost('7', 'again')).toBe(0);
  });
});
