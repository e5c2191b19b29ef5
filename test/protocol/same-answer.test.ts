// One table of messages, good and hostile, sent over stdio and over HTTP on every adapter that loads
// here (node:http, and uWS where its binding loads: skipped visibly otherwise), one real server each.
// Each row states the JSON-RPC answer and the HTTP status; where the spec makes the transports
// differ (HTTP answers a notification with 202 and refuses with a status, stdio never answers a
// notification; only HTTP has an MCP-Protocol-Version header; the framing limits), the row says
// so explicitly in `stdio`. Then the answers themselves are compared: the same bytes of JSON
// wherever the row does not declare a difference.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kAccept, kToolsModule, modernMeta, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { stdioServer } from '../helpers/stdio.js';
import { kAdapters, kUwsLoads, kUwsUnavailable } from '../helpers/adapters.js';

const kModern = '2026-07-28';
const kMaxBytes = 4096;

type Id = string | number | null;
/** What a transport answers: nothing, or one JSON-RPC response (an error's code and id, or a result). */
type Answer = 'none' | { id: Id; code: number } | { id: Id; result: true };

interface Row {
  name: string;
  /** The message: a value sent as JSON, or raw bytes/text sent as they are. */
  send: unknown;
  raw?: boolean;
  /** HTTP headers: a legacy session's, a 2026-07-28 request's (from the body), or a given version. */
  headers?: 'legacy' | 'modern' | { version: string };
  answer: Answer;
  status: number;
  /** Where stdio must answer otherwise, and why (the spec's reason, per row). */
  stdio?: { answer: Answer; why: string; logged?: string };
}

const legacy = (id: Id | undefined, method: string, params?: unknown): Record<string, unknown> => ({
  jsonrpc: '2.0', ...(id === undefined ? {} : { id }), method, ...(params === undefined ? {} : { params }),
});
const modern = (id: Id | undefined, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = modernMeta()): Record<string, unknown> =>
  legacy(id, method, { ...params, _meta: meta });
const err = (id: Id, code: number): Answer => ({ id, code });
const ok = (id: Id): Answer => ({ id, result: true });
const kNotificationNeverAnswered = 'stdio never answers a notification, not even with an error (JSON-RPC: a notification gets no response)';

const rows: Row[] = [
  // --- Framing and parsing: one reading of a message (readMessage) for both transports
  { name: 'not JSON', send: 'not json', raw: true, answer: err(null, -32700), status: 400 },
  { name: 'truncated JSON', send: '{"jsonrpc":"2.0","id":1,"method":', raw: true, answer: err(null, -32700), status: 400 },
  { name: 'broken UTF-8', send: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","x":"'), Buffer.from([0xff, 0xfe]), Buffer.from('"}')]), raw: true, answer: err(null, -32700), status: 400 },
  { name: 'a BOM before the JSON (RFC 8259: may be ignored)', send: `\uFEFF${JSON.stringify(legacy(1, 'ping'))}`, raw: true, headers: 'legacy', answer: ok(1), status: 200 },
  { name: 'batch of two', send: [legacy(2, 'ping'), legacy(3, 'ping')], answer: err(null, -32600), status: 400 },
  { name: 'empty batch', send: '[]', raw: true, answer: err(null, -32600), status: 400 },
  { name: 'a number', send: '42', raw: true, answer: err(null, -32600), status: 400 },
  { name: 'null', send: 'null', raw: true, answer: err(null, -32600), status: 400 },
  {
    name: 'over the size limit', send: JSON.stringify(legacy(4, 'tools/call', { name: 'echo', arguments: { text: 'x'.repeat(kMaxBytes) } })), raw: true, headers: 'legacy',
    answer: err(null, -32600), status: 413,
    stdio: { answer: err(null, -32700), why: 'framing: stdio drops an over-long line unread, so it cannot be parsed; HTTP refuses the body before reading it (413)' },
  },
  // --- Envelopes and types
  { name: 'jsonrpc missing (id echoed)', send: { id: 5, method: 'ping' }, answer: err(5, -32600), status: 400 },
  { name: 'jsonrpc "1.0"', send: { jsonrpc: '1.0', id: 'six', method: 'ping' }, answer: err('six', -32600), status: 400 },
  { name: 'method missing', send: { jsonrpc: '2.0', id: 7 }, answer: err(7, -32600), status: 400 },
  { name: 'method a number', send: { jsonrpc: '2.0', id: 8, method: 42 }, answer: err(8, -32600), status: 400 },
  { name: 'method of 300 characters', send: legacy(9, 'm'.repeat(300)), answer: err(9, -32600), status: 400 },
  { name: 'id a float', send: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', raw: true, answer: err(null, -32600), status: 400 },
  { name: 'id an object', send: { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, answer: err(null, -32600), status: 400 },
  { name: 'id a string of 300 bytes', send: legacy('i'.repeat(300), 'ping'), answer: err(null, -32600), status: 400 },
  { name: 'params an array', send: { jsonrpc: '2.0', id: 10, method: 'ping', params: [1] }, answer: err(10, -32602), status: 400 },
  { name: 'params a string', send: { jsonrpc: '2.0', id: 11, method: 'ping', params: 'x' }, answer: err(11, -32602), status: 400 },
  // --- 2025 (legacy) era
  { name: 'legacy ping', send: legacy(20, 'ping'), headers: 'legacy', answer: ok(20), status: 200 },
  { name: 'legacy tools/list', send: legacy(21, 'tools/list'), headers: 'legacy', answer: ok(21), status: 200 },
  { name: 'legacy tools/call echo', send: legacy(22, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), headers: 'legacy', answer: ok(22), status: 200 },
  { name: 'legacy tools/call: name a number', send: legacy(23, 'tools/call', { name: 42, arguments: {} }), headers: 'legacy', answer: err(23, -32602), status: 200 },
  { name: 'legacy tools/call: an unknown tool', send: legacy(24, 'tools/call', { name: 'nope', arguments: {} }), headers: 'legacy', answer: err(24, -32602), status: 200 },
  { name: 'legacy: an unknown method', send: legacy(25, 'nope/nope'), headers: 'legacy', answer: err(25, -32601), status: 200 },
  {
    name: 'legacy notification', send: legacy(undefined, 'notifications/initialized'), headers: 'legacy', answer: 'none', status: 202,
  },
  {
    name: 'legacy notifications/cancelled with params an array', send: legacy(undefined, 'notifications/cancelled', [1]), headers: 'legacy',
    answer: err(null, -32602), status: 400,
    stdio: { answer: 'none', why: kNotificationNeverAnswered, logged: 'notifications/cancelled refused' },
  },
  { name: 'legacy notifications/cancelled of nothing in flight', send: legacy(undefined, 'notifications/cancelled', { requestId: 999 }), headers: 'legacy', answer: 'none', status: 202 },
  { name: 'a response to nothing we asked', send: { jsonrpc: '2.0', id: 'x1', result: {} }, headers: 'legacy', answer: 'none', status: 202 },
  // --- 2026-07-28
  { name: 'modern ping is no method of the era (404)', send: modern(30, 'ping'), headers: 'modern', answer: err(30, -32601), status: 404 },
  { name: 'modern tools/list', send: modern(31, 'tools/list'), headers: 'modern', answer: ok(31), status: 200 },
  { name: 'modern tools/call echo', send: modern(32, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), headers: 'modern', answer: ok(32), status: 200 },
  { name: 'modern server/discover', send: modern(33, 'server/discover'), headers: 'modern', answer: ok(33), status: 200 },
  { name: 'modern: an unknown method (404)', send: modern(34, 'nope/nope'), headers: 'modern', answer: err(34, -32601), status: 404 },
  { name: 'modern initialize is no method of the era', send: modern(35, 'initialize'), headers: 'modern', answer: err(35, -32601), status: 404 },
  { name: 'modern: _meta without clientCapabilities', send: modern(36, 'tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': kModern }), headers: 'modern', answer: err(36, -32602), status: 400 },
  { name: 'modern: clientCapabilities an array', send: modern(37, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/clientCapabilities': [] })), headers: 'modern', answer: err(37, -32602), status: 400 },
  { name: 'modern: clientCapabilities null, unknown method', send: modern(38, 'nope/nope', {}, modernMeta({ 'io.modelcontextprotocol/clientCapabilities': null })), headers: 'modern', answer: err(38, -32602), status: 400 },
  { name: 'modern: an unsupported version in _meta', send: modern(39, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': '2099-01-01' })), headers: { version: '2099-01-01' }, answer: err(39, -32022), status: 400 },
  { name: 'modern: protocolVersion a number', send: modern(40, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': 42 })), headers: 'modern', answer: err(40, -32602), status: 400 },
  { name: 'modern: an unknown logLevel is ignored', send: modern(41, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/logLevel': 'loud' })), headers: 'modern', answer: ok(41), status: 200 },
  {
    name: 'no _meta, with a 2026-07-28 header', send: legacy(42, 'ping'), headers: 'modern', answer: err(42, -32602), status: 400,
    stdio: { answer: ok(42), why: 'only HTTP has an MCP-Protocol-Version header: on stdio the body alone decides, and a body without _meta is legacy' },
  },
  { name: 'modern notification', send: modern(undefined, 'notifications/initialized'), headers: 'modern', answer: 'none', status: 202 },
  { name: 'modern notifications/cancelled', send: modern(undefined, 'notifications/cancelled', { requestId: 998 }), headers: 'modern', answer: 'none', status: 202 },
  {
    name: 'a response, with a 2026-07-28 header', send: { jsonrpc: '2.0', id: 'x2', result: {} }, headers: 'modern', answer: err(null, -32600), status: 400,
    stdio: { answer: 'none', why: 'only HTTP has an MCP-Protocol-Version header: on stdio a response (no _meta) is legacy, and answers nothing' },
  },
];

/** What one transport answered to one row: the answer's shape, and its JSON text (for comparison). */
interface Got {
  answer: Answer;
  json: string | undefined;
  status?: number;
}

function shape(body: Record<string, unknown>): Answer {
  const id = body.id as Id;
  if (body.error !== undefined) return { id, code: (body.error as { code: number }).code };
  return body.result !== undefined ? { id, result: true } : { id, code: Number.NaN };
}

function headersOf(row: Row, session: string): Record<string, string> {
  const h: Record<string, string> = { 'content-type': 'application/json', accept: kAccept };
  const body = row.raw === true ? undefined : (row.send as Record<string, unknown>);
  if (row.headers === 'legacy') h['mcp-session-id'] = session;
  else if (row.headers !== undefined) {
    h['mcp-protocol-version'] = row.headers === 'modern' ? kModern : row.headers.version;
    if (typeof body?.method === 'string') h['mcp-method'] = body.method;
    const name = (body?.params as Record<string, unknown> | undefined)?.name;
    if (typeof name === 'string') h['mcp-name'] = name;
  }
  return h;
}

function bytesOf(row: Row): Buffer {
  if (row.raw !== true) return Buffer.from(JSON.stringify(row.send));
  return Buffer.isBuffer(row.send) ? row.send : Buffer.from(row.send as string);
}

async function overHttp(url: string, session: string, row: Row): Promise<Got> {
  const res = await fetch(url, { method: 'POST', headers: headersOf(row, session), body: bytesOf(row) });
  const text = await res.text();
  if (text === '') return { answer: 'none', json: undefined, status: res.status };
  return { answer: shape(JSON.parse(text) as Record<string, unknown>), json: text, status: res.status };
}

type Stdio = ReturnType<typeof stdioServer>;
let sentinel = 0;

/** The lines stdio writes for one row: everything before the answer to a ping sent right after it. */
async function overStdio(s: Stdio, row: Row): Promise<Got> {
  const from = s.lines.length;
  const bytes = bytesOf(row);
  s.input.write(Buffer.concat([bytes, Buffer.from('\n')]));
  const id = `sentinel-${++sentinel}`;
  s.send({ jsonrpc: '2.0', id, method: 'ping' });
  await until(() => s.lines.slice(from).some((l) => l.id === id), 10_000, `stdio: the answer after "${row.name}"`);
  const got = s.lines.slice(from).filter((l) => l.id !== id);
  expect(got.length, `stdio: at most one answer to "${row.name}"`).toBeLessThanOrEqual(1);
  if (got.length === 0) return { answer: 'none', json: undefined };
  return { answer: shape(got[0]!), json: JSON.stringify(got[0]) };
}

describe('one table of messages: the same JSON-RPC answers over stdio and HTTP (node:http, uWS)', () => {
  const servers = new Map<string, { ts: TestServer; session: string }>();
  let stdio: Stdio;
  const answers = new Map<string, Map<string, Got>>();

  beforeAll(async () => {
    for (const http of kAdapters) {
      const ts = await startServer({ http, workers: 1, maxBodyBytes: kMaxBytes });
      const res = await fetch(ts.address.url, {
        method: 'POST', headers: { 'content-type': 'application/json', accept: kAccept },
        body: JSON.stringify(legacy(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } })),
      });
      servers.set(http, { ts, session: res.headers.get('mcp-session-id')! });
    }
    stdio = stdioServer({ tools: kToolsModule, maxBodyBytes: kMaxBytes });
    stdio.send(legacy(0, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }));
    await until(() => stdio.lines.some((l) => l.id === 0), 10_000, 'stdio initialize');
  }, 60_000);

  afterAll(async () => {
    stdio?.input.end();
    await stdio?.done;
    for (const { ts } of servers.values()) await ts.close();
  });

  if (!kUwsLoads) it.skip(`uWS — SKIPPED: uWebSockets.js cannot load under Node ${process.versions.node}: ${kUwsUnavailable ?? ''}`, () => {});

  it.each(rows)('$name', async (row) => {
    const got = new Map<string, Got>();
    for (const [http, { ts, session }] of servers) got.set(http, await overHttp(ts.address.url, session, row));
    got.set('stdio', await overStdio(stdio, row));
    answers.set(row.name, got);
    for (const http of servers.keys()) {
      expect({ http, status: got.get(http)!.status, answer: got.get(http)!.answer }).toEqual({ http, status: row.status, answer: row.answer });
    }
    expect(got.get('stdio')!.answer).toEqual(row.stdio?.answer ?? row.answer);
    if (row.stdio?.logged !== undefined) expect(stdio.logs.some((l) => l.includes(row.stdio!.logged!))).toBe(true);
  });

  it('the answers are the same JSON on every transport, except where a row declares why not', () => {
    expect(answers.size).toBe(rows.length);
    const differ: string[] = [];
    for (const row of rows) {
      const got = answers.get(row.name)!;
      const texts = [...got].map(([where, g]) => [where, g.json === undefined ? undefined : JSON.parse(g.json)] as const);
      const http = texts.filter(([where]) => where !== 'stdio');
      // Every adapter gives the very same answer to every row: there is no HTTP reason for them to differ.
      for (const [, body] of http) expect(body, row.name).toEqual(http[0]![1]);
      const stdioBody = texts.find(([where]) => where === 'stdio')![1];
      if (row.stdio === undefined) {
        expect(stdioBody, row.name).toEqual(http[0]![1]);
      } else {
        // A declared difference must still be one (a stale declaration would hide a change).
        expect(stdioBody, row.name).not.toEqual(http[0]![1]);
        differ.push(row.name);
      }
    }
    expect(differ.length).toBe(4);
  });
});
