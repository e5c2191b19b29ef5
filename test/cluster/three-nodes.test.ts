// Three Sluice nodes (A, B, C: each its own supervisor, one HTTP worker, one pool thread, its own
// port) on one real redis-server, and one client whose consecutive requests are spread over them
// as a round-robin balancer would: a legacy call on A cancelled on C; a list change on A heard by a
// listen stream on B; an MRTR round 1 on A and round 2 on B; a task created on A, read on B,
// cancelled on C; a legacy-dialect task created on A and its result fetched on B.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { recordPath, recorded } from '../helpers/server.js';
import { modernHeaders, modernMeta, openStream, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

const kTools = new URL('./cluster-task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';
const kLegacy = { 'mcp-protocol-version': '2025-11-25' };
/** The requestState key ring every node of a test's cluster is given. */
const kRing = [randomBytes(32)];
const kTimeout = 30_000;

const onCleanup = cleanupAfterEach();
let redis: RedisInstance;
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

/** A cluster of nodes named `ids` under a fresh key prefix (`ring` null: each node its own random key); closed after the test. */
async function cluster(ids: readonly string[], ring: readonly Uint8Array[] | null = kRing): Promise<Node[]> {
  const keyPrefix = `t${randomBytes(4).toString('hex')}:`;
  const nodes = await Promise.all(ids.map((nodeId) => startNode(redis.url, {
    tools: kTools, workers: 1, poolThreads: 1, tasks: {}, ...(ring === null ? {} : { requestStateKeys: ring }),
  }, { keyPrefix, nodeId })));
  onCleanup(() => Promise.all(nodes.map((n) => n.close())));
  return nodes;
}

interface Rpc { status: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }

/** The last JSON-RPC message of a body (JSON or SSE). */
function last(body: string): Record<string, unknown> {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, unknown>;
  const data = trimmed.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  if (data.length === 0) throw new Error(`no JSON-RPC message in ${JSON.stringify(body)}`);
  return JSON.parse(data[data.length - 1]!) as Record<string, unknown>;
}

let nextId = 1;
/** One 2026-07-28 request; `optIn` puts the tasks extension in its _meta capabilities. */
async function modern(node: Node, method: string, params: Record<string, unknown>, optIn = false): Promise<Rpc> {
  const meta = { ...modernMeta, 'io.modelcontextprotocol/clientCapabilities': optIn ? { extensions: { [kExt]: {} } } : {} };
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
  const res = await post(node.url, { jsonrpc: '2.0', id: nextId++, method, params: { ...params, _meta: meta } }, modernHeaders(method, name));
  return { status: res.status, ...last(res.body) };
}

/** A legacy session, its requests sent to whichever node the caller names. */
class Session {
  id = '';
  async open(at: Node): Promise<this> {
    const res = await post(at.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, kLegacy);
    expect(res.status, res.body).toBe(200);
    this.id = String(res.headers['mcp-session-id']);
    expect(this.id).toMatch(/^[0-9a-f]{32}$/);
    return this;
  }

  get headers(): Record<string, string> {
    return { ...kLegacy, 'mcp-session-id': this.id };
  }

  async call(at: Node, method: string, params: Record<string, unknown> = {}): Promise<Rpc> {
    const res = await post(at.url, { jsonrpc: '2.0', id: nextId++, method, params }, this.headers);
    return { status: res.status, ...last(res.body) };
  }
}

describe('three nodes, one client, requests spread round robin', () => {
  it('legacy: initialize on A, a pool tool called on A, notifications/cancelled POSTed to C: the pool thread on A sees it, and no response is sent', { timeout: kTimeout }, async () => {
    const [a, , c] = await cluster(['A', 'B', 'C']);
    const session = await new Session().open(a!);
    const record = recordPath();
    const call = openStream(a!.url, { jsonrpc: '2.0', id: 'spin-1', method: 'tools/call', params: { name: 'pool_spin', arguments: { ms: 20_000, record }, _meta: { progressToken: 'p' } } }, session.headers);
    onCleanup(() => call.close());
    await until(() => recorded(record).some((l) => l.startsWith('thread ')), 10_000, 'the pool tool to start on A');
    const cancel = await post(c!.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'spin-1', reason: 'from C' } }, session.headers);
    expect(cancel.status, cancel.body).toBe(202);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled ')), 5_000, `the pool thread on A to see the cancel (saw ${JSON.stringify(recorded(record))})`);
    await until(() => call.ended, 5_000, 'the call\'s stream to end');
    // A cancelled legacy request gets no response.
    expect(call.events.filter((e) => e.id === 'spin-1')).toEqual([]);
  });

  it('a subscriptions/listen stream on B hears the tools list change made by a tool on A, and by A\'s API', { timeout: kTimeout }, async () => {
    const [a, b] = await cluster(['A', 'B', 'C']);
    const listen = openStream(b!.url, { jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: modernMeta } }, modernHeaders('subscriptions/listen'));
    onCleanup(() => listen.close());
    await until(() => listen.events.length > 0, 10_000, 'the listen acknowledgement on B');
    const changes = () => listen.events.filter((e) => e.method === 'notifications/tools/list_changed').length;
    expect(changes()).toBe(0);
    const changed = await modern(a!, 'tools/call', { name: 'change_tools', arguments: {} });
    expect(changed.result, JSON.stringify(changed)).toMatchObject({ content: [{ type: 'text', text: 'changed' }] });
    await until(() => changes() === 1, 5_000, 'the tool\'s list change on B');
    a!.server.notifyListChanged('tools');
    await until(() => changes() === 2, 5_000, 'the API\'s list change on B');
    expect(listen.ended).toBe(false);
  });

  it('MRTR: round 1 on A, round 2 on B with the shared key ring succeeds; a node without the ring refuses the state (-32602)', { timeout: kTimeout }, async () => {
    const [a, b] = await cluster(['A', 'B', 'C']);
    const round1 = await modern(a!, 'tools/call', { name: 'later_ask', arguments: {} });
    expect(round1.result, JSON.stringify(round1)).toMatchObject({ resultType: 'input_required' });
    const requestState = round1.result!.requestState;
    expect(typeof requestState).toBe('string');
    const inputResponses = { color: { action: 'accept', content: { c: 'teal' } } };
    const round2 = await modern(b!, 'tools/call', { name: 'later_ask', arguments: {}, inputResponses, requestState });
    expect(round2.result, JSON.stringify(round2)).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'color teal after round 1' }] });

    // Nodes of another cluster on the same Redis, given no ring: each seals with its own random key,
    // so B2 refuses what A2 sealed.
    const [a2, b2] = await cluster(['A2', 'B2'], null);
    const first = await modern(a2!, 'tools/call', { name: 'later_ask', arguments: {} });
    expect(first.result).toMatchObject({ resultType: 'input_required' });
    const refused = await modern(b2!, 'tools/call', { name: 'later_ask', arguments: {}, inputResponses, requestState: first.result!.requestState });
    expect(refused.error?.code, JSON.stringify(refused)).toBe(-32602);
    // And A2 itself still accepts its own state.
    const own = await modern(a2!, 'tools/call', { name: 'later_ask', arguments: {}, inputResponses, requestState: first.result!.requestState });
    expect(own.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'color teal after round 1' }] });
  });

  it('2026-07-28 task: created on A, read on B, cancelled on C; the tool on A sees the cancel and B reads it cancelled', { timeout: kTimeout }, async () => {
    const [a, b, c] = await cluster(['A', 'B', 'C']);
    const record = recordPath();
    const created = await modern(a!, 'tools/call', { name: 'sleepy', arguments: { ms: 20_000, record } }, true);
    expect(created.result, JSON.stringify(created)).toMatchObject({ resultType: 'task', status: 'working' });
    const taskId = String(created.result!.taskId);
    const onB = await modern(b!, 'tasks/get', { taskId }, true);
    expect(onB.result, JSON.stringify(onB)).toMatchObject({ taskId, status: 'working' });
    await until(() => recorded(record).some((l) => l.startsWith('thread ')), 10_000, 'the tool to start on A');
    const cancelled = await modern(c!, 'tasks/cancel', { taskId }, true);
    expect(cancelled.result, JSON.stringify(cancelled)).toMatchObject({ resultType: 'complete' });
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5_000, `the tool on A to see the cancel (saw ${JSON.stringify(recorded(record))})`);
    let status: unknown;
    for (let i = 0; i < 50 && status !== 'cancelled'; i++) {
      if (i > 0) await new Promise((r) => setTimeout(r, 100));
      status = (await modern(b!, 'tasks/get', { taskId }, true)).result?.status;
    }
    expect(status).toBe('cancelled');
  });

  it('2025-11-25 task (params.task) in a session: created on A, tasks/result on B returns the tool\'s result', { timeout: kTimeout }, async () => {
    const [a, b, c] = await cluster(['A', 'B', 'C']);
    const session = await new Session().open(a!);
    const created = await session.call(a!, 'tools/call', { name: 'sleepy', arguments: { ms: 300 }, task: { ttl: 60_000 } });
    const task = (created.result as { task?: Record<string, unknown> } | undefined)?.task;
    expect(task, JSON.stringify(created)).toMatchObject({ status: 'working' });
    const taskId = String(task!.taskId);
    expect((await session.call(c!, 'tasks/get', { taskId })).result).toMatchObject({ taskId });
    const result = await session.call(b!, 'tasks/result', { taskId });
    expect(result.result, JSON.stringify(result)).toMatchObject({ content: [{ type: 'text', text: 'slept 300' }], _meta: { 'io.modelcontextprotocol/related-task': { taskId } } });
    expect((await session.call(c!, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });
  });
});
