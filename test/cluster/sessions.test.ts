// Cluster mode, legacy sessions: two Sluice nodes (each its own supervisor and HTTP workers, on its
// own port) sharing one real redis-server. A session created on one node is valid on the other,
// bound to its principal, ended everywhere by DELETE, expiring everywhere when idle; Redis lost:
// cached sessions keep working, what needs Redis is a 503 (never a 404).
// Each node is started with the `cluster` option (its own link to the test's redis-server).
import { Agent, request as httpRequest } from 'node:http';
import { randomBytes } from 'node:crypto';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { createServer } from '../../src/index.js';
import type { Server, ServerOptions, Tool } from '../../src/index.js';
import { defineTool } from '../../src/index.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { agentOnOtherWorker, post as postOn } from '../helpers/http.js';
import { kAccept, recordPath, recorded } from '../helpers/server.js';
import { roundRobinProxy } from './cross-node-helpers.js';

const kTools = new URL('../fixtures/adapters-auth-tools.mjs', import.meta.url);
const kAlice = { 'x-api-key': 'key-a' };
const kBob = { 'x-api-key': 'key-b' };
const kTimeout = 30_000;

const onCleanup = cleanupAfterEach();
let redis: RedisInstance;

beforeAll(async () => { redis = await startRedis(); });
afterAll(async () => { await redis?.stop(); });

interface Node {
  server: Server;
  url: string;
  base: string;
  logs: string[];
  connection: Redis;
}

function connection(): Redis {
  const r = new Redis(redis.url, { maxRetriesPerRequest: 1 });
  r.on('error', () => {});
  return r;
}

/** One Sluice node in cluster mode (its own Redis connection, as the link would give it). */
async function node(name: string, prefix: string, options: Partial<ServerOptions> = {}): Promise<Node> {
  const conn = connection();
  const logs: string[] = [];
  const server = createServer({
    tools: kTools, port: 0, workers: 2, exposeWorker: true, janitor: false, metrics: true, shutdownGraceMs: 200,
    cluster: { redis: redis.url, keyPrefix: prefix, nodeId: name }, ...options,
  }, {
    log: (level, message) => { logs.push(`${level} ${message}`); },
    clusterSessionRevalidateMs: 500,
  });
  onCleanup(async () => {
    try {
      await server.close();
    } finally {
      conn.disconnect();
    }
  });
  const address = await server.listen();
  return { server, url: address.url, base: address.url.replace(/\/mcp$/, ''), logs, connection: conn };
}

async function pair(options: Partial<ServerOptions> = {}): Promise<{ a: Node; b: Node; prefix: string }> {
  const prefix = `t${randomBytes(4).toString('hex')}:`;
  const [a, b] = await Promise.all([node('A', prefix, options), node('B', prefix, options)]);
  return { a, b, prefix };
}

interface Reply {
  status: number;
  headers: Headers;
  text: string;
  /** JSON-RPC messages of the body (JSON, or the data lines of an SSE stream). */
  messages: Array<Record<string, unknown>>;
}

async function post(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: kAccept, ...headers },
    body: JSON.stringify(body),
    signal: AbortSignal.timeout(10_000),
  });
  const text = await res.text();
  return { status: res.status, headers: res.headers, text, messages: parseMessages(text) };
}

function parseMessages(text: string): Array<Record<string, unknown>> {
  if (text === '') return [];
  if (text.startsWith('{')) return [JSON.parse(text) as Record<string, unknown>];
  return text.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
}

let nextId = 1;
function call(url: string, session: string, method: string, params: Record<string, unknown> = {}, headers: Record<string, string> = kAlice): Promise<Reply> {
  return post(url, { jsonrpc: '2.0', id: nextId++, method, params }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', ...headers });
}

async function initialize(url: string, headers: Record<string, string> = kAlice, capabilities: Record<string, unknown> = {}): Promise<string> {
  const r = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 't', version: '1' } } }, headers);
  expect(r.status, r.text).toBe(200);
  const id = r.headers.get('mcp-session-id');
  expect(id).toMatch(/^[0-9a-f]{32}$/);
  return id!;
}

async function end(url: string, session: string, headers: Record<string, string> = kAlice): Promise<number> {
  const res = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, ...headers }, signal: AbortSignal.timeout(10_000) });
  await res.arrayBuffer();
  return res.status;
}

async function metric(n: Node, name: string): Promise<number> {
  const text = await (await fetch(`${n.base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Polls `check` until it holds; returns how long that took. */
async function within(ms: number, what: string, check: () => Promise<boolean>): Promise<number> {
  const started = Date.now();
  for (;;) {
    if (await check()) return Date.now() - started;
    if (Date.now() - started > ms) throw new Error(`not within ${ms} ms: ${what}`);
    await new Promise((r) => setTimeout(r, 25));
  }
}

function toolText(r: Reply): string {
  const last = r.messages.at(-1) as { result?: { content?: Array<{ text?: string }> } } | undefined;
  return last?.result?.content?.map((c) => c.text ?? '').join('') ?? r.text;
}

describe('cluster sessions: a session is valid on every node', () => {
  it('initialize on A, then B serves it: capabilities and log level follow the session', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url, kAlice, { elicitation: {} });
    const level = await call(a.url, session, 'logging/setLevel', { level: 'error' });
    expect(level.status, level.text).toBe(200);

    const listed = await call(b.url, session, 'tools/list');
    expect(listed.status, listed.text).toBe(200);
    expect(listed.text).toContain('"echo"');

    // Log level set on A: B sends only the error line.
    const chatty = await call(b.url, session, 'tools/call', { name: 'chatty', arguments: {} });
    expect(chatty.status).toBe(200);
    const logs = chatty.messages.filter((m) => m.method === 'notifications/message');
    expect(logs.map((m) => (m.params as { level: string }).level)).toEqual(['error']);

    // Capabilities declared on A: B's tool may ask the client (elicitation), answered on B.
    const asked = httpPostStream(b.url, { jsonrpc: '2.0', id: 77, method: 'tools/call', params: { name: 'ask', arguments: { question: 'who?' } } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', ...kAlice });
    const request = await asked.next((m) => m.method === 'elicitation/create');
    const answered = await post(b.url, { jsonrpc: '2.0', id: request.id, result: { action: 'accept', content: { name: 'Ada' } } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25', ...kAlice });
    expect(answered.status, answered.text).toBe(202);
    const final = await asked.next((m) => m.id === 77);
    expect(JSON.stringify(final)).toContain('Ada');

    // And back on A, the level set there still holds (B's adoption changed nothing).
    const onA = await call(a.url, session, 'tools/call', { name: 'chatty', arguments: {} });
    expect(onA.messages.filter((m) => m.method === 'notifications/message')).toHaveLength(1);
  });

  it('logging/setLevel on B reaches A, which had the session cached, by the time B answers', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url);
    const levels = async () => (await call(a.url, session, 'tools/call', { name: 'chatty', arguments: {} })).messages
      .filter((m) => m.method === 'notifications/message').map((m) => (m.params as { level: string }).level);
    // B answers once A has dropped its copy (as a DELETE does), so A's very next request has the
    // new level; back and forth, since a lagging A passes now and then without the wait.
    for (let i = 0; i < 10; i++) {
      expect((await call(b.url, session, 'logging/setLevel', { level: 'error' })).status).toBe(200);
      expect(await levels(), `round ${i}, after error`).toEqual(['error']);
      expect((await call(b.url, session, 'logging/setLevel', { level: 'info' })).status).toBe(200);
      expect(await levels(), `round ${i}, after info`).toEqual(['info', 'error']);
    }
  });

  it('another principal presenting the id gets 404 on B (and adopts nothing)', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url);
    expect((await call(b.url, session, 'tools/list', {}, kBob)).status).toBe(404);
    expect((await call(b.url, session, 'tools/list', {}, {})).status).toBe(404);
    expect(await end(b.url, session, kBob)).toBe(404);
    expect((await call(b.url, 'f'.repeat(32), 'tools/list')).status).toBe(404);
    // The owner is unaffected, on both nodes.
    expect((await call(b.url, session, 'tools/list')).status).toBe(200);
    expect((await call(a.url, session, 'tools/list')).status).toBe(200);
  });

  it('DELETE on B ends the session on A at once (A had it cached)', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url);
    expect((await call(a.url, session, 'tools/list')).status).toBe(200);
    expect(await end(b.url, session)).toBe(204);
    // The bound with the invalidation subscriber up: immediately (the message's own latency).
    const took = await within(1_000, 'A refuses the deleted session', async () => (await call(a.url, session, 'tools/list')).status === 404);
    expect(took).toBeLessThan(1_000);
    expect((await call(b.url, session, 'tools/list')).status).toBe(404);
    expect(await end(a.url, session)).toBe(404);
  });

  it('DELETE on B cancels the session\'s call running on A (a logging/setLevel on B cancels nothing)', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url);
    const record = recordPath();
    const running = call(a.url, session, 'tools/call', { name: 'block', arguments: { ms: 20_000, record } });
    await within(5_000, 'the tool to start on A', async () => recorded(record).length > 0);
    // The same message as a DELETE's reaches A: A must not take it for one.
    expect((await call(b.url, session, 'logging/setLevel', { level: 'error' })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    expect(recorded(record)).toHaveLength(1);
    expect(await end(b.url, session)).toBe(204);
    await within(2_000, 'A\'s tool to see the cancel', async () => recorded(record).some((l) => l.startsWith('cancelled')));
    expect(recorded(record).at(-1)).toContain('reason=the client ended its session (DELETE)');
    expect((await running).status).toBe(202); // as after the client's own cancel: no response
  });

  it('DELETE on A\'s other thread, after a logging/setLevel on B dropped A\'s copy, cancels the call running on A', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const session = await initialize(a.url);
    const headers = { ...kAlice, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const probe = { jsonrpc: '2.0', id: 'p', method: 'ping' };
    const runner = new Agent({ keepAlive: true, maxSockets: 1 });
    const thread = String((await postOn(a.url, probe, headers, runner)).headers['sluice-worker']);
    const record = recordPath();
    const running = postOn(a.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'block', arguments: { ms: 20_000, record } } }, headers, runner);
    await within(5_000, 'the tool to start on A', async () => recorded(record).length > 0);
    // B's setLevel drops A's copy; A's other thread adopts it again for the DELETE: only that
    // thread has looked the new copy up, yet the call runs on the first one. (The probe that finds
    // that thread carries no session, so no thread looks the session up meanwhile.)
    expect((await call(b.url, session, 'logging/setLevel', { level: 'error' })).status).toBe(200);
    await new Promise((r) => setTimeout(r, 300));
    const other = await agentOnOtherWorker(a.url, thread, { ...kAlice, 'mcp-protocol-version': '2025-11-25' }, probe);
    const status = await new Promise<number>((resolve, reject) => {
      const req = httpRequest(a.url, { method: 'DELETE', agent: other.agent, headers }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
      req.on('error', reject);
      req.end();
    });
    expect(status).toBe(204);
    await within(2_000, 'the tool on A\'s first thread to see the cancel', async () => recorded(record).some((l) => l.startsWith('cancelled')));
    expect(recorded(record).at(-1)).toContain('reason=the client ended its session (DELETE)');
    expect((await running).status).toBe(202);
    runner.destroy();
    other.agent.destroy();
  });

  it('idle expiry holds across nodes, and use on one node keeps the session alive for the other', { timeout: kTimeout }, async () => {
    const { a, b, prefix } = await pair({ sessionIdleMs: 1_000 });
    const kept = await initialize(a.url);
    const idle = await initialize(a.url);
    expect((await call(b.url, idle, 'tools/list')).status).toBe(200);
    // `kept` is used on A only, for twice the idle time: its touches keep it in Redis for B.
    const until = Date.now() + 2_200;
    while (Date.now() < until) {
      expect((await call(a.url, kept, 'tools/list')).status).toBe(200);
      await new Promise((r) => setTimeout(r, 200));
    }
    expect((await call(b.url, kept, 'tools/list')).status).toBe(200);
    // `idle` was last used 2.2 s ago (idle 1 s, Redis slack a touch period of 250 ms): gone everywhere.
    expect((await call(a.url, idle, 'tools/list')).status).toBe(404);
    expect((await call(b.url, idle, 'tools/list')).status).toBe(404);
    expect(await a.connection.exists(`${prefix}session:${idle}`)).toBe(0);
    expect(await a.connection.pttl(`${prefix}session:${kept}`)).toBeGreaterThan(0);
  });

  it('an in-process node (tools given as an array) shares sessions too', { timeout: kTimeout }, async () => {
    const prefix = `t${randomBytes(4).toString('hex')}:`;
    const echo: Tool = defineTool({ name: 'echo', description: 'Returns its text.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (args) => String(args.text) });
    const a = await node('A', prefix, { tools: [echo] });
    const b = await node('B', prefix);
    const session = await initialize(a.url, {});
    const r = await call(b.url, session, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, {});
    expect(toolText(r)).toBe('hi');
    const back = await initialize(b.url, {});
    expect((await call(a.url, back, 'tools/list', {}, {})).status).toBe(200);
    expect(await end(a.url, back, {})).toBe(204);
    expect((await call(b.url, back, 'tools/list', {}, {})).status).toBe(404);
  });
});

describe('cluster sessions: Redis lost while serving', () => {
  it('cached sessions keep working, a miss is 503 (not 404), and an empty Redis after restart ends every session', { timeout: 60_000 }, async () => {
    const { a, b } = await pair({ logLevel: 'info' });
    const cached = await initialize(a.url);
    expect((await call(a.url, cached, 'tools/list')).status).toBe(200);
    const before = await metric(b, 'sluice_cluster_session_lookups_failed_total');
    expect(before).toBe(0);

    await redis.kill();
    try {
      // A serves the session it holds (degraded: nothing of it needs Redis).
      for (let i = 0; i < 3; i++) expect((await call(a.url, cached, 'tools/call', { name: 'echo', arguments: { text: 'still' } })).status).toBe(200);
      // B lacks it and cannot ask: 503 with Retry-After, counted. Never a 404.
      const miss = await call(b.url, cached, 'tools/list');
      expect(miss.status, miss.text).toBe(503);
      expect(miss.headers.get('retry-after')).toBe('1');
      expect(await metric(b, 'sluice_cluster_session_lookups_failed_total')).toBeGreaterThan(before);
      // A new session that other nodes could not see is refused, visibly.
      const init = await post(a.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, kAlice);
      expect(init.status).toBe(503);
      expect(init.headers.get('retry-after')).toBe('1');
      expect(init.headers.get('mcp-session-id')).toBeNull();
      // Ending it everywhere needs Redis too: refused, and the session stays.
      expect(await end(a.url, cached)).toBe(503);
      expect(await metric(a, 'sluice_cluster_session_writes_failed_total')).toBeGreaterThanOrEqual(2);
      // Past several revalidation periods (500 ms here) A still serves it: Redis cannot say it is gone.
      await new Promise((r) => setTimeout(r, 1_200));
      expect((await call(a.url, cached, 'tools/list')).status).toBe(200);
    } finally {
      await redis.restart();
    }

    // Redis came back empty: its sessions are gone, so A drops its copy when its subscriber is back
    // (the documented behaviour: clients get 404 and initialize again).
    await within(15_000, 'A drops the session Redis lost', async () => (await call(a.url, cached, 'tools/list')).status === 404);
    // B answers 503 until its own link is back (its reconnection backs off on its own clock), then 404.
    await within(15_000, 'B says the session is gone', async () => (await call(b.url, cached, 'tools/list')).status === 404);
    // Full service without restarts: a new session on A works on B.
    let fresh = '';
    await within(10_000, 'initialize works again', async () => {
      const r = await post(a.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, kAlice);
      fresh = r.headers.get('mcp-session-id') ?? '';
      return r.status === 200;
    });
    expect((await call(b.url, fresh, 'tools/list')).status).toBe(200);
    // Logged once per state change. A's subscriber reconnects on its own backoff clock, which may
    // lag behind the command connection that served the requests above: wait for its line.
    await within(15_000, 'A\'s subscriber to be back', async () => a.logs.some((l) => l.includes('invalidation subscriber is back')));
    expect(a.logs.filter((l) => l.includes('invalidation subscriber lost Redis'))).toHaveLength(1);
    expect(a.logs.filter((l) => l.includes('invalidation subscriber is back'))).toHaveLength(1);
  });
});

describe('cluster sessions: the official SDK v1 client behind a round-robin proxy', () => {
  it('initializes, lists tools and calls a tool while its requests alternate between the nodes', { timeout: kTimeout }, async () => {
    const { a, b } = await pair();
    const proxy = await roundRobinProxy([a.url, b.url]);
    onCleanup(() => proxy.close());
    const served = proxy.served;

    const transport = new HttpTransportV1(new URL(proxy.url), { requestInit: { headers: kAlice } });
    const client = new ClientV1({ name: 'sluice-cluster-v1', version: '1.0.0' });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: 10_000 });
    const { tools } = await client.listTools(undefined, { timeout: 10_000 });
    expect(tools.map((t) => t.name)).toContain('echo');
    for (let i = 0; i < 3; i++) {
      const result = await client.callTool({ name: 'echo', arguments: { text: `hello ${i}` } }, undefined, { timeout: 10_000 });
      expect(result.content).toEqual([{ type: 'text', text: `hello ${i}` }]);
    }
    // Both nodes served requests of the one session.
    expect(new Set(served.map((s) => s.split(' ')[1])).size).toBe(2);
    await transport.terminateSession();
  });
});

/** A POST whose SSE body is read message by message. */
function httpPostStream(url: string, body: unknown, headers: Record<string, string>): { next(match: (m: Record<string, unknown>) => boolean): Promise<Record<string, unknown>> } {
  const seen: Array<Record<string, unknown>> = [];
  const waiters: Array<() => void> = [];
  const target = new URL(url);
  const req = httpRequest({ host: target.hostname, port: target.port, path: target.pathname, method: 'POST', headers: { 'content-type': 'application/json', accept: kAccept, ...headers } }, (res) => {
    let buffer = '';
    res.setEncoding('utf8');
    res.on('data', (chunk: string) => {
      buffer += chunk;
      let at: number;
      while ((at = buffer.indexOf('\n')) >= 0) {
        const line = buffer.slice(0, at);
        buffer = buffer.slice(at + 1);
        if (line.startsWith('data: ')) seen.push(JSON.parse(line.slice(6)) as Record<string, unknown>);
        else if (line.startsWith('{')) seen.push(JSON.parse(line) as Record<string, unknown>);
      }
      if (buffer.startsWith('{')) {
        try { seen.push(JSON.parse(buffer) as Record<string, unknown>); buffer = ''; } catch { /* more to come */ }
      }
      for (const w of waiters.splice(0)) w();
    });
  });
  req.end(JSON.stringify(body));
  onCleanup(() => { req.destroy(); });
  return {
    next: async (match) => {
      const deadline = Date.now() + 10_000;
      for (;;) {
        const found = seen.find(match);
        if (found !== undefined) return found;
        if (Date.now() > deadline) throw new Error(`no matching message; saw ${JSON.stringify(seen)}`);
        await new Promise<void>((r) => { waiters.push(r); setTimeout(r, 50); });
      }
    },
  };
}
