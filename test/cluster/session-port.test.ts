/**
 * The session directory's port between an HTTP worker and the supervisor, against what it can be
 * made to carry: a value the far side cannot deserialise ('messageerror', about 2 000 levels deep),
 * malformed calls and answers, and a far side that never answers. Every call must end with an
 * answer (`unavailable`: a 503, never a hang), each problem reported once, and the port must serve
 * on. Real worker threads speaking the protocol by hand, a real redis-server behind the host.
 */
import { once } from 'node:events';
import { randomBytes } from 'node:crypto';
import { MessageChannel, Worker } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionDirectoryClient } from '../../src/cluster/session-client.js';
import { SessionDirectoryHost } from '../../src/cluster/sessions.js';
import { SessionStore } from '../../src/sessions/store.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';

const cleanup = cleanupAfterEach();
const kRaw = new URL('./fixtures/raw-session-port.mjs', import.meta.url);
let redis: RedisInstance;

beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

async function until(what: string, check: () => boolean, ms = 3_000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

async function raw(mode: 'client' | 'host', port: MessagePort): Promise<{ worker: Worker; got: () => Record<string, unknown>[] }> {
  const worker = new Worker(kRaw, { workerData: { mode, port }, transferList: [port] });
  cleanup(() => worker.terminate());
  const messages: Record<string, unknown>[] = [];
  const ready = once(worker, 'message');
  worker.on('message', (m: Record<string, unknown>) => { if (m.got !== undefined) messages.push(m.got as Record<string, unknown>); });
  await ready;
  return { worker, got: () => messages };
}

async function host(): Promise<{ host: SessionDirectoryHost; problems: string[]; prefix: string }> {
  const connection = new Redis(redis.url, { maxRetriesPerRequest: 1, lazyConnect: true });
  connection.on('error', () => {});
  await connection.connect();
  const problems: string[] = [];
  const store = SessionStore.create(16, 4);
  const prefix = `p${randomBytes(4).toString('hex')}:`;
  const directory = new SessionDirectoryHost({ redis: connection, keyPrefix: prefix, nodeId: 'n1' }, {
    store, idleMs: 60_000, log: () => {}, onProblem: (m) => problems.push(m),
  });
  cleanup(() => connection.disconnect());
  cleanup(() => directory.close());
  return { host: directory, problems, prefix };
}

const session = () => randomBytes(16).toString('hex');

describe('the session directory port cannot be wedged', () => {
  it('host: a call it cannot read is named back by its position; malformed calls are answered unavailable; it serves on', async () => {
    const { host: directory, problems } = await host();
    const { port1, port2 } = new MessageChannel();
    const { worker, got } = await raw('client', port2);
    directory.attach(port1);
    const id = session();
    worker.postMessage({ op: 'post', message: { id: 1, op: 'register', session: id, principal: '', capabilities: 0 } });
    // Message 2 cannot be deserialised on the supervisor's side.
    worker.postMessage({ op: 'post', message: { id: 2, op: 'adopt', session: id }, field: 'principal', depth: 3_000 });
    // Malformed: a session id that is not a string, an unknown operation, an overlong id.
    worker.postMessage({ op: 'post', message: { id: 3, op: 'register', session: 5, principal: '', capabilities: 0 } });
    worker.postMessage({ op: 'post', message: { id: 4, op: 'drop-everything', session: id } });
    worker.postMessage({ op: 'post', message: { id: 5, op: 'adopt', session: 'x'.repeat(100_000), principal: '' } });
    worker.postMessage({ op: 'post', message: { id: 6, op: 'end', session: id } });
    await until('six messages back', () => got().length >= 6);
    const answers = got();
    expect(answers).toContainEqual({ type: 'answer', id: 1, answer: 'ok' });
    expect(answers).toContainEqual({ type: 'undeliverable', seq: 2 });
    expect(answers).toContainEqual({ type: 'answer', id: 3, answer: 'unavailable' });
    expect(answers).toContainEqual({ type: 'answer', id: 4, answer: 'unavailable' });
    expect(answers).toContainEqual({ type: 'answer', id: 5, answer: 'unavailable' });
    expect(answers).toContainEqual({ type: 'answer', id: 6, answer: 'ok' });
    expect(problems.filter((p) => p.includes('could not be read'))).toHaveLength(1);
    expect(problems.filter((p) => p.includes('malformed call'))).toHaveLength(3);
  });

  it('client: an answer it cannot read is named back, and that call (only) answers unavailable', async () => {
    const { port1, port2 } = new MessageChannel();
    const { worker, got } = await raw('host', port2);
    const problems: string[] = [];
    const client = new SessionDirectoryClient(port1, { onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const first = client.adopt(session(), '');
    const second = client.end(session());
    await until('both calls at the raw host', () => got().length >= 2);
    // The raw host answers call 1 with a value this thread cannot deserialise, then call 2 properly.
    worker.postMessage({ op: 'post', message: { type: 'answer', id: 1, answer: 'ok' }, field: 'extra', depth: 3_000 });
    worker.postMessage({ op: 'post', message: { type: 'answer', id: 2, answer: 'ok' } });
    expect(await second).toBe('ok');
    expect(await first).toBe('unavailable');
    // The raw host reports what it got on its own channel, which may lag the answer it sent.
    await until('the undeliverable notice at the raw host', () => got().some((m) => m.op === 'undeliverable'));
    expect(got()).toContainEqual({ op: 'undeliverable', seq: 1 });
    expect(problems.filter((p) => p.includes('could not be read'))).toHaveLength(1);
  });

  it('client: a malformed answer is dropped and reported; the call it names answers unavailable at once', async () => {
    const { port1, port2 } = new MessageChannel();
    const { worker, got } = await raw('client', port2);
    const problems: string[] = [];
    const client = new SessionDirectoryClient(port1, { callTimeoutMs: 30_000, onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const call = client.adopt(session(), '');
    await until('the call at the raw host', () => got().length >= 1);
    const started = Date.now();
    worker.postMessage({ op: 'post', message: { type: 'answer', id: 1, answer: 'yes, adopted' } });
    worker.postMessage({ op: 'post', message: 'not an answer' });
    expect(await call).toBe('unavailable');
    expect(Date.now() - started).toBeLessThan(2_000);
    await until('both problems', () => problems.length >= 2);
    expect(problems).toEqual([expect.stringContaining('malformed message'), expect.stringContaining('malformed message')]);
  });

  it('client: a call the host never answers answers unavailable after callTimeoutMs, and is reported', async () => {
    const { port1, port2 } = new MessageChannel();
    cleanup(() => port2.close());
    const problems: string[] = [];
    const client = new SessionDirectoryClient(port1, { callTimeoutMs: 200, onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const started = Date.now();
    let timer: ReturnType<typeof setTimeout> | undefined;
    const outcome = await Promise.race([client.setLogLevel(session(), 3), new Promise((r) => { timer = setTimeout(() => r('hung'), 3_000); })]);
    clearTimeout(timer);
    expect(outcome).toBe('unavailable');
    expect(Date.now() - started).toBeGreaterThanOrEqual(190);
    expect(problems).toEqual([expect.stringContaining('had no answer within 200 ms')]);
  });

  it('host: a port attached with its own onProblem reports there (the supervisor counts per worker)', async () => {
    const { host: directory, problems } = await host();
    const { port1, port2 } = new MessageChannel();
    const { worker, got } = await raw('client', port2);
    const own: string[] = [];
    directory.attach(port1, (m) => own.push(m));
    worker.postMessage({ op: 'post', message: { id: 1, op: 'end' } });
    await until('the answer', () => got().length >= 1);
    expect(got()).toEqual([{ type: 'answer', id: 1, answer: 'unavailable' }]);
    expect(own).toEqual([expect.stringContaining('malformed call')]);
    expect(problems).toEqual([]);
  });

  it('client and host together: calls are answered, an overlong presented id is 404 without asking', async () => {
    const { host: directory, problems } = await host();
    const { port1, port2 } = new MessageChannel();
    directory.attach(port1);
    const client = new SessionDirectoryClient(port2, { onProblem: (m) => problems.push(m) });
    cleanup(() => client.close());
    const id = session();
    expect(await client.register(id, '', 0)).toBe('ok');
    expect(await client.setLogLevel(id, 2)).toBe('ok');
    expect(await client.adopt('y'.repeat(10_000), '')).toBe('missing');
    expect(await client.end(id)).toBe('ok');
    expect(await client.setLogLevel(id, 2)).toBe('missing');
    expect(problems).toEqual([]);
  });

  it('an invalidation longer than any session id is ignored: no node acknowledges it back at its size', async () => {
    const { prefix } = await host();
    const listener = new Redis(redis.url);
    listener.on('error', () => {});
    cleanup(() => listener.disconnect());
    const acks: string[] = [];
    listener.on('message', (_channel: string, message: string) => acks.push(message));
    await listener.subscribe(`${prefix}sessions-ack`);
    const publisher = new Redis(redis.url);
    cleanup(() => publisher.disconnect());
    // The host's subscriber may still be connecting: repeat the good one until it is acknowledged.
    const end = Date.now() + 5_000;
    while (!acks.includes(`other ${'a'.repeat(32)}`) && Date.now() < end) {
      await publisher.publish(`${prefix}sessions`, `other ${'a'.repeat(32)}`);
      await new Promise((r) => setTimeout(r, 50));
    }
    expect(acks).toContain(`other ${'a'.repeat(32)}`);
    await publisher.publish(`${prefix}sessions`, `other ${'b'.repeat(100_000)}`);
    await publisher.publish(`${prefix}sessions`, `other ${'c'.repeat(32)}`);
    await until('the second good one acknowledged', () => acks.includes(`other ${'c'.repeat(32)}`));
    expect(acks.filter((a) => a.length > 1_000)).toEqual([]);
  });
});
