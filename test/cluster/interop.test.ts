// The official SDK clients against a two-node cluster (one real redis-server) behind a round-robin
// HTTP proxy written for the test (cross-node-helpers.ts: each request to the next node, bodies
// streamed both ways, a client's disconnect closing the node's connection):
//  - SDK v1 (@modelcontextprotocol/sdk, legacy era, sessions): lists tools, calls one, and aborts a
//    long call; its notifications/cancelled lands on the other node and the tool still sees it;
//  - SDK v2 (@modelcontextprotocol/client, 2026-07-28): lists and calls, and an aborted call's
//    disconnect, passed on by the proxy, cancels the tool on the node that runs it.
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpTransportV2 } from '@modelcontextprotocol/client';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { recordPath, recorded } from '../helpers/server.js';
import { roundRobinProxy, startNode, until } from './cross-node-helpers.js';
import type { Node, ProxiedRequest, RoundRobinProxy } from './cross-node-helpers.js';

const kTools = new URL('./cluster-task-tools.mjs', import.meta.url);
const kTimeout = 30_000;
const kCallTimeout = 10_000;

const onCleanup = cleanupAfterEach();
let redis: RedisInstance;
beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

/** Two nodes on a fresh prefix behind a round-robin proxy; all closed after the test. */
async function balanced(): Promise<{ a: Node; b: Node; proxy: RoundRobinProxy }> {
  const keyPrefix = `t${randomBytes(4).toString('hex')}:`;
  const [a, b] = await Promise.all(['A', 'B'].map((nodeId) => startNode(redis.url, { tools: kTools, workers: 1 }, { keyPrefix, nodeId })));
  onCleanup(() => Promise.all([a!.close(), b!.close()]));
  const proxy = await roundRobinProxy([a!.url, b!.url]);
  onCleanup(() => proxy.close());
  return { a: a!, b: b!, proxy };
}

function text(result: unknown): string | undefined {
  return (result as { content?: Array<{ type: string; text?: string }> }).content?.find((c) => c.type === 'text')?.text;
}

/** The proxied POST whose JSON-RPC body has `method` (and `match` in its text), latest first. */
function proxied(proxy: RoundRobinProxy, method: string, match = ''): ProxiedRequest | undefined {
  return proxy.requests.findLast((r) => r.method === 'POST' && r.body.includes(`"method":"${method}"`) && r.body.includes(match));
}

/** Starts a long `block` call, aborts it once the tool runs, and returns the tool's cancel line. */
async function abortBlock(call: (record: string, signal: AbortSignal) => Promise<unknown>, reason: string): Promise<{ record: string; line: string; settled: string }> {
  const record = recordPath();
  const controller = new AbortController();
  let settled = 'pending';
  const promise = call(record, controller.signal).then(() => { settled = 'resolved'; }, () => { settled = 'rejected'; });
  await until(() => recorded(record).some((l) => l.startsWith('started ')) || settled !== 'pending', 10_000, 'the block tool to start');
  expect(settled).toBe('pending');
  controller.abort(reason);
  await promise;
  await until(() => recorded(record).some((l) => l.startsWith('cancelled ')), 5_000, `the tool to see the cancel (saw ${JSON.stringify(recorded(record))})`);
  return { record, line: recorded(record).find((l) => l.startsWith('cancelled '))!, settled };
}

describe('SDK v1 (legacy, sessions) through the round-robin proxy', () => {
  it('lists tools, calls one, and an aborted call is cancelled in the tool even when its cancel lands on the other node', { timeout: kTimeout }, async () => {
    const { a, b, proxy } = await balanced();
    const transport = new HttpTransportV1(new URL(proxy.url));
    const client = new ClientV1({ name: 'sluice-cluster-interop-v1', version: '1.0.0' });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: kCallTimeout });
    expect(transport.sessionId).toMatch(/^[0-9a-f]{32}$/);

    const { tools } = await client.listTools(undefined, { timeout: kCallTimeout });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'block', 'pool_spin', 'sleepy']));
    const echoed = await client.callTool({ name: 'echo', arguments: { text: 'through the proxy' } }, undefined, { timeout: kCallTimeout });
    expect(echoed.content).toEqual([{ type: 'text', text: 'through the proxy' }]);

    // Abort long calls until one's notifications/cancelled went to the other node than its call
    // (the balancer alternates, so that is at most a couple of tries); each must be cancelled.
    const ports = new Set<number>();
    for (let attempt = 1; ; attempt++) {
      const out = await abortBlock(
        (record, signal) => client.callTool({ name: 'block', arguments: { ms: 15_000, tick: 20, record } }, undefined, { signal, timeout: 20_000 }),
        `v1 abort ${attempt}`,
      );
      expect(out.line).toMatch(new RegExp(`^cancelled thread=\\d+ reason=v1 abort ${attempt}$`));
      expect(out.settled).toBe('rejected');
      const call = proxied(proxy, 'tools/call', out.record)!;
      let cancel: ProxiedRequest | undefined;
      await until(() => (cancel = proxied(proxy, 'notifications/cancelled', `v1 abort ${attempt}`)) !== undefined, 5_000, 'the cancel through the proxy');
      ports.add(call.port);
      if (cancel!.port !== call.port) break;
      if (attempt >= 4) throw new Error(`no cancel landed on the other node in 4 tries: ${proxy.served.join(', ')}`);
    }
    // The session still works on both nodes after the cancels.
    for (let i = 0; i < 2; i++) {
      expect(text(await client.callTool({ name: 'echo', arguments: { text: `after ${i}` } }, undefined, { timeout: kCallTimeout }))).toBe(`after ${i}`);
    }
    expect(new Set(proxy.requests.map((r) => r.port))).toEqual(new Set([new URL(a.url).port, new URL(b.url).port].map(Number)));
    await transport.terminateSession();
  });
});

describe('SDK v2 (2026-07-28) through the round-robin proxy', () => {
  async function connect(proxy: RoundRobinProxy): Promise<ClientV2> {
    const transport = new HttpTransportV2(new URL(proxy.url));
    const client = new ClientV2({ name: 'sluice-cluster-interop-v2', version: '2.0.0' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: kCallTimeout });
    expect(client.getProtocolEra()).toBe('modern');
    return client;
  }

  it('lists tools and calls one on both nodes', { timeout: kTimeout }, async () => {
    const { proxy } = await balanced();
    const client = await connect(proxy);
    const { tools } = await client.listTools(undefined, { timeout: kCallTimeout });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'block']));
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'echo', arguments: { text: `v2 ${i}` } }, { timeout: kCallTimeout });
      expect(text(result)).toBe(`v2 ${i}`);
    }
    const calls = proxy.requests.filter((r) => r.body.includes('"method":"tools/call"'));
    expect(new Set(calls.map((r) => r.port)).size).toBe(2);
  });

  it('an aborted call disconnects through the proxy, and the node running the tool cancels it', { timeout: kTimeout }, async () => {
    const { proxy } = await balanced();
    const client = await connect(proxy);
    const out = await abortBlock((record, signal) => client.callTool({ name: 'block', arguments: { ms: 15_000, tick: 20, record } }, { signal, timeout: 20_000 }), 'v2 abort');
    expect(out.settled).toBe('rejected');
    expect(out.line).toMatch(/^cancelled thread=\d+ reason=client disconnected$/);
    expect(recorded(out.record).some((l) => l.startsWith('finished '))).toBe(false);
  });
});
