// Two Sluice nodes (each its own supervisor and two HTTP workers) on one real redis-server: a
// legacy cancel sent to B reaches the tool running on A (same principal scope), another scope's
// thousand cancels cancel nothing and are rate-bounded, a session-scoped cancel that misses goes on
// the bus, an answer to A's server→client request POSTed to B reaches A, a list change on A reaches
// a listen stream on B.
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { decodeMessage } from '../../src/cluster/codec.js';
import type { BusMessage } from '../../src/cluster/codec.js';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { legacyHeaders, metric, modernHeaders, modernMeta, openStream, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

let redis: RedisInstance;
let a: Node;
let b: Node;
/** Sessions on: for the session-scoped cancel. */
let c: Node;
let watcher: Redis;
const bus: BusMessage[] = [];

beforeAll(async () => {
  redis = await startRedis();
  a = await startNode(redis.url, { sessions: false }, { nodeId: 'A' });
  b = await startNode(redis.url, { sessions: false }, { nodeId: 'B' });
  c = await startNode(redis.url, {}, { nodeId: 'C' });
  // A plain subscriber watching the bus: what the nodes tell each other.
  watcher = new Redis(redis.url);
  await watcher.subscribe('test:bus');
  watcher.on('messageBuffer', (_channel: Buffer, payload: Buffer) => { const m = decodeMessage(payload); if (m !== undefined) bus.push(m); });
});

afterAll(async () => {
  watcher?.disconnect();
  await Promise.all([a?.close(), b?.close(), c?.close()]);
  await redis?.stop();
});

describe('across nodes', () => {
  it('a legacy cancel sent to node B stops the tool running on node A (same principal)', async () => {
    const call = openStream(a.url, { jsonrpc: '2.0', id: 'long-1', method: 'tools/call', params: { name: 'block', arguments: { ms: 20_000 }, _meta: { progressToken: 'p' } } }, legacyHeaders('key-a'));
    await until(() => call.events.length > 0, 10_000, 'the call to stream');
    expect(a.server.registry.inFlight('long-1', 'principal:alice')).toBe(true);
    const sent = performance.now();
    const res = await post(b.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'long-1', reason: 'from B' } }, legacyHeaders('key-a'));
    expect(res.status).toBe(202);
    await until(() => !a.server.registry.inFlight('long-1', 'principal:alice'), 5_000, 'the cancel to reach A');
    const observedMs = performance.now() - sent;
    await until(() => call.ended, 5_000, 'the stream to end');
    // A cancelled legacy request sends no response.
    expect(call.events.some((e) => e.id === 'long-1')).toBe(false);
    expect(observedMs).toBeLessThan(1_000);
    expect(bus.some((m) => m.k === 'c' && m.f === 'B' && m.i === 'long-1' && m.s === 'principal:alice')).toBe(true);
  });

  it('another scope\'s 1000 cancels cancel nothing, and at most 100 a second leave the node', async () => {
    const call = openStream(a.url, { jsonrpc: '2.0', id: 'victim', method: 'tools/call', params: { name: 'block', arguments: { ms: 20_000 }, _meta: { progressToken: 'p' } } }, legacyHeaders('key-a'));
    await until(() => call.events.length > 0, 10_000, 'the call to stream');
    const before = bus.length;
    const limitedBefore = await metric(b, 'sluice_cluster_cancels_limited_total');
    const started = Date.now();
    for (let batch = 0; batch < 10; batch++) {
      await Promise.all(Array.from({ length: 100 }, (_, i) => post(b.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: i === 0 ? 'victim' : `guess-${batch}-${i}` } }, legacyHeaders('key-b'))));
    }
    const seconds = (Date.now() - started) / 1000;
    await new Promise((r) => setTimeout(r, 300));
    expect(a.server.registry.inFlight('victim', 'principal:alice')).toBe(true);
    const published = bus.slice(before).filter((m) => m.k === 'c' && m.s === 'principal:bob').length;
    expect(published).toBeLessThanOrEqual(100 + Math.ceil(seconds * 100));
    expect(published + (await metric(b, 'sluice_cluster_cancels_limited_total')) - limitedBefore).toBe(1000);
    call.close();
  });

  it('a session-scoped cancel that misses locally goes to the other nodes with its session scope', async () => {
    const init = await post(c.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    const session = String(init.headers['mcp-session-id']);
    await post(c.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7 } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    await until(() => bus.some((m) => m.k === 'c' && m.s === `session:${session}` && m.i === 7), 5_000, 'the cancel on the bus');
  });

  it('the answer to node A\'s server→client request, POSTed to node B, reaches A', async () => {
    const call = openStream(a.url, { jsonrpc: '2.0', id: 'ask-1', method: 'tools/call', params: { name: 'ask_ping', arguments: {} } }, legacyHeaders('key-a'));
    await until(() => call.events.some((e) => e.method === 'ping'), 10_000, 'the server\'s request');
    const asked = call.events.find((e) => e.method === 'ping')!;
    // The id names the node: s<nodeId>.<threadId>-<n>.
    expect(String(asked.id)).toMatch(/^sA\.\d+-\d+$/);
    // Another principal's answer through B is relayed but refused by A's scope check.
    expect((await post(b.url, { jsonrpc: '2.0', id: asked.id, result: { from: 'bob' } }, legacyHeaders('key-b'))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 200));
    expect(call.ended).toBe(false);
    expect((await post(b.url, { jsonrpc: '2.0', id: asked.id, result: { from: 'alice' } }, legacyHeaders('key-a'))).status).toBe(202);
    await until(() => call.ended, 5_000, 'the call to finish');
    const final = call.events.find((e) => e.id === 'ask-1') as { result: { structuredContent?: unknown; content: { text: string }[] } };
    expect(JSON.stringify(final.result)).toContain('alice');
    expect(JSON.stringify(final.result)).not.toContain('bob');
    expect(bus.some((m) => m.k === 'a' && m.n === 'A' && m.f === 'B')).toBe(true);
  });

  it('a list change on node A reaches a subscriptions/listen stream on node B', async () => {
    const listen = openStream(b.url, { jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: modernMeta } }, modernHeaders('subscriptions/listen'));
    await until(() => listen.events.length > 0, 10_000, 'the acknowledgement');
    // From a tool on A (a worker → A's supervisor → the bus → B's supervisor → B's workers) and from A's API.
    await post(a.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'change_tools', arguments: {}, _meta: modernMeta } }, modernHeaders('tools/call', 'change_tools'));
    a.server.notifyListChanged('tools');
    await until(() => listen.events.filter((e) => e.method === 'notifications/tools/list_changed').length === 2, 5_000, 'two list changes on B');
    listen.close();
    expect(await metric(b, 'sluice_cluster_messages_received_total')).toBeGreaterThan(0);
  });
});
