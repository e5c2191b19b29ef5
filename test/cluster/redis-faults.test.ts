// Redis faults under two nodes, with a real redis-server, each bounded in time and judged by
// outcomes: every task ends in exactly one terminal state with its result or a reason, no task of a
// healthy node is failed, no create that the client saw fail leaves a task behind.
// - DEBUG SLEEP longer than the command timeout (2 s) while tasks finish: their results land once
//   Redis answers again (held and retried by the node), and a create sent during the stall leaves
//   no ghost task.
// - Redis (AOF) stopped for longer than the heartbeat life (6 s) and started again: tasks that
//   finished meanwhile keep their results; tasks still running on both nodes are not failed.
// - Redis without persistence restarted: what it held is gone (tasks/get: not found), never `working`.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { keysUnder, modernHeaders, modernMeta, startNode, startNodeProcess, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';
import { scratchDir } from '../helpers/scratch.js';

const kExt = 'io.modelcontextprotocol/tasks';
const kTools = new URL('./cluster-task-tools.mjs', import.meta.url);
const onCleanup = cleanupAfterEach();
const prefix = (): string => `f${randomBytes(4).toString('hex')}:`;
let nextId = 1;

function last(body: string): Record<string, unknown> {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, unknown>;
  const data = trimmed.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  return JSON.parse(data[data.length - 1]!) as Record<string, unknown>;
}

async function modern(node: Node, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const meta = { ...modernMeta, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } };
  const name = typeof params.name === 'string' ? params.name : String(params.taskId);
  const res = await post(node.url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }, modernHeaders(method, name));
  return res.body.trim() === '' ? { status: res.status } : last(res.body);
}

async function startTask(node: Node, ms: number): Promise<string> {
  const made = await modern(node, 'tools/call', { name: 'sleepy', arguments: { ms } });
  expect(made.result, JSON.stringify(made)).toMatchObject({ resultType: 'task', status: 'working' });
  return String((made.result as { taskId: string }).taskId);
}

async function status(node: Node, taskId: string): Promise<Record<string, unknown>> {
  const got = await modern(node, 'tasks/get', { taskId });
  return (got.result ?? { error: got.error }) as Record<string, unknown>;
}

async function twoNodes(redisUrl: string): Promise<[Node, Node, string]> {
  const keyPrefix = prefix();
  const options = { tools: kTools, workers: 1, tasks: { limits: { pollIntervalMs: 50 } } };
  const [a, b] = await Promise.all(['A', 'B'].map((nodeId) => startNode(redisUrl, options, { keyPrefix, nodeId })));
  onCleanup(() => Promise.all([a!.close(), b!.close()]));
  return [a!, b!, keyPrefix];
}

/**
 * A redis-server of this file on a fixed port, `args` added (AOF, DEBUG allowed): stop() is a clean
 * SIGTERM, start() starts it again on the same folder (an AOF Redis reloads its data).
 */
async function ownRedis(args: readonly string[]): Promise<{ url: string; start(): Promise<void>; stop(): Promise<void> }> {
  const port = await freePort();
  const dir = scratchDir('sluice-faults-');
  let child: ChildProcess | undefined;
  const start = async (): Promise<void> => {
    child = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir, '--loglevel', 'warning', ...args], { stdio: 'ignore' });
    const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null });
    probe.on('error', () => {});
    const deadline = Date.now() + 10_000;
    for (;;) {
      try {
        await probe.connect();
        if (await probe.ping() === 'PONG') break;
      } catch {
        if (Date.now() > deadline) throw new Error('redis-server did not start');
        await new Promise((r) => setTimeout(r, 50));
      }
    }
    probe.disconnect();
  };
  const stop = async (): Promise<void> => {
    const c = child;
    if (c === undefined || c.exitCode !== null || c.signalCode !== null) return;
    const exited = new Promise((r) => c.once('exit', r));
    c.kill('SIGTERM');
    await exited;
  };
  await start();
  return { url: `redis://127.0.0.1:${port}`, start, stop };
}

describe('Redis stalled (DEBUG SLEEP longer than the command timeout)', () => {
  let redis: Awaited<ReturnType<typeof ownRedis>>;
  beforeAll(async () => { redis = await ownRedis(['--appendonly', 'no', '--enable-debug-command', 'local']); });
  afterAll(async () => { await redis?.stop(); });

  it('tasks that finish during the stall are completed with their results once Redis answers; a create sent during it leaves no task', { timeout: 40_000 }, async () => {
    const [a, b, keyPrefix] = await twoNodes(redis.url);
    const ids = await Promise.all(Array.from({ length: 6 }, () => startTask(a, 400)));
    const admin = new Redis(redis.url);
    onCleanup(() => admin.disconnect());
    // Connected first: under load, connecting (and ioredis's ready check) once took longer than the
    // pause below, so the create reached Redis before the stall and was rightly served.
    await admin.ping();
    // Redis is blocked for 3.5 s: every task's final write times out (2 s) at least once.
    const sleeping = admin.call('DEBUG', 'SLEEP', '3.5');
    await new Promise((r) => setTimeout(r, 200));
    // A create during the stall: the client is told it failed, so it must not exist afterwards.
    const ghost = await modern(a, 'tools/call', { name: 'sleepy', arguments: { ms: 100 } });
    expect(ghost.error, JSON.stringify(ghost)).toMatchObject({ code: -32603 });
    await sleeping;

    const deadline = Date.now() + 15_000;
    const final = new Map<string, Record<string, unknown>>();
    while (final.size < ids.length) {
      if (Date.now() > deadline) throw new Error(`tasks still unfinished after the stall: ${JSON.stringify(await Promise.all(ids.filter((id) => !final.has(id)).map((id) => status(b, id))))}`);
      for (const id of ids) {
        if (final.has(id)) continue;
        const task = await status(b, id);
        if (task.status !== 'working' && task.status !== undefined) final.set(id, task);
      }
      await new Promise((r) => setTimeout(r, 200));
    }
    for (const task of final.values()) {
      expect(task, JSON.stringify(task)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'slept 400' }] } });
    }
    // Nothing flips afterwards, and exactly the six tasks exist (the stalled create left none).
    await new Promise((r) => setTimeout(r, 2_500)); // one heartbeat: an abandoned create is forgotten by now
    for (const id of ids) expect((await status(a, id)).status).toBe('completed');
    const taskKeys = (await keysUnder(redis.url, keyPrefix)).filter((k) => k.startsWith(`${keyPrefix}task:`)).sort();
    expect(taskKeys).toEqual(ids.map((id) => `${keyPrefix}task:${id}`).sort());
  });
});

describe('Redis stopped longer than the heartbeat life', () => {
  it('with AOF: finished tasks keep their results, running tasks of both nodes are not failed after the restart', { timeout: 60_000 }, async () => {
    const redis = await ownRedis(['--appendonly', 'yes', '--appendfsync', 'always']);
    onCleanup(() => redis.stop());
    const [a, b] = await twoNodes(redis.url);
    const longOnA = await startTask(a, 40_000);
    const longOnB = await startTask(b, 40_000);
    const short = await Promise.all([startTask(a, 1_000), startTask(b, 1_000)]);
    await redis.stop();
    // 7 s down: every heartbeat (6 s life) has expired when Redis comes back.
    await new Promise((r) => setTimeout(r, 7_000));
    await redis.start();

    // The short tasks' results, held by their nodes, land.
    await until(async () => (await Promise.all(short.map((id) => status(a, id)))).every((t) => t.status === 'completed'), 15_000, 'the held results to land');
    for (const id of short) expect(await status(b, id)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'slept 1000' }] } });
    // Past the sweep grace (4 heartbeats) and a few sweeps more, the live nodes' tasks still run.
    await new Promise((r) => setTimeout(r, 11_000));
    expect((await status(b, longOnA)).status).toBe('working');
    expect((await status(a, longOnB)).status).toBe('working');
    // And they still end normally: cancelled through the other node, they read cancelled.
    const cancelled = await modern(b, 'tasks/cancel', { taskId: longOnA });
    expect(cancelled.error, JSON.stringify(cancelled)).toBeUndefined();
    await until(async () => (await status(a, longOnA)).status === 'cancelled', 5_000, 'the cancel to land');
  });

  it('without persistence: the tasks Redis held are gone (not found), never left working; new tasks work', { timeout: 30_000 }, async () => {
    const redis = await startRedis();
    onCleanup(() => redis.stop());
    const [a, b] = await twoNodes(redis.url);
    const id = await startTask(a, 1_500);
    await redis.restart(); // SIGKILL, then an empty Redis on the same port
    await new Promise((r) => setTimeout(r, 2_500));
    await until(async () => (await status(b, id)).error !== undefined, 10_000, 'tasks/get to answer');
    expect(JSON.stringify((await status(b, id)).error)).toMatch(/not found|unknown|no task/i);
    const again = await startTask(a, 50);
    await until(async () => (await status(b, again)).status === 'completed', 10_000, 'a new task to complete');
  });
});

describe('a clean shutdown', () => {
  it('`sluice serve --redis` on SIGTERM logs no lost Redis (its connections are closed, not lost)', { timeout: 30_000 }, async () => {
    const redis = await startRedis();
    onCleanup(() => redis.stop());
    const bin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
    const child = spawn(process.execPath, [bin, 'serve', '--port', '0', '--redis', redis.url, '--redis-prefix', prefix(), '--tools', fileURLToPath(kTools)], { stdio: ['ignore', 'ignore', 'pipe'] });
    let stderr = '';
    child.stderr!.setEncoding('utf8').on('data', (chunk: string) => { stderr += chunk; });
    const exited = new Promise<number | null>((r) => child.once('exit', (code) => r(code)));
    onCleanup(() => { if (child.exitCode === null) child.kill('SIGKILL'); });
    await until(() => stderr.includes('serving MCP at'), 15_000, 'sluice serve to start');
    child.kill('SIGTERM');
    expect(await exited).toBe(0);
    expect(stderr).toContain('shutting down');
    expect(stderr).not.toMatch(/lost Redis|link to Redis .* is down/);
  });
});
