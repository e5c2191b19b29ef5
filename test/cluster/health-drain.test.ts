// /healthz and /readyz (outside the endpoint's rules), and the drain at shutdown: /readyz turns 503
// first, initialize is still served (a cluster session is valid on every node), running requests finish within the grace,
// other requests are still served meanwhile (cluster mode keeps the listener open while draining).
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { legacyHeaders, openStream, readyz, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

let redis: RedisInstance | undefined;
let node: Node | undefined;
let other: Node | undefined;
afterEach(async () => {
  await node?.close();
  node = undefined;
  await other?.close();
  other = undefined;
  await redis?.stop();
  redis = undefined;
});

const kInit = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

describe('health endpoints', () => {
  it('/healthz and /readyz answer without Origin, Host or auth checks; other GETs keep the rules', async () => {
    node = await startNode(undefined);
    for (const headers of [{}, { origin: 'https://evil.example' }, { host: 'rebound.example' }]) {
      const health = await fetch(`${node.base}/healthz`, { headers });
      expect([health.status, await health.text()]).toEqual([200, 'ok']);
      const ready = await fetch(`${node.base}/readyz`, { headers });
      expect([ready.status, await ready.text()]).toEqual([200, 'ready']);
    }
    expect((await fetch(`${node.base}/metrics`, { headers: { origin: 'https://evil.example' } })).status).toBe(403);
    // Without cluster mode /metrics has no cluster series.
    expect(await (await fetch(`${node.base}/metrics`)).text()).not.toContain('sluice_cluster_');
  });
});

describe('drain at shutdown (cluster mode)', () => {
  it('readyz 503 first; initialize still served (the session lives in Redis, valid on every node); open sessions and running calls served through the grace', async () => {
    redis = await startRedis();
    node = await startNode(redis.url, { shutdownGraceMs: 5_000 });
    other = await startNode(redis.url);
    const running = node;
    const init = await post(running.url, kInit);
    const session = String(init.headers['mcp-session-id']);
    const sessionHeaders = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    // The drain ends once nothing runs here, so this call keeps the node serving while the test asks
    // (a CI run under Node 24 took over 1 s for the requests below, and its echo met a closed port).
    const call = openStream(running.url, { jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'block', arguments: { ms: 2_500 }, _meta: { progressToken: 'p' } } }, sessionHeaders);
    await until(() => call.events.length > 0, 10_000, 'the call to stream');
    const closing = running.server.close();
    await until(async () => (await readyz(running)).status === 503, 2_000, '/readyz to say draining');
    expect(await readyz(running)).toEqual({ status: 503, text: 'draining' });
    expect((await fetch(`${running.base}/healthz`)).status).toBe(200);
    // A session opened on the draining node is a cluster session: the other node serves it.
    const late = await post(running.url, kInit);
    expect(late.status).toBe(200);
    const lateHeaders = { 'mcp-session-id': String(late.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
    const elsewhere = await post(other.url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'opened while draining' } } }, lateHeaders);
    expect(elsewhere.status).toBe(200);
    expect(elsewhere.body).toContain('opened while draining');
    // The open session is still served.
    const echo = await post(running.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } }, sessionHeaders);
    expect(echo.status).toBe(200);
    expect(echo.body).toContain('still here');
    await closing;
    node = undefined;
    await until(() => call.ended, 5_000, 'the call to end');
    // The running call finished within the grace: it got its response.
    expect(JSON.stringify(call.events.find((e) => e.id === 'slow'))).toContain('finished');
  });

  it('without cluster mode shutdown is as before: the listener closes at once, the running call still finishes', async () => {
    node = await startNode(undefined, { shutdownGraceMs: 2_000, sessions: false });
    const running = node;
    const call = openStream(running.url, { jsonrpc: '2.0', id: 'slow', method: 'tools/call', params: { name: 'block', arguments: { ms: 800 }, _meta: { progressToken: 'p' } } }, legacyHeaders('key-a'));
    await until(() => call.events.length > 0, 10_000, 'the call to stream');
    const closing = running.server.close();
    await closing;
    node = undefined;
    await until(() => call.ended, 5_000, 'the call to end');
    expect(JSON.stringify(call.events.find((e) => e.id === 'slow'))).toContain('finished');
  });
});
