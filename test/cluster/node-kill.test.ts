// Cluster faults with a real redis-server. A node SIGKILLed mid-task (nodes as separate processes,
// test/cluster/node-process.mjs on dist/): its task turns `failed` on the surviving node within a
// bound, its legacy sessions stay usable there, and nothing under the cluster's prefix is left in
// Redis without an expiry. Redis killed and restarted under two nodes: what needs the other node
// fails visibly (503, -32603 for tasks, counted in /metrics), what one node can do alone keeps
// working, and after the restart full service is back without restarting a node.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { recordPath, recorded } from '../helpers/server.js';
import { keysUnder, keysWithoutTtl, metric, modernHeaders, modernMeta, openStream, readyz, startNode, startNodeProcess, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

const kExt = 'io.modelcontextprotocol/tasks';
const kLegacy = { 'mcp-protocol-version': '2025-11-25' };
/** The bound on a killed node's tasks turning failed, with the default 2 s heartbeat (it lives 3 beats, swept every beat). */
const kFailedWithinMs = 10_000;

const onCleanup = cleanupAfterEach();
let redis: RedisInstance;
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

const prefix = (): string => `t${randomBytes(4).toString('hex')}:`;

/** The last JSON-RPC message of a body (JSON or SSE). */
function last(body: string): Record<string, unknown> {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, unknown>;
  const data = trimmed.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  if (data.length === 0) throw new Error(`no JSON-RPC message in ${JSON.stringify(body)}`);
  return JSON.parse(data[data.length - 1]!) as Record<string, unknown>;
}

let nextId = 1;

async function initialize(url: string, headers: Record<string, string> = {}): Promise<{ status: number; session: string | undefined }> {
  const res = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, { ...kLegacy, ...headers });
  const session = res.headers['mcp-session-id'];
  return { status: res.status, session: typeof session === 'string' ? session : undefined };
}

function sessionHeaders(session: string, headers: Record<string, string> = {}): Record<string, string> {
  return { ...kLegacy, 'mcp-session-id': session, ...headers };
}

async function echo(url: string, session: string, text: string, headers: Record<string, string> = {}): Promise<{ status: number; text: string }> {
  const res = await post(url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'echo', arguments: { text } } }, sessionHeaders(session, headers));
  if (res.status !== 200) return { status: res.status, text: res.body };
  const content = (last(res.body).result as { content?: Array<{ text?: string }> } | undefined)?.content;
  return { status: res.status, text: content?.[0]?.text ?? res.body };
}

async function modernTask(url: string, method: string, params: Record<string, unknown>): Promise<{ status: number; message: Record<string, unknown> }> {
  const meta = { ...modernMeta, 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } };
  const name = typeof params.name === 'string' ? params.name : String(params.taskId);
  const res = await post(url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }, modernHeaders(method, name));
  return { status: res.status, message: res.body.trim() === '' ? {} : last(res.body) };
}

describe('a node SIGKILLed mid-task', () => {
  it('its task fails on the surviving node within the bound, its sessions stay usable there, and every key left in Redis expires', { timeout: 45_000 }, async () => {
    const keyPrefix = prefix();
    const a = await startNodeProcess(redis.url, keyPrefix, 'A');
    onCleanup(() => a.kill());
    const b = await startNodeProcess(redis.url, keyPrefix, 'B');
    onCleanup(() => b.stop());

    // A legacy session made on A (and used there), and a long task running on A.
    const { status, session } = await initialize(a.url);
    expect(status).toBe(200);
    expect((await echo(a.url, session!, 'on A')).text).toBe('on A');
    const legacyTask = last((await post(a.url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'sleepy', arguments: { ms: 60_000 }, task: { ttl: 60_000 } } }, sessionHeaders(session!))).body);
    const legacyTaskId = String((legacyTask.result as { task: { taskId: string } }).task.taskId);
    const record = recordPath();
    const created = await modernTask(a.url, 'tools/call', { name: 'sleepy', arguments: { ms: 60_000, record } });
    expect(created.message.result, JSON.stringify(created)).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = String((created.message.result as { taskId: string }).taskId);
    await until(() => recorded(record).some((l) => l.startsWith('thread ')), 10_000, 'the task to start on A');
    expect((await modernTask(b.url, 'tasks/get', { taskId })).message.result).toMatchObject({ taskId, status: 'working' });

    await a.kill();
    const killedAt = Date.now();
    expect(a.child.signalCode).toBe('SIGKILL');

    // B reports the task failed within the bound (polled at the advertised pace: faster is a 429).
    let task: Record<string, unknown> = {};
    while (task.status !== 'failed') {
      if (Date.now() - killedAt > kFailedWithinMs) throw new Error(`the task was not failed within ${kFailedWithinMs} ms: ${JSON.stringify(task)}`);
      await new Promise((r) => setTimeout(r, 500));
      const got = await modernTask(b.url, 'tasks/get', { taskId });
      if (got.status === 200) task = got.message.result as Record<string, unknown>;
    }
    const failedAfterMs = Date.now() - killedAt;
    expect(task).toMatchObject({ status: 'failed', error: { code: -32603 } });
    // The legacy-dialect task of A's session failed with it, read through the session on B.
    const legacy = last((await post(b.url, { jsonrpc: '2.0', id: nextId++, method: 'tasks/get', params: { taskId: legacyTaskId } }, sessionHeaders(session!))).body);
    expect(legacy.result, JSON.stringify(legacy)).toMatchObject({ taskId: legacyTaskId, status: 'failed' });

    // A's session is served by B (B never saw it before A died).
    const onB = await echo(b.url, session!, 'on B after A died');
    expect(onB).toEqual({ status: 200, text: 'on B after A died' });
    const list = await post(b.url, { jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: {} }, sessionHeaders(session!));
    expect(list.status).toBe(200);

    // Nothing stays in Redis forever: with both nodes gone, every key under the prefix expires
    // (the list cursors' HMAC key excepted, as documented).
    await b.stop();
    const keys = await keysUnder(redis.url, keyPrefix);
    expect(keys).toEqual(expect.arrayContaining([`${keyPrefix}task:${taskId}`, `${keyPrefix}session:${session!}`]));
    expect(await keysWithoutTtl(redis.url, keyPrefix), `keys: ${keys.join(', ')}`).toEqual([]);
    console.info(`killed node's task failed on B after ${failedAfterMs} ms; ${keys.length} keys under the prefix, all expiring`);
  });
});

describe('Redis killed and restarted under two nodes', () => {
  /** Sent as a real client would; these tools have no authenticate hook, so scopes are sessions. */
  const kAlice = { 'x-api-key': 'key-a' };

  /** A block call of `session` on `at`, its record file, and its stream. */
  function blockCall(at: Node, session: string, id: string, ms: number): { record: string; stream: ReturnType<typeof openStream> } {
    const record = recordPath();
    const stream = openStream(at.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'block', arguments: { ms, tick: 20, record }, _meta: { progressToken: id } } }, sessionHeaders(session, kAlice));
    onCleanup(() => stream.close());
    return { record, stream };
  }

  async function cancelAcross(from: Node, to: Node, session: string, id: string): Promise<string> {
    const { record, stream } = blockCall(from, session, id, 20_000);
    await until(() => recorded(record).some((l) => l.startsWith('started ')), 10_000, `${id} to start`);
    const res = await post(to.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: `via ${to === from ? 'same' : 'other'} node` } }, sessionHeaders(session, kAlice));
    expect(res.status).toBe(202);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled ')), 5_000, `the cancel of ${id} to reach the tool (saw ${JSON.stringify(recorded(record))})`);
    await until(() => stream.ended, 5_000, `${id}'s stream to end`);
    expect(stream.events.some((e) => e.id === id)).toBe(false);
    return recorded(record).find((l) => l.startsWith('cancelled '))!;
  }

  it('what needs the other node fails visibly and is counted, local work goes on, and full service resumes after the restart', { timeout: 60_000 }, async () => {
    const keyPrefix = prefix();
    const [a, b] = await Promise.all(['A', 'B'].map((nodeId) => startNode(redis.url, { tools: new URL('./cluster-task-tools.mjs', import.meta.url), workers: 1, tasks: {} }, { keyPrefix, nodeId })));
    onCleanup(() => Promise.all([a!.close(), b!.close()]));

    // Before: a session made on A works on B, and a cancel POSTed to B reaches A's tool.
    const cached = (await initialize(a!.url, kAlice)).session!;
    expect((await echo(b!.url, cached, 'b', kAlice)).text).toBe('b');
    expect(await cancelAcross(a!, b!, cached, 'before')).toMatch(/reason=via other node$/);
    const unseen = (await initialize(a!.url, kAlice)).session!;
    const made = await modernTask(a!.url, 'tools/call', { name: 'sleepy', arguments: { ms: 100 } });
    expect(made.message.result, JSON.stringify(made)).toMatchObject({ resultType: 'task' });
    const taskId = String((made.message.result as { taskId: string }).taskId);
    const failuresBefore = await metric(b!, 'sluice_cluster_cross_node_failures_total');
    const lookupsBefore = await metric(b!, 'sluice_cluster_session_lookups_failed_total');

    await redis.kill();
    try {
      await until(async () => (await metric(a!, 'sluice_cluster_up')) === 0 && (await metric(b!, 'sluice_cluster_up')) === 0, 10_000, 'both nodes to see Redis gone');
      // Still ready: a shared Redis down must not empty the balancer; the body says the link is down.
      expect(await readyz(a!)).toEqual({ status: 200, text: 'ready, cluster link down' });

      // Alone, each node keeps serving: its cached session, the 2026-07-28 era, a cancel of its own.
      expect(await echo(a!.url, cached, 'still', kAlice)).toEqual({ status: 200, text: 'still' });
      expect(await echo(b!.url, cached, 'still on B', kAlice)).toEqual({ status: 200, text: 'still on B' });
      const modern = await post(b!.url, { jsonrpc: '2.0', id: nextId++, method: 'tools/call', params: { name: 'echo', arguments: { text: 'modern' }, _meta: modernMeta } }, modernHeaders('tools/call', 'echo'));
      expect(modern.status).toBe(200);
      expect(JSON.stringify(last(modern.body))).toContain('modern');
      expect(await cancelAcross(a!, a!, cached, 'local')).toMatch(/reason=via same node$/);

      // What needs the other node: a session B never saw is a 503 (not a 404), a new session is
      // refused (503), and a cancel for A's request POSTed to B cannot leave B: counted, and A's
      // tool keeps running (not silently lost: the client can see the call still streaming).
      const miss = await post(b!.url, { jsonrpc: '2.0', id: nextId++, method: 'tools/list', params: {} }, sessionHeaders(unseen, kAlice));
      expect(miss.status).toBe(503);
      expect(miss.headers['retry-after']).toBe('1');
      expect((await initialize(a!.url, kAlice)).status).toBe(503);
      expect(await metric(b!, 'sluice_cluster_session_lookups_failed_total')).toBeGreaterThan(lookupsBefore);
      // The task store lives in Redis: reading a task is an error, never a wrong answer.
      const task = await modernTask(b!.url, 'tasks/get', { taskId });
      expect(task.message.error, JSON.stringify(task)).toMatchObject({ code: -32603, message: expect.stringContaining('The task store is unavailable') });
      const created = await modernTask(a!.url, 'tools/call', { name: 'sleepy', arguments: { ms: 100 } });
      expect(created.message.error, JSON.stringify(created)).toMatchObject({ code: -32603 });
      const { record, stream } = blockCall(a!, cached, 'stranded', 20_000);
      await until(() => recorded(record).some((l) => l.startsWith('started ')), 10_000, 'the stranded call to start');
      expect((await post(b!.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'stranded' } }, sessionHeaders(cached, kAlice))).status).toBe(202);
      await until(async () => (await metric(b!, 'sluice_cluster_cross_node_failures_total')) > failuresBefore, 5_000, 'the failed cross-node cancel to be counted');
      await new Promise((r) => setTimeout(r, 300));
      expect(recorded(record).some((l) => l.startsWith('cancelled '))).toBe(false);
      expect(stream.ended).toBe(false);
      // Cancelled where it runs, it ends.
      expect((await post(a!.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'stranded' } }, sessionHeaders(cached, kAlice))).status).toBe(202);
      await until(() => stream.ended, 5_000, 'the stranded call to end');
    } finally {
      await redis.restart();
    }

    // Back: both nodes reconnect on their own (no restart), and everything crosses again.
    await until(async () => (await readyz(a!)).text === 'ready' && (await readyz(b!)).text === 'ready', 20_000, 'both nodes\' links up again');
    let fresh = '';
    await until(async () => {
      const r = await initialize(a!.url, kAlice);
      fresh = r.session ?? '';
      return r.status === 200;
    }, 10_000, 'initialize to work again');
    expect(await echo(b!.url, fresh, 'after restart', kAlice)).toEqual({ status: 200, text: 'after restart' });
    expect(await cancelAcross(a!, b!, fresh, 'after')).toMatch(/reason=via other node$/);
    const again = await modernTask(a!.url, 'tools/call', { name: 'sleepy', arguments: { ms: 100 } });
    expect(again.message.result, JSON.stringify(again)).toMatchObject({ resultType: 'task' });
    const againId = String((again.message.result as { taskId: string }).taskId);
    expect((await modernTask(b!.url, 'tasks/get', { taskId: againId })).message.result).toMatchObject({ taskId: againId });
    expect(await metric(a!, 'sluice_cluster_up')).toBe(1);
  });
});
