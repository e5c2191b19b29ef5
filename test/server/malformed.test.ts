// Hostile and malformed requests against one real server (2 HTTP workers) per adapter: uWS (skipped,
// with the reason, where it cannot load) and node:http. Each row states the exact HTTP status and,
// where there is a body, the JSON-RPC error code and id. After the table the server must still serve
// a normal tools/call, and nothing may have been answered with a 500.
import { request as httpRequest } from 'node:http';
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { initialize, kAccept, modernMeta, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { adapters, itUws } from '../helpers/adapters.js';

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
  /** Send the body with chunked transfer encoding, no Content-Length (raw socket). */
  chunked?: boolean;
  /** Declare this Content-Length and send no body at all (raw socket). */
  declaredLength?: number;
  /** Send through a raw socket even with an ordinary body (the server may answer before reading it). */
  socket?: boolean;
  /** A connection closed without any response is acceptable too (HTTP parser-level refusals). */
  orClosed?: boolean;
  status: number;
  /** Expected JSON-RPC error code; the response must then be a JSON-RPC error with `id`. */
  code?: number;
  id?: Id;
  /** Expect an empty body (202, 204, 405). */
  empty?: boolean;
  /** Expected Content-Type of the response (its media type). */
  contentType?: string;
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

/** One request through node:http (the ordinary path). */
function httpRequestOnce(target: string, verb: string, headers: Record<string, string>, body: Uint8Array | undefined): Promise<Outcome> {
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
    req.on('error', reject);
    req.setTimeout(10_000, () => req.destroy(new Error('no response within 10 s')));
    req.end(body);
  });
}

/**
 * One request written byte by byte on a raw socket: for framing node:http will not produce (chunked
 * bodies over the limit, Content-Length without a body, broken framing), and for answers that come
 * while the body is still being sent (node:http turns those into EPIPE). Resolves `closed` when the
 * server closes the connection without answering.
 */
function socketRequest(target: string, head: string, pieces: readonly Uint8Array[], halfClose = false): Promise<Outcome | 'closed'> {
  const { hostname, port } = new URL(target);
  return new Promise((resolve, reject) => {
    const sock = connect(Number(port), hostname);
    let data = Buffer.alloc(0);
    let settled = false;
    const finish = (value: Outcome | 'closed' | Error) => {
      if (settled) return;
      settled = true;
      clearTimeout(timer);
      sock.destroy();
      if (value instanceof Error) reject(value);
      else resolve(value);
    };
    const timer = setTimeout(() => finish(new Error('no response and no close within 10 s')), 10_000);
    const tryParse = (atClose: boolean) => {
      const split = data.indexOf('\r\n\r\n');
      if (split === -1) {
        if (atClose) finish(data.length === 0 ? 'closed' : new Error(`truncated response head: ${JSON.stringify(data.toString('latin1').slice(0, 200))}`));
        return;
      }
      const lines = data.subarray(0, split).toString('latin1').split('\r\n');
      const status = Number(/^HTTP\/1\.[01] (\d{3})/.exec(lines[0])?.[1] ?? 0);
      const headers: Record<string, string> = {};
      for (const line of lines.slice(1)) {
        const colon = line.indexOf(':');
        headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
      }
      const rest = data.subarray(split + 4);
      const length = headers['content-length'] === undefined ? undefined : Number(headers['content-length']);
      if (length !== undefined && rest.length >= length) finish({ status, headers, text: rest.subarray(0, length).toString('utf8') });
      else if (atClose) finish({ status, headers, text: rest.toString('utf8') });
    };
    sock.on('data', (chunk: Buffer) => { data = Buffer.concat([data, chunk]); tryParse(false); });
    sock.on('close', () => tryParse(true));
    // The server may answer and close while we still write: a reset after its answer is fine.
    sock.on('error', () => { /* 'close' follows */ });
    // Write the body a piece at a time, yielding to the event loop in between, and stop as soon as
    // the server has answered: Node destroys a socket on EPIPE without reading what is still
    // buffered, which would lose an early 413 that a careful client (curl, Python) does receive.
    sock.on('connect', async () => {
      sock.write(head);
      for (const piece of pieces) {
        if (sock.destroyed || data.length > 0) break;
        sock.write(piece);
        await new Promise((r) => setTimeout(r, 1));
      }
      // uWS leaves a connection it cannot parse open until its idle timeout (10 s); ending our side
      // makes it close at once.
      if (halfClose && !sock.destroyed) sock.end();
    });
  });
}

/** The pieces of `body` in HTTP/1.1 chunked encoding, 8 KiB a chunk. */
function chunkedPieces(body: Uint8Array): Uint8Array[] {
  const pieces: Uint8Array[] = [];
  for (let offset = 0; offset < body.length; offset += 8192) {
    const piece = body.subarray(offset, offset + 8192);
    pieces.push(Buffer.from(`${piece.length.toString(16)}\r\n`), piece, Buffer.from('\r\n'));
  }
  pieces.push(Buffer.from('0\r\n\r\n'));
  return pieces;
}

async function send(c: Case): Promise<Outcome | 'closed'> {
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
  if (c.chunked !== true && c.declaredLength === undefined && c.socket !== true) {
    if (body !== undefined) headers['content-length'] = String(body.length);
    return httpRequestOnce(target, verb, headers, body);
  }
  const { host, pathname, search } = new URL(target);
  if (c.chunked === true) headers['transfer-encoding'] = 'chunked';
  else headers['content-length'] = String(c.declaredLength ?? body?.length ?? 0);
  const head = `${verb} ${pathname}${search} HTTP/1.1\r\nhost: ${host}\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n`;
  const pieces = body === undefined ? [] : c.chunked === true ? chunkedPieces(body) : c.declaredLength === undefined ? [body] : [];
  return socketRequest(target, head, pieces);
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
  // RFC 8259 §8.1: a parser MAY ignore a BOM; TextDecoder does.
  { name: 'UTF-8 BOM before the JSON is ignored', raw: Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}')]), status: 200, check: (b) => expect(b.result).toEqual({}) },
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
  // Per-request _meta makes a request modern whatever its method, and the modern era has no
  // initialize (the conformance suite's sep-2575-http-server-method-not-found-404-initialize).
  { name: 'modern headers on initialize', session: 'none', headers: modernHeaders('initialize'), json: modern(36, 'initialize'), status: 404, code: -32601, id: 36 },
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
  { name: 'body over the limit, declared Content-Length', raw: padded(kMaxBody + 10), socket: true, status: 413, code: -32600, id: null },
  { name: 'body over the limit, declared Content-Length, through node:http', raw: padded(kMaxBody + 10), status: 413, code: -32600, id: null },
  { name: 'body over the limit, chunked without Content-Length', raw: padded(kMaxBody + 10), chunked: true, status: 413, code: -32600, id: null },
  { name: 'body four times the limit, chunked', raw: padded(4 * kMaxBody), chunked: true, status: 413, code: -32600, id: null },
  { name: 'body just under the limit, chunked, is served', raw: padded(kMaxBody - 200), chunked: true, status: 200, check: (b) => expect(textOf(b)).toHaveLength(kMaxBody - 200) },
  { name: 'Content-Length 999 999 999 declared, nothing sent', declaredLength: 999_999_999, status: 413, code: -32600, id: null },
  // uWS's parser refuses a Content-Length of 10 digits or more by closing the connection, before the
  // adapter sees the request: a clean refusal, though not a 413 (see the report).
  { name: 'Content-Length 2**40 declared, nothing sent', declaredLength: 2 ** 40, status: 413, code: -32600, id: null, orClosed: true },

  // --- Content-Type, Accept, Origin, HTTP method
  { name: 'Content-Type text/plain', headers: { 'content-type': 'text/plain' }, json: echoCall(50), status: 415, code: -32600, id: null },
  { name: 'Content-Type missing', headers: { 'content-type': null }, json: echoCall(51), status: 415, code: -32600, id: null },
  { name: 'Content-Type application/x-www-form-urlencoded', headers: { 'content-type': 'application/x-www-form-urlencoded' }, json: echoCall(52), status: 415, code: -32600, id: null },
  { name: 'Content-Type with charset is fine', headers: { 'content-type': 'application/json; charset=utf-8' }, json: echoCall(53), status: 200, check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Accept: text/html only', headers: { accept: 'text/html' }, json: echoCall(54), status: 406, code: -32600, id: null },
  { name: 'Accept: application/json only gets JSON', headers: { accept: 'application/json' }, json: echoCall(55), status: 200, contentType: 'application/json', check: (b) => expect(textOf(b)).toBe('hi') },
  // A client that takes no JSON gets even a plain answer as an SSE event, not a body it refused.
  { name: 'Accept: text/event-stream only gets the answer as one SSE event', headers: { accept: 'text/event-stream' }, json: echoCall(163), status: 200, contentType: 'text/event-stream', check: (b) => expect(textOf(b)).toBe('hi') },
  { name: 'Accept: text/* gets the answer as one SSE event', headers: { accept: 'text/*' }, json: echoCall(164), status: 200, contentType: 'text/event-stream', check: (b) => expect(textOf(b)).toBe('hi') },
  {
    name: 'Accept: text/event-stream only: a JSON-RPC error answer is an SSE event too',
    headers: { accept: 'text/event-stream' }, json: legacy(165, 'tools/call', { name: 'no_such_tool' }), status: 200, contentType: 'text/event-stream',
    check: (b) => expect(b.error.code).toBe(-32602),
  },
  { name: 'Accept: */* gets JSON', headers: { accept: '*/*' }, json: echoCall(166), status: 200, contentType: 'application/json', check: (b) => expect(textOf(b)).toBe('hi') },
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
  // Without _meta and without the 2026-07-28 header a request is legacy, whose rule is 400 for an
  // unsupported MCP-Protocol-Version.
  { name: 'legacy: tools/list with an unsupported MCP-Protocol-Version header', headers: { 'mcp-protocol-version': '1999-01-01' }, json: legacy(73, 'tools/list'), status: 400, code: -32600, id: 73 },
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
      expect(b.error.data.supported).toEqual([kModern]); // what per-request _meta can ask for
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
  // A legacy version inside _meta makes the request modern, where only 2026-07-28 is served, and
  // data.supported says exactly that (legacy revisions are reached through initialize).
  {
    name: 'modern: header = _meta = 2025-11-25 → unsupported in the per-request era',
    headers: modernHeaders('tools/list', undefined, '2025-11-25'), json: modern(99, 'tools/list', {}, modernMeta({ 'io.modelcontextprotocol/protocolVersion': '2025-11-25' })),
    status: 400, code: -32022, id: 99, check: (b) => { expect(b.error.data.requested).toBe('2025-11-25'); expect(b.error.data.supported).toEqual([kModern]); },
  },
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

/**
 * Content types that merely mention application/json (the CORS-safelisted text/plain and
 * multipart/form-data among them, which a browser sends cross-site without a preflight) are refused.
 */
const crafted: Case[] = [
  { name: 'Content-Type text/plain with a parameter naming application/json', headers: { 'content-type': 'text/plain; charset=application/json' }, json: echoCall(110), status: 415, code: -32600, id: null },
  { name: 'Content-Type multipart/form-data with boundary=application/json', headers: { 'content-type': 'multipart/form-data; boundary=application/json' }, json: echoCall(111), status: 415, code: -32600, id: null },
  { name: 'Content-Type application/jsonp', headers: { 'content-type': 'application/jsonp' }, json: echoCall(112), status: 415, code: -32600, id: null },
];

/**
 * Broken HTTP framing, written raw and followed by a half-close: the parser must refuse it (a 4xx or a
 * closed connection), never serve it or answer 5xx. (uWS answers none of these: it closes.)
 */
const kPing = '{"jsonrpc":"2.0","id":1,"method":"ping"}';
const kHead = 'POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json\r\n';
const framing: { name: string; request: string }[] = [
  { name: 'Content-Length and Transfer-Encoding together', request: `${kHead}content-length: ${kPing.length}\r\ntransfer-encoding: chunked\r\n\r\n${kPing}` },
  { name: 'negative Content-Length', request: `${kHead}content-length: -1\r\n\r\n${kPing}` },
  { name: 'Content-Length with a sign', request: `${kHead}content-length: +${kPing.length}\r\n\r\n${kPing}` },
  { name: 'Content-Length in hex', request: `${kHead}content-length: 0x28\r\n\r\n${kPing}` },
  { name: 'Transfer-Encoding gzip', request: `${kHead}transfer-encoding: gzip\r\n\r\n${kPing}` },
  { name: 'chunk size not hex', request: `${kHead}transfer-encoding: chunked\r\n\r\nzz\r\n${kPing}\r\n0\r\n\r\n` },
  { name: 'chunk size overflowing 64 bits', request: `${kHead}transfer-encoding: chunked\r\n\r\nffffffffffffffffff\r\n${kPing}\r\n0\r\n\r\n` },
  { name: 'request line without a target', request: 'POST\r\n\r\n' },
  { name: 'header line without a colon', request: `${kHead}garbage\r\ncontent-length: ${kPing.length}\r\n\r\n${kPing}` },
  { name: 'NUL byte in a header value', request: `${kHead}x-a: a\0b\r\ncontent-length: ${kPing.length}\r\n\r\n${kPing}` },
  { name: 'bare LF line endings', request: `POST /mcp HTTP/1.1\nhost: x\ncontent-type: application/json\ncontent-length: ${kPing.length}\n\n${kPing}` },
  { name: '200 header lines', request: `${kHead}${Array.from({ length: 200 }, (_, i) => `x-h${i}: v\r\n`).join('')}content-length: ${kPing.length}\r\n\r\n${kPing}` },
];

describe.each(adapters('malformed and hostile requests'))('malformed and hostile requests (one server, %s)', (http) => {
  beforeAll(async () => {
    outcomes.length = 0;
    ts = await startServer({ http, maxBodyBytes: kMaxBody });
    url = ts.address.url;
    session = await initialize(url);
  });

  afterAll(async () => {
    await ts?.close();
  });

  it.each(crafted)('$name → $status', async (c) => {
    const sent = await send(c);
    outcomes.push({ name: c.name, status: sent === 'closed' ? 0 : sent.status });
    expect(sent === 'closed' ? 0 : sent.status).toBe(c.status);
  });

  it.each(framing)('HTTP framing: $name is refused', async ({ request }) => {
    const sent = await socketRequest(url, request, [], true);
    const status = sent === 'closed' ? 0 : sent.status;
    outcomes.push({ name: request, status });
    if (sent !== 'closed') {
      expect(status, sent.text).toBeGreaterThanOrEqual(400);
      // uWS v20.57's parser answers a request line without CRLF with 505 and closes: a refusal of
      // the framing (nothing was served), not a server error.
      if (status === 505) expect(sent.text).toContain('<i>uWebSockets/');
      else expect(status, sent.text).toBeLessThan(500);
    }
  });

  it('HTTP framing control: a well-formed raw request with the same half-close is served', async () => {
    const sent = await socketRequest(url, `${kHead}mcp-session-id: ${session}\r\ncontent-length: ${kPing.length}\r\n\r\n${kPing}`, [], true);
    expect(sent).not.toBe('closed');
    if (sent === 'closed') return;
    outcomes.push({ name: 'framing control', status: sent.status });
    expect(sent.status).toBe(200);
    expect(JSON.parse(sent.text)).toEqual({ jsonrpc: '2.0', id: 1, result: {} });
  });

  it.each(cases)('$name → $status', async (c) => {
    const sent = await send(c);
    outcomes.push({ name: c.name, status: sent === 'closed' ? 0 : sent.status });
    if (sent === 'closed') {
      expect(c.orClosed, 'the connection was closed without a response').toBe(true);
      return;
    }
    const outcome = sent;
    expect(outcome.status, outcome.text.slice(0, 300)).toBe(c.status);
    if (c.empty === true) expect(outcome.text).toBe('');
    if (c.contentType !== undefined) expect(outcome.headers['content-type']?.split(';')[0]).toBe(c.contentType);
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

  it('DELETE ends a session: 204, then 404 for requests and for a second DELETE', async () => {
    const doomed = await initialize(url);
    const del = () => httpRequestOnce(url, 'DELETE', { 'mcp-session-id': doomed }, undefined);
    const first = await del();
    expect(first.status).toBe(204);
    expect(first.text).toBe('');
    const stale = await httpRequestOnce(url, 'POST', { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': doomed }, Buffer.from(JSON.stringify(echoCall(121))));
    expect(stale.status).toBe(404);
    expect(parse(stale)).toMatchObject({ id: 121, error: { code: -32600 } });
    const second = await del();
    expect(second.status).toBe(404);
    outcomes.push({ name: 'DELETE session', status: first.status }, { name: 'after DELETE', status: stale.status }, { name: 'DELETE again', status: second.status });
  });

  it('the server still answers a normal tools/call after all that, and nothing got a 500', async () => {
    expect(outcomes.length).toBe(cases.length + crafted.length + framing.length + 1 + 3);
    expect(outcomes.filter((o) => o.status >= 500 && o.status !== 505)).toEqual([]);
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

/**
 * A body that never completes: 408 once bodyTimeoutMs passes after the headers. Own servers, since
 * the timeout is a server option.
 */
describe('slow request body (408)', () => {
  /** Sends headers and part of a body, then waits: the status line, and whether/when the server closed. */
  function stall(target: string): Promise<{ status: number; statusAt: number; closedAt: number | undefined }> {
    const { hostname, port } = new URL(target);
    return new Promise((resolve) => {
      const started = Date.now();
      const sock = connect(Number(port), hostname);
      let data = '';
      let statusAt = -1;
      let closedAt: number | undefined;
      sock.on('data', (chunk: Buffer) => {
        data += chunk.toString('latin1');
        if (statusAt < 0 && data.includes('\r\n')) statusAt = Date.now() - started;
      });
      sock.on('error', () => { /* 'close' follows */ });
      sock.on('close', () => { closedAt ??= Date.now() - started; });
      sock.on('connect', () => sock.write(`POST /mcp HTTP/1.1\r\nhost: ${hostname}\r\ncontent-type: application/json\r\naccept: application/json\r\ncontent-length: 1000\r\n\r\n{"jsonrpc":`));
      // Long enough for the 408 (300 ms) and for a prompt close after it.
      setTimeout(() => {
        const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(data)?.[1] ?? 0);
        resolve({ status, statusAt, closedAt });
        sock.destroy();
      }, 1_800);
    });
  }

  itUws('uws: a stalled body gets 408 after bodyTimeoutMs', async () => {
    const server = await startServer({ bodyTimeoutMs: 300, sessions: false });
    try {
      const r = await stall(server.address.url);
      expect(r.status).toBe(408);
      expect(r.statusAt).toBeGreaterThanOrEqual(250);
      expect(r.statusAt).toBeLessThan(1_500);
    } finally {
      await server.close();
    }
  });

  // KNOWN BUG (see the report): uws/adapter.ts answers 408 with a `connection: close` header but
  // without closeConnection=true, so the socket stays open until uWS's idle timeout (~12 s).
  itUws('uws: the connection is closed right after the 408', async () => {
    const server = await startServer({ bodyTimeoutMs: 300, sessions: false });
    try {
      const r = await stall(server.address.url);
      expect(r.status).toBe(408);
      expect(r.closedAt).toBeDefined();
      expect(r.closedAt!).toBeLessThan(r.statusAt + 1_000);
    } finally {
      await server.close();
    }
  });

  // KNOWN BUG (see the report): node/adapter.ts sets requestTimeout = bodyTimeoutMs + 5000 but a fixed
  // headersTimeout of 10 000, and node:http requires headersTimeout <= requestTimeout: any
  // bodyTimeoutMs < 5000 (the options accept >= 1) makes every HTTP worker fail to listen.
  it('node: a server with bodyTimeoutMs 300 starts and answers a stalled body with 408', async () => {
    const server = await startServer({ http: 'node', bodyTimeoutMs: 300, sessions: false });
    try {
      const r = await stall(server.address.url);
      expect(r.status).toBe(408);
    } finally {
      await server.close();
    }
  });
});
