// Hostile and malformed requests against one real server (uWS, 2 HTTP workers). Each row states the
// exact HTTP status and, where there is a body, the JSON-RPC error code and id. After the table the
// server must still serve a normal tools/call, and nothing may have been answered with a 500.
import { request as httpRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialize, kAccept, modernMeta, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kMaxBody = 64 * 1024;
const kModern = '2026-07-28';

type Id = string | number | null;

interface Case {
  name: string;
  /** HTTP method (default POST). */
  verb?: string;
  /** Request path instead of the MCP endpoint's. */
  path?: string;
  /** Legacy session header: a live session (default), none, or an id the server never issued. */
  session?: 'valid' | 'none' | 'unknown';
  /** Extra or overriding headers; a value of null removes a default header. */
  headers?: Record<string, string | null>;
  /** A value sent as JSON.stringify(json). */
  json?: unknown;
  /** Raw body bytes/text, sent as is (for bodies JSON.stringify cannot produce). */
  raw?: string | Uint8Array;
  /** Send through node:http with chunked transfer encoding (no Content-Length). */
  chunked?: boolean;
  status: number;
  /** Expected JSON-RPC error code; the response must then be a JSON-RPC error with `id`. */
  code?: number;
  id?: Id;
  /** Expect an empty body (202, 204, 405). */
  empty?: boolean;
  check?: (body: Record<string, any>) => void;
}

interface Outcome {
  status: number;
  headers: Record<string, string>;
  text: string;
}

let ts: TestServer;
let url: string;
let session: string;
const outcomes: { name: string; status: number }[] = [];

beforeAll(async () => {
  ts = await startServer({ maxBodyBytes: kMaxBody });
  url = ts.address.url;
  session = await initialize(url);
});

afterAll(async () => {
  await ts?.close();
});

// ---------------------------------------------------------------------------------------------
// Request builders

const legacy = (id: Id | undefined, method: string, params?: unknown): Record<string, unknown> => {
  const m: Record<string, unknown> = { jsonrpc: '2.0', method };
  if (id !== undefined) m.id = id;
  if (params !== undefined) m.params = params;
  return m;
};

const echoCall = (id: Id, text = 'hi'): Record<string, unknown> => legacy(id, 'tools/call', { name: 'echo', arguments: { text } });

/** Headers of a 2026-07-28 request (Mcp-Name only when given). */
const modernHeaders = (method: string, name?: string, version = kModern): Record<string, string> => {
  const h: Record<string, string> = { 'mcp-protocol-version': version, 'mcp-method': method };
  if (name !== undefined) h['mcp-name'] = name;
  return h;
};

const modern = (id: Id, method: string, params: Record<string, unknown> = {}, meta: Record<string, unknown> = modernMeta()): Record<string, unknown> =>
  ({ jsonrpc: '2.0', id, method, params: { ...params, _meta: meta } });

/** A JSON request whose serialised form is a little over `bytes`. */
const padded = (bytes: number): string => JSON.stringify(legacy(1, 'tools/call', { name: 'echo', arguments: { text: 'x'.repeat(bytes) } }));

const textOf = (body: Record<string, any>): string => body.result?.content?.[0]?.text;

// ---------------------------------------------------------------------------------------------
// Transport

/** One request through node:http (chunked bodies; also robust when the server answers early and closes). */
function rawRequest(target: string, verb: string, headers: Record<string, string>, body: Uint8Array | undefined, chunked: boolean): Promise<Outcome> {
  return new Promise((resolve, reject) => {
    const req = httpRequest(target, { method: verb, headers, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({
        status: res.statusCode ?? 0,
        headers: Object.fromEntries(Object.entries(res.headers).map(([k, v]) => [k, String(v)])),
        text: Buffer.concat(chunks).toString('utf8'),
      }));
      res.on('error', reject);
    });
    // The server may answer 413 and close while we are still sending: that is not a failure here
    // unless no response arrives at all.
    req.on('error', (error) => setTimeout(() => reject(error), 200));
    req.setTimeout(10_000, () => req.destroy(new Error('no response within 10 s')));
    if (body === undefined) {
      req.end();
    } else if (!chunked) {
      req.end(body);
    } else {
      // Several chunks, without Content-Length: the limit must be enforced while streaming.
      let offset = 0;
      const step = 8 * 1024;
      const pump = () => {
        while (offset < body.length) {
          const piece = body.subarray(offset, offset + step);
          offset += step;
          if (!req.write(piece)) { req.once('drain', pump); return; }
        }
        req.end();
      };
      pump();
    }
  });
}

async function send(c: Case): Promise<Outcome> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: kAccept };
  if (c.session === undefined || c.session === 'valid') headers['mcp-session-id'] = session;
  else if (c.session === 'unknown') headers['mcp-session-id'] = 'no-such-session-0123456789abcdef';
  for (const [k, v] of Object.entries(c.headers ?? {})) {
    if (v === null) delete headers[k];
    else headers[k] = v;
  }
  const verb = c.verb ?? 'POST';
  const body = c.raw !== undefined ? (typeof c.raw === 'string' ? Buffer.from(c.raw, 'utf8') : c.raw)
    : c.json !== undefined ? Buffer.from(JSON.stringify(c.json), 'utf8') : undefined;
  const target = c.path === undefined ? url : new URL(c.path, url).href;
  if (c.chunked === true) return rawRequest(target, verb, headers, body, true);
  if (body !== undefined) headers['content-length'] = String(body.length);
  return rawRequest(target, verb, headers, body, false);
}

function parse(outcome: Outcome): Record<string, any> {
  try {
    return JSON.parse(outcome.text) as Record<string, any>;
  } catch {
    throw new Error(`not JSON (status ${outcome.status}): ${JSON.stringify(outcome.text.slice(0, 200))}`);
  }
}

// ---------------------------------------------------------------------------------------------
// The table

const s = (n: number, ch = 'a') => ch.repeat(n);

const cases: Case[] = [
  // --- Body is not a usable JSON-RPC message
  { name: 'invalid JSON', raw: '{"jsonrpc":"2.0","id":1,"method":', status: 400, code: -32700, id: null },
  { name: 'empty body', raw: '', status: 400, code: -32700, id: null },
  { name: 'trailing garbage after JSON', raw: '{"jsonrpc":"2.0","id":1,"method":"ping"} x', status: 400, code: -32700, id: null },
  {
    name: 'broken UTF-8 bytes inside a string',
    raw: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"tools/call","params":{"name":"echo","arguments":{"text":"'), Buffer.from([0xff, 0xfe, 0xc3]), Buffer.from('"}}}')]),
    status: 400, code: -32700, id: null,
  },
  { name: 'overlong UTF-8 encoding of "/"', raw: Buffer.concat([Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping","x":"'), Buffer.from([0xc0, 0xaf]), Buffer.from('"}')]), status: 400, code: -32700, id: null },
  { name: 'UTF-8 BOM before the JSON', raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')]), status: 400, code: -32700, id: null },
  { name: 'JSON array (batch)', json: [legacy(1, 'ping'), legacy(2, 'ping')], status: 400, code: -32600, id: null },
  { name: 'empty JSON array', raw: '[]', status: 400, code: -32600, id: null },
  { name: 'number message', raw: '42', status: 400, code: -32600, id: null },
  { name: 'string message', raw: '"ping"', status: 400, code: -32600, id: null },
  { name: 'null message', raw: 'null', status: 400, code: -32600, id: null },
  { name: 'boolean message', raw: 'true', status: 400, code: -32600, id: null },

  // --- Envelope
  { name: 'jsonrpc missing (id echoed)', json: { id: 7, method: 'ping' }, status: 400, code: -32600, id: 7 },
  { name: 'jsonrpc "1.0" (id echoed)', json: { jsonrpc: '1.0', id: 'seven', method: 'ping' }, status: 400, code: -32600, id: 'seven' },
  { name: 'jsonrpc 2 (a number)', json: { jsonrpc: 2, id: 8, method: 'ping' }, status: 400, code: -32600, id: 8 },
  { name: 'method missing', json: { jsonrpc: '2.0', id: 9 }, status: 400, code: -32600, id: 9 },
  { name: 'method not a string', json: { jsonrpc: '2.0', id: 10, method: 42 }, status: 400, code: -32600, id: 10 },
  { name: 'method null', json: { jsonrpc: '2.0', id: 11, method: null }, status: 400, code: -32600, id: 11 },
  { name: 'method empty', json: legacy(12, ''), status: 400, code: -32600, id: 12 },
  { name: 'method of 300 characters', json: legacy(13, s(300)), status: 400, code: -32600, id: 13 },
  { name: 'method of 256 characters is only unknown', json: legacy(14, s(256)), status: 200, code: -32601, id: 14 },
  { name: 'method missing and a bad id', json: { jsonrpc: '2.0', id: 1.5 }, status: 400, code: -32600, id: null },

  // --- Unusable ids: -32600 with id null
  { name: 'id float', raw: '{"jsonrpc":"2.0","id":1.5,"method":"ping"}', status: 400, code: -32600, id: null },
  { name: 'id object', json: { jsonrpc: '2.0', id: { a: 1 }, method: 'ping' }, status: 400, code: -32600, id: null },
  { name: 'id array', json: { jsonrpc: '2.0', id: [1], method: 'ping' }, status: 400, code: -32600, id: null },
  { name: 'id boolean', json: { jsonrpc: '2.0', id: true, method: 'ping' }, status: 400, code: -32600, id: null },
  { name: 'id null', json: { jsonrpc: '2.0', id: null, method: 'ping' }, status: 400, code: -32600, id: null },
  { name: 'id string of 257 bytes', json: legacy(s(257), 'ping'), status: 400, code: -32600, id: null },
  { name: 'id string of 258 UTF-8 bytes in 86 characters', json: legacy(s(86, '€'), 'ping'), status: 400, code: -32600, id: null },
  { name: 'id 2**60', raw: '{"jsonrpc":"2.0","id":1152921504606846976,"method":"ping"}', status: 400, code: -32600, id: null },
  { name: 'id 2**53 (not a safe integer)', raw: '{"jsonrpc":"2.0","id":9007199254740992,"method":"ping"}', status: 400, code: -32600, id: null },
  { name: 'id 1e400 (parses to Infinity)', raw: '{"jsonrpc":"2.0","id":1e400,"method":"ping"}', status: 400, code: -32600, id: null },
  // ...and the usable edges still work.
  { name: 'id string of exactly 256 bytes', json: legacy(s(256), 'ping'), status: 200, check: (b) => { expect(b.id).toBe(s(256)); expect(b.result).toEqual({}); } },
  { name: 'id string of 256 UTF-8 bytes (85 × € + a)', json: legacy(`${s(85, '€')}a`, 'ping'), status: 200, check: (b) => expect(b.id).toBe(`${s(85, '€')}a`) },
  { name: 'id 0', json: legacy(0, 'ping'), status: 200, check: (b) => expect(b.id).toBe(0) },
  { name: 'id empty string', json: legacy('', 'ping'), status: 200, check: (b) => expect(b.id).toBe('') },
  { name: 'id -(2**53 - 1)', json: legacy(-(2 ** 53 - 1), 'ping'), status: 200, check: (b) => expect(b.id).toBe(-(2 ** 53 - 1)) },
  { name: 'id a lone surrogate', raw: '{"jsonrpc":"2.0","id":"\\ud800","method":"ping"}', status: 200, check: (b) => expect(b.id).toBe('\ud800') },

  // --- params must be an object: -32602 with the request's id
  { name: 'params array', json: legacy(20, 'tools/list', []), status: 400, code: -32602, id: 20 },
  { name: 'params string', json: legacy(21, 'tools/list', 'x'), status: 400, code: -32602, id: 21 },
  { name: 'params null', json: legacy(22, 'tools/list', null), status: 400, code: -32602, id: 22 },
  { name: 'params number', json: legacy(23, 'tools/call', 5), status: 400, code: -32602, id: 23 },

  // --- Methods and tools
  { name: 'legacy: unknown method', json: legacy(30, 'no/such/method'), status: 200, code: -32601, id: 30 },
  { name: 'legacy: method named like an Object.prototype member', json: legacy(31, 'constructor'), status: 200, code: -32601, id: 31 },
  { name: 'legacy: method __proto__', json: legacy(32, '__proto__'), status: 200, code: -32601, id: 32 },
  { name: 'legacy: server/discover is modern-only', json: legacy(33, 'server/discover'), status: 200, code: -32601, id: 33 },
  { name: 'modern: unknown method', headers: modernHeaders('no/such/method'), json: modern(34, 'no/such/method'), status: 404, code: -32601, id: 34 },
  { name: 'modern: ping is gone', headers: modernHeaders('ping'), json: modern(35, 'ping'), status: 404, code: -32601, id: 35 },
  { name: 'modern: initialize body is legacy, but with modern headers it is still one initialize', headers: modernHeaders('initialize'), json: modern(36, 'initialize'), status: 200, check: (b) => expect(b.result.protocolVersion).toBe('2025-11-25') },
  { name: 'legacy: unknown tool', json: legacy(40, 'tools/call', { name: 'nope', arguments: {} }), status: 200, code: -32602, id: 40 },
  { name: 'legacy: tool named constructor', json: legacy(41, 'tools/call', { name: 'constructor', arguments: {} }), status: 200, code: -32602, id: 41 },
  { name: 'legacy: tools/call without a name', json: legacy(42, 'tools/call', { arguments: {} }), status: 200, code: -32602, id: 42 },
  { name: 'legacy: tools/call arguments an array', json: legacy(43, 'tools/call', { name: 'echo', arguments: ['hi'] }), status: 200, code: -32602, id: 43 },
  { name: 'modern: unknown tool', headers: modernHeaders('tools/call', 'nope'), json: modern(44, 'tools/call', { name: 'nope', arguments: {} }), status: 200, code: -32602, id: 44 },
  {
    name: 'arguments failing the schema (text not a string) → isError result',
    json: legacy(45, 'tools/call', { name: 'echo', arguments: { text: 5 } }), status: 200,
    check: (b) => { expect(b.id).toBe(45); expect(b.error).toBeUndefined(); expect(b.result.isError).toBe(true); },
  },
  {
    name: 'arguments failing the schema (required text missing) → isError result',
    json: legacy(46, 'tools/call', { name: 'echo', arguments: {} }), status: 200,
    check: (b) => { expect(b.result.isError).toBe(true); expect(textOf(b)).toMatch(/text/); },
  },
  {
    name: 'modern: arguments failing the schema → isError result',
    headers: modernHeaders('tools/call', 'echo'), json: modern(47, 'tools/call', { name: 'echo', arguments: { text: ['x'] } }), status: 200,
    check: (b) => { expect(b.result.isError).toBe(true); expect(b.result.resultType).toBe('complete'); },
  },

  // --- Body size: 413 whether the length is declared or only discovered while streaming
  { name: 'body over the limit, declared Content-Length', raw: padded(kMaxBody + 10), status: 413, code: -32600, id: null },
  { name: 'body over the limit, chunked without Content-Length', raw: padded(kMaxBody + 10), chunked: true, status: 413, code: -32600, id: null },
  { name: 'body four times the limit, chunked', raw: padded(4 * kMaxBody), chunked: true, status: 413, code: -32600, id: null },
  { name: 'body just under the limit, chunked, is served', raw: padded(kMaxBody - 200), chunked: true, status: 200, check: (b) => expect(textOf(b)).toHaveLength(kMaxBody - 200) },
  { name: 'Content-Length far over the limit (nothing sent)', headers: { 'content-length': String(2 ** 40) }, raw: undefined, status: 413, code: -32600, id: null },

  // --- Content-Type, Accept, Origin, HTTP method
  { name: 'Content-Type text/plain', headers: { 'content-type': 'text/plain' }, json: echoCall(50), status: 415, code: -32600, id: null },
  { name: 'Content-Type missing', headers: { 'content-type': null }, json: echoCall(51), status: 415, code: -32600, id: null },
  { name: 'Content-Type application/x-www-form-urlencoded', headers: { 'content-type': 'application/x-www-form-urlencoded' }, json: echoCall(52), status: 415, code: -32600, id: null },
  { name: 'Content-Type with charset is fine', headers: { 'content-type': 'application/json; charset=utf-8' }, json: echoCall(53), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Accept: text/html only', headers: { accept: 'text/html' }, json: echoCall(54), status: 406, code: -32600, id: null },
  { name: 'Accept: application/json only gets JSON', headers: { accept: 'application/json' }, json: echoCall(55), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Origin http://evil.example', headers: { origin: 'http://evil.example' }, json: echoCall(56), status: 403, code: -32600, id: null },
  { name: 'Origin http://localhost.evil.example', headers: { origin: 'http://localhost.evil.example' }, json: echoCall(57), status: 403, code: -32600, id: null },
  { name: 'Origin null (sandboxed page)', headers: { origin: 'null' }, json: echoCall(58), status: 403, code: -32600, id: null },
  { name: 'Origin file://localhost', headers: { origin: 'file://localhost' }, json: echoCall(59), status: 403, code: -32600, id: null },
  { name: 'Origin http://evil.example on a GET is still 403', verb: 'GET', headers: { origin: 'http://evil.example' }, status: 403, code: -32600, id: null },
  { name: 'Origin http://localhost:1234 is accepted', headers: { origin: 'http://localhost:1234' }, json: echoCall(60), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Origin http://127.0.0.1:9 is accepted', headers: { origin: 'http://127.0.0.1:9' }, json: echoCall(61), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Origin http://[::1]:8080 is accepted', headers: { origin: 'http://[::1]:8080' }, json: echoCall(62), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'GET → 405', verb: 'GET', headers: { accept: 'text/event-stream' }, status: 405, empty: true },
  { name: 'PUT → 405', verb: 'PUT', json: echoCall(63), status: 405, empty: true },
  { name: 'POST to another path → 404', path: '/other', json: echoCall(64), status: 404 },
  { name: 'POST to the endpoint path with a query string is served', path: '/mcp?x=1', json: echoCall(65), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },

  // --- Legacy sessions and version header
  { name: 'legacy: no Mcp-Session-Id', session: 'none', json: echoCall(70), status: 400, code: -32600, id: 70 },
  { name: 'legacy: unknown Mcp-Session-Id', session: 'unknown', json: echoCall(71), status: 404, code: -32600, id: 71 },
  { name: 'legacy: notification without Mcp-Session-Id', session: 'none', json: legacy(undefined, 'notifications/initialized'), status: 400, code: -32600, id: null },
  { name: 'legacy: DELETE without Mcp-Session-Id', verb: 'DELETE', session: 'none', status: 400, code: -32600, id: null },
  { name: 'legacy: DELETE of an unknown session', verb: 'DELETE', session: 'unknown', status: 404, code: -32600, id: null },
  { name: 'legacy: initialize with an unsupported MCP-Protocol-Version header', session: 'none', headers: { 'mcp-protocol-version': '1999-01-01' }, json: legacy(72, 'initialize', { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } }), status: 400, code: -32600, id: 72 },
  // Without _meta, an unknown header version makes the endpoint treat the request as 2026-07-28, whose
  // first complaint is the missing _meta (-32602). The status is the 400 the legacy rule requires.
  { name: 'legacy: tools/list with an unsupported MCP-Protocol-Version header', headers: { 'mcp-protocol-version': '1999-01-01' }, json: legacy(73, 'tools/list'), status: 400, code: -32602, id: 73 },
  { name: 'legacy: a supported older MCP-Protocol-Version header is fine', headers: { 'mcp-protocol-version': '2025-06-18' }, json: echoCall(74), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },

  // --- 2026-07-28 header and _meta rules
  { name: 'modern: MCP-Protocol-Version header missing', headers: { 'mcp-method': 'tools/list' }, json: modern(80, 'tools/list'), status: 400, code: -32020, id: 80 },
  { name: 'modern: header 2025-11-25 ≠ _meta 2026-07-28', headers: modernHeaders('tools/list', undefined, '2025-11-25'), json: modern(81, 'tools/list'), status: 400, code: -32020, id: 81 },
  { name: 'modern: header 2026-07-28 ≠ _meta v999 (mismatch before support)', headers: modernHeaders('tools/list'), json: modern(82, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': 'v999' })), status: 400, code: -32020, id: 82 },
  {
    name: 'modern: header = _meta = v999 → unsupported version',
    headers: modernHeaders('tools/list', undefined, 'v999'), json: modern(83, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': 'v999' })),
    status: 400, code: -32022, id: 83,
    check: (b) => {
      expect(b.error.data.requested).toBe('v999');
      expect(b.error.data.supported).toEqual(expect.arrayContaining([kModern, '2025-11-25']));
    },
  },
  { name: 'modern: Mcp-Method missing', headers: { 'mcp-protocol-version': kModern }, json: modern(84, 'tools/list'), status: 400, code: -32020, id: 84 },
  { name: 'modern: Mcp-Method ≠ method', headers: modernHeaders('tools/call'), json: modern(85, 'tools/list'), status: 400, code: -32020, id: 85 },
  { name: 'modern: Mcp-Method differs in case only', headers: modernHeaders('Tools/List'), json: modern(86, 'tools/list'), status: 400, code: -32020, id: 86 },
  { name: 'modern: Mcp-Name missing', headers: modernHeaders('tools/call'), json: modern(87, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), status: 400, code: -32020, id: 87 },
  { name: 'modern: Mcp-Name ≠ params.name', headers: modernHeaders('tools/call', 'whoami'), json: modern(88, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), status: 400, code: -32020, id: 88 },
  { name: 'modern: Mcp-Name as undecodable base64 sentinel', headers: modernHeaders('tools/call', '=?base64?/w==?='), json: modern(89, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), status: 400, code: -32020, id: 89 },
  { name: 'modern: Mcp-Name base64-encoded is decoded', headers: modernHeaders('tools/call', `=?base64?${Buffer.from('echo').toString('base64')}?=`), json: modern(90, 'tools/call', { name: 'echo', arguments: { text: 'hi' } }), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'modern: clientCapabilities missing', headers: modernHeaders('tools/list'), json: modern(91, 'tools/list', {}, { 'io.modelcontextprotocol/protocolVersion': kModern }), status: 400, code: -32602, id: 91 },
  { name: 'modern: clientCapabilities an array', headers: modernHeaders('tools/list'), json: modern(92, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/clientCapabilities': [] })), status: 400, code: -32602, id: 92 },
  { name: 'modern: _meta protocolVersion not a string', headers: modernHeaders('tools/list'), json: modern(93, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': 20260728 })), status: 400, code: -32602, id: 93 },
  { name: 'modern: header but no _meta at all', headers: modernHeaders('tools/list'), json: legacy(94, 'tools/list'), status: 400, code: -32602, id: 94 },
  { name: 'modern: a client-sent response is refused', headers: modernHeaders('tools/list'), json: { jsonrpc: '2.0', id: 95, result: {}, params: { _meta: modernMeta() } }, status: 400, code: -32600, id: null },
  { name: 'modern: ping in the modern era', headers: modernHeaders('ping'), json: modern(96, 'ping'), status: 404, code: -32601, id: 96 },
  { name: 'modern: tools/list works (control)', headers: modernHeaders('tools/list'), json: modern(97, 'tools/list'), status: 200, check: (b) => expect(b.result.tools.map((t: { name: string }) => t.name)).toContain('echo') },

  // --- notifications/cancelled
  { name: 'cancelled: params an array', json: legacy(undefined, 'notifications/cancelled', [1]), status: 400, code: -32602, id: null },
  { name: 'cancelled: params a string', json: legacy(undefined, 'notifications/cancelled', 'x'), status: 400, code: -32602, id: null },
  { name: 'cancelled: requestId {}', json: legacy(undefined, 'notifications/cancelled', { requestId: {} }), status: 400, code: -32602, id: null },
  { name: 'cancelled: requestId a float', json: legacy(undefined, 'notifications/cancelled', { requestId: 1.5 }), status: 400, code: -32602, id: null },
  { name: 'cancelled: requestId of 257 bytes', json: legacy(undefined, 'notifications/cancelled', { requestId: s(257) }), status: 400, code: -32602, id: null },
  { name: 'cancelled: requestId not in flight', json: legacy(undefined, 'notifications/cancelled', { requestId: 'never-sent', reason: 'x' }), status: 202, empty: true },
  { name: 'cancelled: requestId null is ignored', json: legacy(undefined, 'notifications/cancelled', { requestId: null }), status: 202, empty: true },
  { name: 'cancelled: no params is ignored', json: legacy(undefined, 'notifications/cancelled'), status: 202, empty: true },
  { name: 'cancelled: reason an object of hostile keys', raw: '{"jsonrpc":"2.0","method":"notifications/cancelled","params":{"requestId":"gone","reason":{"__proto__":{"polluted":1}}}}', status: 202, empty: true },
  { name: 'a client-sent response in the legacy era is accepted', json: { jsonrpc: '2.0', id: 98, result: {} }, status: 202, empty: true },
  { name: 'an unknown notification is accepted', json: legacy(undefined, 'notifications/whatever', { x: 1 }), status: 202, empty: true },

  // --- Hostile keys: JSON.parse makes "__proto__" an own property; nothing may be polluted
  {
    name: '__proto__ and constructor keys in params and arguments',
    raw: '{"jsonrpc":"2.0","id":100,"method":"tools/call","params":{"__proto__":{"name":"whoami"},"constructor":{"prototype":{"polluted":1}},"name":"echo","arguments":{"__proto__":{"text":"from-proto"},"constructor":{"prototype":{"polluted":1}},"text":"own"}}}',
    status: 200, check: (b) => { expect(b.id).toBe(100); expect(textOf(b)).toBe('own'); expect(b.result.isError).toBeUndefined(); },
  },
  {
    name: '__proto__ only: required text must not come from a prototype',
    raw: '{"jsonrpc":"2.0","id":101,"method":"tools/call","params":{"name":"echo","arguments":{"__proto__":{"text":"from-proto"}}}}',
    status: 200, check: (b) => { expect(b.result.isError).toBe(true); expect(JSON.stringify(b)).not.toContain('from-proto'); },
  },
  {
    name: '__proto__ as params.name is an unknown tool',
    raw: '{"jsonrpc":"2.0","id":102,"method":"tools/call","params":{"name":"__proto__","arguments":{}}}',
    status: 200, code: -32602, id: 102,
  },
  {
    name: '__proto__ in _meta and as progressToken',
    raw: '{"jsonrpc":"2.0","id":103,"method":"tools/call","params":{"name":"echo","arguments":{"text":"meta"},"_meta":{"__proto__":{"progressToken":"x"},"progressToken":"__proto__"}}}',
    status: 200, check: (b) => expect(textOf(b)).toBe('meta'),
  },
  {
    name: 'modern: __proto__ inside _meta does not supply the protocol version',
    headers: modernHeaders('tools/list'),
    raw: '{"jsonrpc":"2.0","id":104,"method":"tools/list","params":{"_meta":{"__proto__":{"io.modelcontextprotocol/protocolVersion":"2026-07-28"},"io.modelcontextprotocol/clientCapabilities":{}}}}',
    status: 400, code: -32602, id: 104,
  },
  { name: 'id "__proto__" is an ordinary string id', json: echoCall('__proto__'), status: 200, check: (b) => { expect(b.id).toBe('__proto__'); expect(textOf(b)).toBe('hi'); } },
  {
    name: 'deeply nested arguments (20 000 levels)',
    raw: `{"jsonrpc":"2.0","id":105,"method":"tools/call","params":{"name":"echo","arguments":{"text":"deep","x":${'['.repeat(20_000)}${']'.repeat(20_000)}}}}`,
    status: 200, check: (b) => expect(textOf(b)).toBe('deep'),
  },
  {
    name: 'deeply nested message that is not an object (30 000 levels)',
    raw: `${'['.repeat(30_000)}${']'.repeat(30_000)}`,
    status: 400, code: -32600, id: null,
  },
];

describe('malformed and hostile requests (one server)', () => {
  it.each(cases)('$name → $status', async (c) => {
    const outcome = await send(c);
    outcomes.push({ name: c.name, status: outcome.status });
    expect(outcome.status, outcome.text.slice(0, 300)).toBe(c.status);
    if (c.empty === true) expect(outcome.text).toBe('');
    if (c.code !== undefined) {
      expect(outcome.headers['content-type']).toMatch(/^application\/json/);
      const body = parse(outcome);
      expect(body.jsonrpc).toBe('2.0');
      expect(body.error?.code, outcome.text).toBe(c.code);
      expect(typeof body.error.message).toBe('string');
      expect(body).toHaveProperty('id');
      expect(body.id).toStrictEqual(c.id);
      expect(body.result).toBeUndefined();
    }
    if (c.check !== undefined) {
      // 200 results arrive as JSON or, with text/event-stream accepted, possibly as SSE.
      const text = outcome.headers['content-type']?.startsWith('text/event-stream')
        ? outcome.text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((l) => l !== '').at(-1) ?? ''
        : outcome.text;
      c.check(JSON.parse(text) as Record<string, any>);
    }
  });

  it('the server still answers a normal tools/call after all that, and nothing got a 500', async () => {
    expect(outcomes.length).toBe(cases.length);
    expect(outcomes.filter((o) => o.status >= 500)).toEqual([]);
    // Legacy, with the session, and modern: both eras still serve, on both workers.
    const seen = new Set<string>();
    for (let i = 0; i < 8; i++) {
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': session },
        body: JSON.stringify(echoCall(1000 + i, `still here ${i}`)),
      });
      expect(res.status).toBe(200);
      seen.add(res.headers.get('sluice-worker') ?? '');
      const body = await res.json() as Record<string, any>;
      expect(body).toEqual({ jsonrpc: '2.0', id: 1000 + i, result: { content: [{ type: 'text', text: `still here ${i}` }] } });
    }
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json', ...modernHeaders('tools/call', 'echo') },
      body: JSON.stringify(modern(2000, 'tools/call', { name: 'echo', arguments: { text: 'modern still here' } })),
    });
    expect(res.status).toBe(200);
    const body = await res.json() as Record<string, any>;
    expect(body.id).toBe(2000);
    expect(textOf(body)).toBe('modern still here');
    // No pollution leaked into this thread's prototypes either.
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
    // No unexpected error was logged by any worker.
    expect(ts.logs.filter((l) => /unexpected error|failed:|crashed|exited/.test(l))).toEqual([]);
  });
});
