// Defects an outside probe found (issue 11), one test each, over both HTTP adapters where the
// adapter could matter. Each failed on the main branch before its fix.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineResourceTemplate, defineTool } from '../../src/index.js';
import type { Server, ServerOptions, Tool } from '../../src/index.js';
import { SessionStore } from '../../src/sessions/store.js';
import { post } from '../helpers/http.js';
import { stdioServer } from '../helpers/stdio.js';
import { kToolsModule, modernMeta, recordPath, recorded, until } from '../helpers/server.js';
import { adapters } from '../helpers/adapters.js';

const fixtures = ((await import(kToolsModule.href)) as { default: Tool[] }).default.filter((t) => t.pool !== true);
const odd = [
  defineTool({ name: 'throw_null_proto', description: 'Throws an object without a prototype.', inputSchema: { type: 'object', properties: {} }, handler: () => { throw Object.create(null); } }),
  defineTool({
    name: 'throw_bad_tostring', description: 'Throws an object whose toString throws.', inputSchema: { type: 'object', properties: {} },
    handler: async () => { throw { toString() { throw new Error('no'); } }; },
  }),
  defineResourceTemplate({ uriTemplate: 'users://{id}/profile', name: 'profile', mimeType: 'application/json', read: (_uri, { id }) => JSON.stringify({ id }) }),
];
const tools = [...fixtures, ...odd];

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: Partial<ServerOptions>): Promise<string> {
  server = createServer({ tools, port: 0, janitor: false, ...options }, { log: () => {} });
  return (await server.listen()).url;
}

const legacy = { 'mcp-protocol-version': '2025-11-25' };
const modernHeaders = (method: string, name?: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) });
const call = (id: number | string, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) =>
  ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) } });
const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

/** Starts a streamed POST and returns a way to drop its connection. */
function openCall(url: string, message: unknown, headers: Record<string, string>): { drop(): void } {
  const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } });
  req.on('error', () => {});
  req.on('response', (res) => { res.resume(); });
  req.end(JSON.stringify(message));
  return { drop: () => req.destroy() };
}

describe.each(adapters('probe round 2'))('probe round 2 over %s', (http) => {
  it('3/10: a 2026-07-28 notification is 202 with or without _meta, and a notifications/cancelled (either wire, same IP) cancels no modern request', async () => {
    const url = await start({ http, sessions: false });
    const record = recordPath();
    const running = openCall(url, call('m1', 'block', { ms: 10_000, record }, modernMeta()), modernHeaders('tools/call', 'block'));
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    // Without _meta (as a popular proxy client sends), with _meta, and on the legacy wire.
    const bare = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'm1' } }, { 'mcp-protocol-version': '2026-07-28' });
    expect(bare.status).toBe(202);
    const withMeta = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'm1', _meta: modernMeta() } }, modernHeaders('notifications/cancelled'));
    expect(withMeta.status).toBe(202);
    const legacyCancel = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'm1' } }, legacy);
    expect(legacyCancel.status).toBe(202);
    await new Promise((r) => setTimeout(r, 200));
    expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
    // Its own stream closing is what cancels it.
    running.drop();
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the disconnect to cancel');
  });

  it('4: a client\'s own disconnect is honoured even when its scope\'s cancellation quota is full', async () => {
    const url = await start({ http, sessions: false, cancelOnDisconnect: true, registry: { maxRowsPerScope: 2 }, streamCancelTimeoutMs: 20_000 });
    // Another client of the same scope fills the quota with cancelled calls that never end.
    const stuck = [1, 2].map((id) => openCall(url, call(id, 'stubborn', { ms: 8_000 }), legacy));
    await new Promise((r) => setTimeout(r, 200));
    for (const id of [1, 2]) expect((await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }, legacy)).status).toBe(202);
    const refused = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }, legacy);
    expect(refused.status).toBe(429); // the quota is full
    const record = recordPath();
    const victim = openCall(url, call(3, 'block', { ms: 10_000, record }), legacy);
    await until(() => recorded(record).length > 0, 10_000, 'the victim\'s tool to start');
    victim.drop();
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5_000, 'the victim\'s own disconnect to cancel it');
    for (const s of stuck) s.drop();
  });

  it('5: an initialize refused with 503 creates no session and names none', async () => {
    const url = await start({ http, registry: { inFlightCapacity: 1 }, maxSessions: 4 });
    const session = String((await post(url, init, legacy)).headers['mcp-session-id']);
    const record = recordPath();
    const hog = openCall(url, call(1, 'block', { ms: 10_000, record }), { ...legacy, 'mcp-session-id': session });
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    for (let i = 0; i < 20; i++) {
      const refused = await post(url, init, legacy);
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      expect(refused.headers['mcp-session-id']).toBeUndefined();
    }
    hog.drop();
    await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1 } }, { ...legacy, 'mcp-session-id': session });
    await until(() => server!.registry.counters().inFlight === 0, 10_000, 'the hog to end');
    // The session table (4 sessions) was not filled by the refusals.
    for (let i = 0; i < 3; i++) expect((await post(url, init, legacy)).status).toBe(200);
  });

  it('7: a malformed percent-encoding in a resource URI is a JSON-RPC error, not a 500 (both eras)', async () => {
    const url = await start({ http, sessions: false });
    const read = { jsonrpc: '2.0', id: 1, method: 'resources/read', params: { uri: 'users://%/profile' } };
    const old = await post(url, read, legacy);
    expect(old.status).toBe(200);
    expect(JSON.parse(old.body)).toMatchObject({ id: 1, error: { code: -32602 } });
    const modern = await post(url, { ...read, params: { ...read.params, _meta: modernMeta() } }, modernHeaders('resources/read', 'users://%/profile'));
    expect(modern.status).toBe(200);
    expect(JSON.parse(modern.body)).toMatchObject({ id: 1, error: { code: -32602 } });
    expect((await post(url, { ...read, params: { uri: 'users://42/profile' } }, legacy)).body).toContain('\\"id\\":\\"42\\"');
  });

  it('8: a tool throwing Object.create(null) or an object whose toString throws gets isError content', async () => {
    const url = await start({ http, sessions: false });
    for (const name of ['throw_null_proto', 'throw_bad_tostring']) {
      const res = await post(url, call(1, name, {}), legacy);
      expect(res.status).toBe(200);
      const body = JSON.parse(res.body) as { result: { isError: boolean; content: { text: string }[] } };
      expect(body.result.isError).toBe(true);
      expect(typeof body.result.content[0].text).toBe('string');
    }
  });

  it('11: a Host with junk after the name is refused; a numeric port passes', async () => {
    const url = await start({ http, sessions: false });
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    expect((await post(url, ping, { ...legacy, host: 'localhost:evil.example' })).status).toBe(403);
    expect((await post(url, ping, { ...legacy, host: 'localhost:3000:1' })).status).toBe(403);
    expect((await post(url, ping, { ...legacy, host: '[::1]x' })).status).toBe(403);
    expect((await post(url, ping, { ...legacy, host: 'localhost:3000' })).status).toBe(200);
    expect((await post(url, ping, { ...legacy, host: '[::1]:3000' })).status).toBe(200);
  });

  it('11: a requestState whose MAC has anything appended is refused', async () => {
    const url = await start({ http, sessions: false });
    const headers = modernHeaders('tools/call', 'two_rounds');
    const first = JSON.parse((await post(url, call(1, 'two_rounds', {}, modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } })), headers)).body) as { result: { requestState: string } };
    const state = first.result.requestState;
    expect(typeof state).toBe('string');
    const again = (requestState: string) => post(url, {
      jsonrpc: '2.0', id: 2, method: 'tools/call',
      params: { name: 'two_rounds', arguments: {}, inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, requestState, _meta: modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }) },
    }, headers);
    for (const junk of ['A', '==', '.x', '\n', 'AAAA']) {
      expect(JSON.parse((await again(state + junk)).body)).toMatchObject({ error: { code: -32602 } });
    }
    // The state as issued is accepted: round 2 starts (and blocks until its stream closes).
    const record = recordPath();
    const good = openCall(url, {
      jsonrpc: '2.0', id: 3, method: 'tools/call',
      params: { name: 'two_rounds', arguments: { record }, inputResponses: { name: { action: 'accept', content: { name: 'Ada' } } }, requestState: state, _meta: modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { elicitation: {} } }) },
    }, headers);
    await until(() => recorded(record).length > 0, 10_000, 'round 2 to start');
    good.drop();
  });
});

describe.each(adapters('per-client limits'))('per-client limits over %s', (http) => {
  it('one client flooding requests and sessions gets 429 + Retry-After; other clients are served; /metrics counts it', async () => {
    const url = await start({ http, trustProxy: true, metrics: true, maxInFlightPerClient: 3, maxSessionsPerClient: 2 });
    const from = (address: string, session?: string) => ({ ...legacy, 'x-forwarded-for': address, ...(session === undefined ? {} : { 'mcp-session-id': session }) });
    const a1 = String((await post(url, init, from('203.0.113.1'))).headers['mcp-session-id']);
    expect((await post(url, init, from('203.0.113.1'))).status).toBe(200);
    const third = await post(url, init, from('203.0.113.1'));
    expect(third.status).toBe(429);
    expect(third.headers['retry-after']).toBe('1');
    expect(third.headers['mcp-session-id']).toBeUndefined();
    const b = String((await post(url, init, from('203.0.113.2'))).headers['mcp-session-id']);
    // Ending one of A's sessions gives A room again.
    const del = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'DELETE', agent: false, headers: from('203.0.113.1', a1) }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
      req.on('error', reject);
      req.end();
    });
    expect(del).toBe(204);
    const a3 = String((await post(url, init, from('203.0.113.1'))).headers['mcp-session-id']);
    expect(a3).toMatch(/^[0-9a-f]{32}$/);
    // In flight: three running calls fill A's share; the fourth is refused, B is served meanwhile.
    const records = [1, 2, 3].map(() => recordPath());
    const calls = records.map((record, i) => openCall(url, call(10 + i, 'block', { ms: 10_000, record }), from('203.0.113.1', a3)));
    await until(() => records.every((r) => recorded(r).length > 0), 10_000, 'three calls to start');
    const fourth = await post(url, call(20, 'echo', { text: 'x' }), from('203.0.113.1', a3));
    expect(fourth.status).toBe(429);
    expect(JSON.parse(fourth.body)).toMatchObject({ id: 20, error: { message: expect.stringContaining('Too Many Requests') } });
    const other = await post(url, call(21, 'echo', { text: 'y' }), from('203.0.113.2', b));
    expect(other.status).toBe(200);
    for (const c of calls) c.drop();
    for (const id of [10, 11, 12]) await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }, from('203.0.113.1', a3));
    await until(() => server!.registry.counters().inFlight === 0, 10_000, 'the calls to end');
    expect((await post(url, call(22, 'echo', { text: 'z' }), from('203.0.113.1', a3))).status).toBe(200);
    const metrics = await (await fetch(url.replace('/mcp', '/metrics'))).text();
    expect(metrics).toMatch(/^sluice_client_limited_total 2$/m);
  });
});

function session(store: SessionStore): string {
  const created = store.create(undefined, 0, 'ip:127.0.0.1', 1000);
  if (!created.ok) throw new Error(created.reason);
  return created.id;
}

describe('session log levels', () => {
  it('a level set through a stale lookup never lands on the session that reused the slot', () => {
    const store = SessionStore.create(4, 8);
    const first = session(store);
    const stale = store.lookup(first, undefined, 60_000);
    expect(stale.ok).toBe(true);
    store.delete(stale);
    // Fill until a new session takes the stale one's slot.
    let reused: string | undefined;
    for (let i = 0; i < 64 && reused === undefined; i++) {
      const id = session(store);
      const found = store.lookup(id, undefined, 60_000);
      if (found.ok && stale.ok && found.slot === stale.slot) reused = id;
      else store.delete(found);
    }
    expect(reused).toBeDefined();
    store.setLogLevel(stale, 5);
    const now = store.lookup(reused!, undefined, 60_000);
    expect(now.ok && now.logLevel).toBe(-1);
    store.setLogLevel(now, 2);
    const later = store.lookup(reused!, undefined, 60_000);
    expect(later.ok && later.logLevel).toBe(2);
  });
});

describe('stdio applies the HTTP rules', () => {
  const stdio = () => stdioServer({ tools: fixtures });

  it('broken UTF-8 is a parse error, not a lossy decode', async () => {
    const s = stdio();
    s.input.write(Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}}}\n')]));
    await until(() => s.lines.length > 0, 5_000, 'an answer');
    expect(s.lines[0]).toMatchObject({ id: null, error: { code: -32700 } });
    s.input.end();
    await s.done;
  });

  it('an initialize carrying a modern _meta is modern (method not found), and _meta asks only for 2026-07-28', async () => {
    const s = stdio();
    s.input.write(`${JSON.stringify({ ...init, id: 1, params: { ...init.params, _meta: modernMeta() } })}\n`);
    s.input.write(`${JSON.stringify(call(2, 'echo', { text: 'x' }, modernMeta({ 'io.modelcontextprotocol/protocolVersion': '2025-11-25' })))}\n`);
    s.input.write(`${JSON.stringify(call(3, 'echo', { text: 'x' }, modernMeta()))}\n`);
    await until(() => s.lines.length >= 3, 5_000, 'three answers');
    expect(s.lines.find((l) => l.id === 1)).toMatchObject({ error: { code: -32601 } });
    expect(s.lines.find((l) => l.id === 2)).toMatchObject({ error: { code: -32022 } });
    expect(s.lines.find((l) => l.id === 3)).toMatchObject({ result: { content: [{ text: 'x' }] } });
    s.input.end();
    await s.done;
  });
});
