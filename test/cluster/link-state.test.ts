// The cluster link against a real redis-server: up at start, down when Redis dies (one warn line,
// /readyz 503, metrics), up again when it returns (one info line) without a restart; Redis down at
// start is `cluster_unavailable`, unless startDegraded (then /readyz says 503 until Redis comes).
import { afterEach, describe, expect, it } from 'vitest';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { reconnectDelay } from '../../src/cluster/link.js';
import { metric, readyz, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

let redis: RedisInstance | undefined;
const nodes: Node[] = [];
afterEach(async () => {
  await Promise.all(nodes.splice(0).map((n) => n.close()));
  await redis?.stop();
  redis = undefined;
});

describe('cluster link', () => {
  it('goes down and comes back with Redis: one log line and one count per change, /readyz stays 200 and says it', async () => {
    redis = await startRedis();
    const node = await startNode(redis.url);
    nodes.push(node);
    expect(await readyz(node)).toEqual({ status: 200, text: 'ready' });
    expect(await metric(node, 'sluice_cluster_up')).toBe(1);
    expect(await metric(node, 'sluice_cluster_link_changes_total')).toBe(1);
    expect(node.logs.filter((l) => l.includes('cluster link')).map((l) => l.split(' ')[0])).toEqual(['info']);

    await redis.kill();
    // Still ready (Redis is shared: every node would turn unready at once); the body says why.
    await until(async () => (await readyz(node)).text === 'ready, cluster link down', 10_000, '/readyz to say the link is down');
    expect((await readyz(node)).status).toBe(200);
    expect(await metric(node, 'sluice_cluster_up')).toBe(0);
    // Node-local service goes on: a tool call is served.
    const served = await fetch(node.url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' }, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'alone' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } }) });
    expect(served.status).toBe(200);
    // A list change published while down is dropped and counted, not queued.
    node.server.notifyListChanged('tools');
    expect(await metric(node, 'sluice_cluster_messages_dropped_total')).toBe(1);
    await new Promise((r) => setTimeout(r, 1_000)); // several reconnect attempts: still one line
    expect(node.logs.filter((l) => l.includes('cluster link')).map((l) => l.split(' ')[0])).toEqual(['info', 'warn']);

    await redis.restart();
    await until(async () => (await readyz(node)).text === 'ready', 10_000, '/readyz to say ready again');
    expect(await metric(node, 'sluice_cluster_up')).toBe(1);
    expect(await metric(node, 'sluice_cluster_link_changes_total')).toBe(3);
    expect(node.logs.filter((l) => l.includes('cluster link')).map((l) => l.split(' ')[0])).toEqual(['info', 'warn', 'info']);
  });

  it('Redis unreachable at start: listen() rejects with cluster_unavailable', async () => {
    redis = await startRedis();
    const url = redis.url;
    await redis.kill();
    await expect(startNode(url)).rejects.toMatchObject({ code: 'cluster_unavailable' });
  });

  it('startDegraded: starts without Redis, /readyz 200 saying the link is down until Redis comes', async () => {
    redis = await startRedis();
    await redis.kill();
    const node = await startNode(redis.url, {}, { startDegraded: true });
    nodes.push(node);
    expect(await readyz(node)).toEqual({ status: 200, text: 'ready, cluster link down' });
    expect((await fetch(`${node.base}/healthz`)).status).toBe(200);
    expect(node.logs.some((l) => l.startsWith('warn') && l.includes('started degraded'))).toBe(true);
    await redis.restart();
    await until(async () => (await readyz(node)).text === 'ready', 10_000, 'the link to come up');
    expect(await metric(node, 'sluice_cluster_up')).toBe(1);
  });

  it('backs off 50 ms doubling to a 2 s cap, jittered to 50–100 %', () => {
    expect(reconnectDelay(1, () => 1)).toBe(50);
    expect(reconnectDelay(3, () => 1)).toBe(200);
    expect(reconnectDelay(50, () => 1)).toBe(2_000);
    expect(reconnectDelay(50, () => 0)).toBe(1_000);
  });
});
