/**
 * One task store for every thread: a TaskStoreHost here (the supervisor's place) and
 * TaskStoreClients in real worker threads (test/tasks/fixtures/task-client.mjs, which imports dist/:
 * build first). A task made through one worker is read, answered and cancelled through another;
 * watches cross; errors cross with their codes; a closed port fails what was pending.
 */
import { once } from 'node:events';
import { MessageChannel, Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { MemoryTaskStore, SluiceError } from '../../src/index.js';
import type { NewTask, TaskChange, TaskLimits, TaskPage, TaskRecord, TaskStore } from '../../src/index.js';
import { TaskStoreClient, TaskStoreHost } from '../../src/tasks/stores/port-store.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';

const cleanup = cleanupAfterEach();
const kFixture = new URL('./fixtures/task-client.mjs', import.meta.url);

/** A store that counts live store-side watches and can leave chosen `get`s unanswered. */
class SpyStore implements TaskStore {
  watching = 0;
  readonly hang = new Set<string>();
  readonly inner: MemoryTaskStore;
  constructor(limits?: Partial<TaskLimits>) {
    this.inner = new MemoryTaskStore(limits);
  }
  create(task: NewTask): Promise<TaskRecord> { return this.inner.create(task); }
  get(taskId: string, owner: string): Promise<TaskRecord | undefined> {
    return this.hang.has(taskId) ? new Promise(() => {}) : this.inner.get(taskId, owner);
  }
  list(owner: string, cursor: string | undefined, limit: number): Promise<TaskPage> { return this.inner.list(owner, cursor, limit); }
  update(taskId: string, change: TaskChange): Promise<TaskRecord | undefined> { return this.inner.update(taskId, change); }
  respond(taskId: string, owner: string, responses: Readonly<Record<string, unknown>>): Promise<TaskRecord | undefined> { return this.inner.respond(taskId, owner, responses); }
  cancel(taskId: string, owner: string, statusMessage?: string): Promise<TaskRecord | undefined> { return this.inner.cancel(taskId, owner, statusMessage); }
  runnerLost(runner: string, reason: string): Promise<number> { return this.inner.runnerLost(runner, reason); }
  watch(taskId: string, listener: (task: TaskRecord | undefined) => void): () => void {
    this.watching++;
    const stop = this.inner.watch(taskId, listener);
    let stopped = false;
    return () => {
      if (stopped) return;
      stopped = true;
      this.watching--;
      stop();
    };
  }
  close(): Promise<void> { return this.inner.close(); }
}

interface Reply { ok: boolean; value?: unknown; code?: string; name?: string; message?: string }
interface Changed { event: 'changed'; listener: number; taskId: string; task: TaskRecord | undefined }

interface Peer {
  worker: Worker;
  runner: string;
  detach: () => void;
  events: Record<string, unknown>[];
  call(method: keyof TaskStore, ...args: unknown[]): Promise<Reply>;
  send(message: Record<string, unknown>): Promise<Reply>;
  /** Waits until the events include one matching `match` (and returns it). */
  event(match: (e: Record<string, unknown>) => boolean): Promise<Record<string, unknown>>;
}

function setup(limits?: Partial<TaskLimits>): { store: SpyStore; host: TaskStoreHost } {
  const store = new SpyStore(limits);
  const host = new TaskStoreHost(store);
  cleanup(() => store.close());
  cleanup(() => host.close());
  return { store, host };
}

async function peer(host: TaskStoreHost): Promise<Peer> {
  const { port1, port2 } = new MessageChannel();
  const worker = new Worker(kFixture, { workerData: { port: port2 }, transferList: [port2] });
  cleanup(() => worker.terminate());
  const detach = host.attach(port1, String(worker.threadId));
  const events: Record<string, unknown>[] = [];
  const waiting = new Map<number, (reply: Reply) => void>();
  const watchers = new Set<() => void>();
  worker.on('message', (message: Record<string, unknown>) => {
    if (typeof message.seq === 'number') {
      const { seq: answered, ...reply } = message;
      waiting.get(answered as number)?.(reply as unknown as Reply);
      waiting.delete(answered as number);
    } else {
      events.push(message);
      for (const check of [...watchers]) check();
    }
  });
  await once(worker, 'message'); // ready
  let seq = 0;
  const send = (message: Record<string, unknown>) => new Promise<Reply>((resolve) => {
    waiting.set(++seq, resolve);
    worker.postMessage({ ...message, seq });
  });
  return {
    worker, runner: String(worker.threadId), detach, events, send,
    call: (method, ...args) => send({ op: 'call', method, args }),
    event: (match) => new Promise((resolve, reject) => {
      const timer = setTimeout(() => { watchers.delete(check); reject(new Error(`no such event; got ${JSON.stringify(events)}`)); }, 5_000);
      const check = () => {
        const found = events.find(match);
        if (found === undefined) return;
        clearTimeout(timer);
        watchers.delete(check);
        resolve(found);
      };
      watchers.add(check);
      check();
    }),
  };
}

const newTask = (taskId: string, runner: string, owner = 'session:a'): NewTask => ({ taskId, owner, dialect: 'legacy', toolName: 'slow', runner });
const changedTo = (taskId: string, status: string | undefined, listener = 0) => (e: Record<string, unknown>) =>
  e.event === 'changed' && e.taskId === taskId && e.listener === listener && (status === undefined ? e.task === undefined : (e.task as TaskRecord | undefined)?.status === status);

describe('a store shared by worker threads', () => {
  it('a task created through worker A is read, answered and cancelled through worker B; A\'s watchers see it all', async () => {
    const { store, host } = setup();
    const [a, b] = await Promise.all([peer(host), peer(host)]);
    const created = await a.call('create', newTask('t1', a.runner));
    expect(created).toMatchObject({ ok: true, value: { taskId: 't1', status: 'working', runner: a.runner, version: 1 } });
    // Two local listeners in A: the host is asked for one watch.
    expect(await a.send({ op: 'watch', taskId: 't1', listeners: 2 })).toEqual({ ok: true });
    await expect.poll(() => store.watching).toBe(1);

    expect(await b.call('get', 't1', 'session:a')).toMatchObject({ ok: true, value: { taskId: 't1', status: 'working' } });
    expect(await b.call('get', 't1', 'session:other')).toEqual({ ok: true, value: undefined });

    // A's runner asks for input; B's client answers it; A sees both changes.
    expect(await a.call('update', 't1', { addInputRequests: { r1: { method: 'elicitation/create', params: { message: 'ok?' } } } })).toMatchObject({ value: { status: 'input_required' } });
    const answered = await b.call('respond', 't1', 'session:a', { r1: { action: 'accept' } });
    expect(answered).toMatchObject({ ok: true, value: { status: 'working', inputResponses: { r1: { action: 'accept' } } } });
    await a.event(changedTo('t1', 'input_required', 0));
    const seenAnswer = await a.event((e) => changedTo('t1', 'working', 1)(e) && (e.task as TaskRecord).inputResponses !== undefined);
    expect((seenAnswer.task as TaskRecord).version).toBe(3);

    expect(await b.call('cancel', 't1', 'session:a', 'user gave up')).toMatchObject({ ok: true, value: { status: 'cancelled', statusMessage: 'user gave up' } });
    for (const listener of [0, 1]) await a.event(changedTo('t1', 'cancelled', listener));
    // The runner's late result is ignored: terminal is final, across threads too.
    expect(await a.call('update', 't1', { status: 'completed', resultJson: '{}' })).toMatchObject({ value: { status: 'cancelled', version: 4 } });
    // The 'changed' messages carried every version, in order.
    const versions = a.events.filter((e) => e.event === 'changed' && e.taskId === 't1' && e.listener === 0).map((e) => (e.task as TaskRecord).version);
    expect(versions).toEqual([2, 3, 4]);

    expect(await a.send({ op: 'unwatch', taskId: 't1' })).toEqual({ ok: true });
    await expect.poll(() => store.watching).toBe(0);
  });

  it('lists across workers, and errors cross with their codes (task_limit_reached, invalid_cursor)', async () => {
    const { host } = setup({ maxTasksPerOwner: 2 });
    const [a, b] = await Promise.all([peer(host), peer(host)]);
    await a.call('create', newTask('x1', a.runner));
    await a.call('create', newTask('x2', a.runner));
    expect(await a.call('create', newTask('x3', a.runner))).toMatchObject({ ok: false, code: 'task_limit_reached', name: 'SluiceError' });
    const page = await b.call('list', 'session:a', undefined, 1);
    expect(page).toMatchObject({ ok: true, value: { tasks: [{ taskId: 'x2' }], nextCursor: expect.any(String) } });
    const next = await a.call('list', 'session:a', (page.value as TaskPage).nextCursor, 1);
    expect(next).toMatchObject({ ok: true, value: { tasks: [{ taskId: 'x1' }] } });
    expect(await b.call('list', 'session:b', (page.value as TaskPage).nextCursor, 1)).toMatchObject({ ok: false, code: 'invalid_cursor' });
  });

  it('a worker cannot file tasks under another runner, nor report another lost', async () => {
    const { host } = setup();
    const [a, b] = await Promise.all([peer(host), peer(host)]);
    expect(await a.call('create', newTask('y1', b.runner))).toMatchObject({ ok: false, message: expect.stringContaining('is not this thread') });
    expect(await a.call('create', newTask('y2', `${a.runner}/pool-1`))).toMatchObject({ ok: true });
    expect(await a.call('runnerLost', b.runner, 'nope')).toMatchObject({ ok: false });
    expect(await a.call('runnerLost', `${a.runner}/pool-1`, 'gone')).toEqual({ ok: true, value: 1 });
  });

  it('a worker that exits releases its watches; its tasks fail once the supervisor reports the runner lost', async () => {
    const { store, host } = setup();
    const [a, b] = await Promise.all([peer(host), peer(host)]);
    await a.call('create', newTask('z1', a.runner));
    await a.send({ op: 'watch', taskId: 'z1' });
    await b.send({ op: 'watch', taskId: 'z1' });
    await expect.poll(() => store.watching).toBe(2);
    const exited = once(a.worker, 'exit');
    a.worker.postMessage({ op: 'exit' });
    await exited;
    await expect.poll(() => store.watching).toBe(1);
    expect(await store.runnerLost(a.runner, 'the worker running this task exited')).toBe(1);
    const failed = await b.event(changedTo('z1', 'failed'));
    expect(failed.task).toMatchObject({ error: { code: -32603, message: 'the worker running this task exited' } });
    expect(await b.call('get', 'z1', 'session:a')).toMatchObject({ value: { status: 'failed' } });
  });

  it('pending calls reject with transport_closed when the host closes the port, and when the client closes', async () => {
    const { store, host } = setup();
    store.hang.add('never');
    const [a, b] = await Promise.all([peer(host), peer(host)]);
    expect(await a.send({ op: 'pendingCall', tag: 'p', method: 'get', args: ['never', 'session:a'] })).toMatchObject({ sent: true });
    await new Promise((r) => setTimeout(r, 50));
    expect(a.events.some((e) => e.event === 'settled')).toBe(false); // really pending
    a.detach();
    expect(await a.event((e) => e.event === 'settled')).toMatchObject({ ok: false, code: 'transport_closed' });
    // A call after the close fails at once, the same way.
    expect(await a.call('get', 'x', 'session:a')).toMatchObject({ ok: false, code: 'transport_closed' });

    expect(await b.send({ op: 'callThenClose', method: 'get', args: ['never', 'session:a'] })).toMatchObject({ ok: false, code: 'transport_closed' });
  });
});

describe('TaskStoreClient in this thread', () => {
  it('answers like the store itself, and an uncloneable argument fails only its call', async () => {
    const { store, host } = setup();
    const { port1, port2 } = new MessageChannel();
    host.attach(port1);
    const client = new TaskStoreClient(port2);
    cleanup(() => client.close());
    const created = await client.create(newTask('c1', 'r'));
    expect(created).toEqual(await store.inner.get('c1', 'session:a'));
    await expect(client.respond('c1', 'session:a', { k: () => 1 })).rejects.toThrow();
    expect(await client.get('c1', 'session:a')).toEqual(created);
    const error = await client.create(newTask('c1', 'r')).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(Error);
    expect(error).not.toBeInstanceOf(SluiceError); // a duplicate id is a bug, not a coded refusal
  });

  it('one host watch per task id however many local listeners; unwatch when the last goes', async () => {
    const { store, host } = setup();
    const { port1, port2 } = new MessageChannel();
    host.attach(port1);
    const subscriptions: string[] = [];
    port1.on('message', (m: { op: string }) => { if (m.op === 'watch' || m.op === 'unwatch') subscriptions.push(m.op); });
    const client = new TaskStoreClient(port2);
    cleanup(() => client.close());
    await client.create(newTask('w1', 'r'));
    const seen: number[] = [];
    const stops = [client.watch('w1', (t) => seen.push(t!.version)), client.watch('w1', (t) => seen.push(-t!.version))];
    await expect.poll(() => store.watching).toBe(1);
    await client.update('w1', { statusMessage: 'a' });
    await expect.poll(() => seen.length).toBe(2);
    expect(seen.sort()).toEqual([-2, 2]);
    stops[0]();
    await client.update('w1', { statusMessage: 'b' });
    await expect.poll(() => seen.length).toBe(3);
    expect(store.watching).toBe(1);
    stops[1]();
    await expect.poll(() => store.watching).toBe(0);
    expect(subscriptions).toEqual(['watch', 'unwatch']);
  });
});
