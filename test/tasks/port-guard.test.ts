/**
 * The task store's port between threads, against what it can be made to carry: a value a thread
 * serialises and the other cannot deserialise ('messageerror': about 2 000 levels deep on the main
 * thread), and a far side that never answers. Every call must end with an answer, and the port
 * must serve on. Real worker threads (the fixtures import dist/: build first); no mocks.
 */
import { once } from 'node:events';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../../src/index.js';
import { TaskStoreClient, TaskStoreHost } from '../../src/tasks/stores/port-store.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';

const cleanup = cleanupAfterEach();
const kClient = new URL('./fixtures/task-client.mjs', import.meta.url);
const kRaw = new URL('./fixtures/raw-port.mjs', import.meta.url);

function within<T>(ms: number, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`no answer within ${ms} ms`)), ms); }),
  ]);
}

async function start(url: URL, data: Record<string, unknown>, port: MessagePort): Promise<{ worker: Worker; messages: Record<string, unknown>[] }> {
  const worker = new Worker(url, { workerData: { ...data, port }, transferList: [port] });
  cleanup(() => worker.terminate());
  const messages: Record<string, unknown>[] = [];
  const ready = once(worker, 'message');
  worker.on('message', (m: Record<string, unknown>) => messages.push(m));
  await ready;
  return { worker, messages };
}

async function hostWith(): Promise<{ host: TaskStoreHost; store: MemoryTaskStore; problems: string[] }> {
  const store = new MemoryTaskStore();
  const problems: string[] = [];
  const host = new TaskStoreHost(store, { onProblem: (m) => problems.push(m) });
  cleanup(() => host.close());
  cleanup(() => store.close());
  return { host, store, problems };
}

describe('the task store port cannot be wedged', () => {
  it('a worker\'s call carrying a value 3 000 levels deep fails at once with a clear error; the next call is served', async () => {
    const { host, store } = await hostWith();
    const { port1, port2 } = new MessageChannel();
    const { worker, messages } = await start(kClient, {}, port2);
    host.attach(port1, String(worker.threadId));
    await store.create({ taskId: 't1', owner: 'o', dialect: 'modern', toolName: 'x', runner: String(worker.threadId) });
    await store.update('t1', { addInputRequests: { k: { method: 'elicitation/create' } } });
    worker.postMessage({ op: 'deepCall', seq: 1, method: 'respond', args: ['t1', 'o'], depth: 3_000 });
    await within(3_000, (async () => { while (!messages.some((m) => m.seq === 1)) await new Promise((r) => setTimeout(r, 10)); })());
    expect(messages.find((m) => m.seq === 1)).toMatchObject({ ok: false, message: expect.stringMatching(/cannot cross threads: nested too deep/) });
    worker.postMessage({ op: 'call', seq: 2, method: 'get', args: ['t1', 'o'] });
    await within(3_000, (async () => { while (!messages.some((m) => m.seq === 2)) await new Promise((r) => setTimeout(r, 10)); })());
    expect(messages.find((m) => m.seq === 2)).toMatchObject({ ok: true, value: { taskId: 't1', status: 'input_required' } });
  });

  it('the host answers a message it cannot read with "undeliverable" at its position, logs it, and serves the next call', async () => {
    const { host, store, problems } = await hostWith();
    await store.create({ taskId: 't1', owner: 'o', dialect: 'modern', toolName: 'x', runner: 'r' });
    const { port1, port2 } = new MessageChannel();
    const { worker, messages } = await start(kRaw, { mode: 'client' }, port2);
    host.attach(port1);
    worker.postMessage({ op: 'post', message: { id: 1, op: 'get', taskId: 't1', owner: 'o' } });
    worker.postMessage({ op: 'post', message: { id: 2, op: 'respond', taskId: 't1', owner: 'o' }, field: 'responses', depth: 3_000 });
    worker.postMessage({ op: 'post', message: { id: 3, op: 'get', taskId: 't1', owner: 'o' } });
    const got = () => messages.filter((m) => m.got !== undefined).map((m) => m.got as Record<string, unknown>);
    await within(3_000, (async () => { while (got().length < 3) await new Promise((r) => setTimeout(r, 10)); })());
    const answers = got();
    expect(answers.find((m) => m.id === 1)).toMatchObject({ type: 'result', value: { taskId: 't1' } });
    expect(answers.find((m) => m.type === 'undeliverable')).toEqual({ type: 'undeliverable', seq: 2 });
    expect(answers.find((m) => m.id === 3)).toMatchObject({ type: 'result', value: { taskId: 't1' } });
    expect(problems.some((p) => p.includes('could not be read'))).toBe(true);
  });

  it('a client that cannot read an answer says which one it was, and its call fails with the host\'s error', async () => {
    const { port1, port2 } = new MessageChannel();
    const { worker, messages } = await start(kRaw, { mode: 'host' }, port2);
    const problems: string[] = [];
    const client = new TaskStoreClient(port1, { onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const call = client.get('t1', 'o').then(() => 'resolved', (e: Error) => e.message);
    await within(3_000, (async () => { while (!messages.some((m) => m.got !== undefined)) await new Promise((r) => setTimeout(r, 10)); })());
    // The raw host answers call 1 with a value the main thread cannot deserialise.
    worker.postMessage({ op: 'post', message: { type: 'result', id: 1 }, field: 'value', depth: 3_000 });
    expect(await within(3_000, call)).toBe('undeliverable 1');
    await expect.poll(() => messages.map((m) => m.got).filter(Boolean)).toContainEqual({ op: 'undeliverable', seq: 1 });
    expect(problems.some((p) => p.includes('could not be read'))).toBe(true);
  });

  it('a call the far side never answers fails after callTimeoutMs, and is reported', async () => {
    const { port1, port2 } = new MessageChannel();
    cleanup(() => port2.close());
    const problems: string[] = [];
    const client = new TaskStoreClient(port1, { callTimeoutMs: 200, onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const outcome = await within(3_000, client.get('t1', 'o').then(() => 'resolved', (e: Error) => e.message));
    expect(outcome).toMatch(/did not answer within 200 ms/);
    expect(problems).toEqual([expect.stringContaining('had no answer within 200 ms')]);
  });
});
