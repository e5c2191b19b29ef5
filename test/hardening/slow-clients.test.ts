// Hardening: slow, vanishing, half-closed and pipelining clients against a real server (uWS, two
// HTTP workers, bodyTimeoutMs 500). Each case bounds what the server holds for a misbehaving
// client, checks that other clients are served meanwhile, and that no request stays tracked
// (`registry.counters().inFlight` back to 0). Every loop is bounded in count and time.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { request } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { loadUwsWithSource } from '../../src/transport/http/uws/load.js';
import { post } from '../helpers/http.js';
import { kAccept, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kBodyTimeoutMs = 500;

let running: TestServer;
let url: string;
let port: number;

beforeAll(async () => {
  running = await startServer({ bodyTimeoutMs: kBodyTimeoutMs, sessions: false });
  url = running.address.url;
  port = running.address.port;
});

afterAll(async () => {
  await running?.close();
});

afterEach(async () => {
  // Whatever a case did, nothing may stay tracked once its tools have ended.
  await until(() => running.server.registry.counters().inFlight === 0, 10_000, 'in-flight rows to go');
});

const echo = (id: number | string, text: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text } } });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** A raw HTTP/1.1 request: head and body bytes, exactly as given. */
function rawRequest(body: string, extraHeaders = '', path = '/mcp'): string {
  return `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: ${kAccept}\r\n${extraHeaders}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
}

interface Raw {
  sock: Socket;
  /** Everything received so far. */
  data(): Buffer;
  readonly openedAt: number;
  /** ms after opening when the first byte arrived / the socket closed; undefined until then. */
  firstByteAt: number | undefined;
  closedAt: number | undefined;
  closed: Promise<void>;
  connected: Promise<void>;
}

const sockets = new Set<Socket>();
afterEach(() => {
  for (const s of sockets) s.destroy();
  sockets.clear();
});

function openRaw(): Raw {
  const sock = connect(port, '127.0.0.1');
  sockets.add(sock);
  const chunks: Buffer[] = [];
  let onClosed: () => void = () => {};
  let onConnected: () => void = () => {};
  const raw: Raw = {
    sock,
    data: () => Buffer.concat(chunks),
    openedAt: Date.now(),
    firstByteAt: undefined,
    closedAt: undefined,
    closed: new Promise((r) => { onClosed = r; }),
    connected: new Promise((r) => { onConnected = r; }),
  };
  sock.on('connect', () => onConnected());
  sock.on('data', (c: Buffer) => { raw.firstByteAt ??= Date.now() - raw.openedAt; chunks.push(c); });
  sock.on('error', () => { /* 'close' follows */ });
  sock.on('close', () => { raw.closedAt = Date.now() - raw.openedAt; onClosed(); });
  return raw;
}

interface Parsed {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** Complete HTTP/1.1 responses at the start of `buf` (Content-Length or chunked), and whether bytes are left over. */
function parseResponses(buf: Buffer): { responses: Parsed[]; leftover: number } {
  const responses: Parsed[] = [];
  let at = 0;
  for (;;) {
    const split = buf.indexOf('\r\n\r\n', at);
    if (split === -1) break;
    const lines = buf.subarray(at, split).toString('latin1').split('\r\n');
    const m = /^HTTP\/1\.1 (\d{3})/.exec(lines[0]);
    if (m === null) throw new Error(`not a status line: ${JSON.stringify(lines[0].slice(0, 80))}`);
    const headers: Record<string, string> = {};
    for (const line of lines.slice(1)) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    let end: number;
    let body: string;
    if (headers['content-length'] !== undefined) {
      end = split + 4 + Number(headers['content-length']);
      if (end > buf.length) break;
      body = buf.subarray(split + 4, end).toString('utf8');
    } else if (headers['transfer-encoding']?.toLowerCase() === 'chunked') {
      const parts: Buffer[] = [];
      let p = split + 4;
      let complete = false;
      for (;;) {
        const eol = buf.indexOf('\r\n', p);
        if (eol === -1) break;
        const size = parseInt(buf.subarray(p, eol).toString('latin1'), 16);
        if (eol + 2 + size + 2 > buf.length) break;
        parts.push(buf.subarray(eol + 2, eol + 2 + size));
        p = eol + 2 + size + 2;
        if (size === 0) { complete = true; break; }
      }
      if (!complete) break;
      end = p;
      body = Buffer.concat(parts).toString('utf8');
    } else {
      end = split + 4; // no body (e.g. 204)
      body = '';
    }
    responses.push({ status: Number(m[1]), headers, body });
    at = end;
  }
  return { responses, leftover: buf.length - at };
}

/** JSON-RPC messages of a JSON or SSE body. */
function messagesOf(r: Parsed): Record<string, unknown>[] {
  if (r.body === '') return [];
  if (r.headers['content-type']?.startsWith('text/event-stream')) {
    return r.body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as Record<string, unknown>);
  }
  return [JSON.parse(r.body) as Record<string, unknown>];
}

/**
 * Another, well-behaved client: an echo every `everyMs` until `stop` is set, each of which must be
 * answered correctly and promptly. Returns the worst latency.
 */
const stoppers = new Set<() => void>();
afterEach(() => {
  for (const stop of stoppers) stop();
  stoppers.clear();
});

function wellBehaved(everyMs: number): { stop(): Promise<number>; } {
  let stopped = false;
  stoppers.add(() => { stopped = true; });
  let worst = 0;
  let n = 0;
  const loop = (async () => {
    while (!stopped && n < 200) {
      const started = Date.now();
      const res = await post(url, echo(`wb-${n}`, `still here ${n}`));
      worst = Math.max(worst, Date.now() - started);
      expect(res.status).toBe(200);
      expect(JSON.parse(res.body)).toEqual({ jsonrpc: '2.0', id: `wb-${n}`, result: { content: [{ type: 'text', text: `still here ${n}` }] } });
      n++;
      await sleep(everyMs);
    }
  })();
  loop.catch(() => {}); // reported by stop(); a case that fails before stopping is reported anyway
  return {
    stop: async () => {
      stopped = true;
      await loop;
      expect(n).toBeGreaterThan(0);
      return worst;
    },
  };
}

/**
 * How long uWS holds a header block that never ends, by build (see SECURITY.md, "Slow clients"):
 * v20.30 (trufflesuite, Node 20) about 10 s; v20.57 (btc-vision, Node 22/24 on glibc >= 2.38) about
 * 30 s. node:http's headersTimeout is at most 10 s.
 */
const kHeaderBlockBound = (() => {
  try {
    if (loadUwsWithSource().source.version.startsWith('20.57')) return { waitMs: 40_000, closedWithinMs: 37_000 };
  } catch {
    // no uWS here: node:http serves, with its own timeout
  }
  return { waitMs: 20_000, closedWithinMs: 17_000 };
})();

describe('slowloris: header blocks that never finish', () => {
  it('idle, trickling and oversized header blocks are closed within bounded time; others are served meanwhile', async () => {
    const others = wellBehaved(250);
    const trickles: ReturnType<typeof setInterval>[] = [];
    const idle = Array.from({ length: 10 }, () => openRaw());
    const trickling = Array.from({ length: 10 }, () => openRaw());
    const oversized = Array.from({ length: 5 }, () => openRaw());
    try {
      await Promise.all([...idle, ...trickling, ...oversized].map((r) => r.connected));
      for (const r of trickling) {
        r.sock.write('POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-slow: ');
        // One byte every 200 ms, never the blank line that ends the header block (at most 100 bytes).
        let sent = 0;
        const timer = setInterval(() => { if (!r.sock.destroyed && sent++ < 100) r.sock.write('a'); }, 200);
        trickles.push(timer);
      }
      for (const r of oversized) r.sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'b'.repeat(64 * 1024)}\r\n`);
      const all = [...idle, ...trickling, ...oversized];
      await Promise.race([Promise.all(all.map((r) => r.closed)), sleep(kHeaderBlockBound.waitMs)]);
      // uWS closes a connection whose request has not arrived within its idle timeout, however
      // slowly bytes trickle in; an oversized header block at once. The timeout is the build's own:
      // about 10 s, checked every 4 s, in v20.30; about 30 s in the v20.57 npm build (32 s measured).
      for (const r of all) expect(r.closedAt, `still open after ${kHeaderBlockBound.waitMs} ms`).toBeDefined();
      for (const r of [...idle, ...trickling]) expect(r.closedAt!).toBeLessThan(kHeaderBlockBound.closedWithinMs);
      for (const r of oversized) expect(r.closedAt!).toBeLessThan(2_000);
      // Nothing but, at most, a 4xx refusal was written to any of them.
      for (const r of all) {
        const text = r.data().toString('latin1');
        if (text !== '') expect(text).toMatch(/^HTTP\/1\.1 4\d\d /);
      }
    } finally {
      for (const t of trickles) clearInterval(t);
    }
    expect(await others.stop()).toBeLessThan(2_000);
  });
});

describe('slow bodies (bodyTimeoutMs 500)', () => {
  it('a body trickled under Content-Length or in chunks gets 408 and a close; others are served meanwhile', async () => {
    const others = wellBehaved(100);
    const timers: ReturnType<typeof setInterval>[] = [];
    const body = JSON.stringify(echo(1, 'slow'));
    const withLength = Array.from({ length: 8 }, () => openRaw());
    const chunked = Array.from({ length: 4 }, () => openRaw());
    try {
      await Promise.all([...withLength, ...chunked].map((r) => r.connected));
      const trickle = (r: Raw, piece: (i: number) => string | undefined) => {
        let i = 0;
        timers.push(setInterval(() => {
          const p = piece(i++);
          if (p !== undefined && !r.sock.destroyed) r.sock.write(p);
        }, 100));
      };
      for (const r of withLength) {
        r.sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: ${kAccept}\r\ncontent-length: ${body.length}\r\n\r\n`);
        trickle(r, (i) => (i < body.length ? body[i] : undefined));
      }
      for (const r of chunked) {
        r.sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: ${kAccept}\r\ntransfer-encoding: chunked\r\n\r\n`);
        trickle(r, (i) => (i < body.length ? `1\r\n${body[i]}\r\n` : i === body.length ? '0\r\n\r\n' : undefined));
      }
      const all = [...withLength, ...chunked];
      await Promise.race([Promise.all(all.map((r) => r.closed)), sleep(5_000)]);
      for (const r of all) {
        const { responses, leftover } = parseResponses(r.data());
        expect(responses.map((x) => x.status)).toEqual([408]); // exactly one response: the 408
        expect(leftover).toBe(0);
        expect(r.firstByteAt!).toBeGreaterThanOrEqual(kBodyTimeoutMs - 50);
        expect(r.firstByteAt!).toBeLessThan(kBodyTimeoutMs + 1_500);
        expect(r.closedAt, 'the connection stayed open after the 408').toBeDefined();
        expect(r.closedAt! - r.firstByteAt!).toBeLessThan(1_000);
      }
    } finally {
      for (const t of timers) clearInterval(t);
    }
    expect(await others.stop()).toBeLessThan(1_500);
  });
});

describe('clients that vanish mid-stream', () => {
  it('legacy: a disconnect is not a cancel; the tools run to their end and their rows go', async () => {
    const records = Array.from({ length: 10 }, () => recordPath());
    const raws = records.map(() => openRaw());
    await Promise.all(raws.map((r) => r.connected));
    raws.forEach((r, i) => r.sock.write(rawRequest(JSON.stringify({
      jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'block', arguments: { ms: 800, tick: 20, record: records[i] }, _meta: { progressToken: `p${i}` } },
    }), 'mcp-protocol-version: 2025-11-25\r\n')));
    // Wait for some progress on each stream, then vanish without a word.
    await until(() => raws.every((r) => r.data().includes('notifications/progress')), 10_000, 'progress on every stream');
    for (const r of raws) r.sock.destroy();
    expect(running.server.registry.counters().inFlight).toBeGreaterThan(0);
    await until(() => records.every((rec) => recorded(rec).some((l) => l.startsWith('finished'))), 10_000, 'every tool to finish');
    for (const rec of records) expect(recorded(rec).some((l) => l.startsWith('cancelled'))).toBe(false);
    await until(() => running.server.registry.counters().inFlight === 0, 5_000, 'their rows to go');
    expect((await post(url, echo('after', 'ok'))).status).toBe(200);
  });

  it('2026-07-28: the disconnect is the cancel, even with progress streaming', async () => {
    const records = Array.from({ length: 5 }, () => recordPath());
    const requests = records.map((record, i) => {
      const req = request(url, {
        method: 'POST', agent: false,
        headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'block' },
      });
      let seen = '';
      req.on('response', (res) => res.on('data', (c: Buffer) => { seen += c.toString('utf8'); }));
      req.on('error', () => {});
      req.end(JSON.stringify({ jsonrpc: '2.0', id: `m${i}`, method: 'tools/call', params: { name: 'block', arguments: { ms: 15_000, tick: 20, record }, _meta: { ...modernMeta(), progressToken: `p${i}` } } }));
      return { req, seen: () => seen };
    });
    await until(() => requests.every((r) => r.seen().includes('notifications/progress')), 10_000, 'progress on every stream');
    for (const r of requests) r.req.destroy();
    await until(() => records.every((rec) => recorded(rec).some((l) => l.startsWith('cancelled'))), 10_000, 'every tool to see the disconnect');
    for (const rec of records) expect(recorded(rec).at(-1)).toContain('reason=client disconnected');
    await until(() => running.server.registry.counters().inFlight === 0, 5_000, 'their rows to go');
  });

  // Documents a residual risk (SECURITY.md): in the legacy era a disconnect is not a cancel, and
  // ctx.request has no deadline, so a tool waiting on a vanished client's answer stays in flight
  // (holding its row) until that client cancels it, answers, or the server shuts down. A cancel does
  // not reject the pending ctx.request either: the row goes when streamCancelTimeoutMs kills the call.
  it('legacy: a tool waiting on a vanished client\'s answer stays in flight until the client cancels it', async () => {
    const own = await startServer({ bodyTimeoutMs: kBodyTimeoutMs, streamCancelTimeoutMs: 1_000 });
    try {
      const ownUrl = own.address.url;
      const init = await post(ownUrl, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } });
      const session = String(init.headers['mcp-session-id']);
      const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      let asked = false;
      const req = request(ownUrl, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: kAccept, ...headers } });
      req.on('response', (res) => res.on('data', (c: Buffer) => { if (c.toString('utf8').includes('elicitation/create')) asked = true; }));
      req.on('error', () => {});
      req.end(JSON.stringify({ jsonrpc: '2.0', id: 'ask-1', method: 'tools/call', params: { name: 'ask', arguments: {} } }));
      await until(() => asked, 10_000, 'the server to ask the client');
      req.destroy();
      await sleep(1_000);
      expect(own.server.registry.counters().inFlight).toBe(1); // still waiting on an answer that cannot come
      expect((await post(ownUrl, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'ask-1', reason: 'gone' } }, headers)).status).toBe(202);
      await until(() => own.server.registry.counters().inFlight === 0, 5_000, 'the cancelled request to go');
    } finally {
      await own.close();
    }
  });
});

describe('half-closed sockets (a full request, then FIN)', () => {
  it('the response arrives or the socket is closed cleanly; nothing leaks', async () => {
    const kinds = [
      { name: 'ping (answered at once)', body: { jsonrpc: '2.0', id: 1, method: 'ping' } },
      { name: 'a 300 ms tool, JSON reply', body: { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'block', arguments: { ms: 300 } } } },
      { name: 'a 300 ms tool, SSE reply', body: { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'block', arguments: { ms: 300, tick: 20 }, _meta: { progressToken: 'hc' } } } },
    ];
    const outcomes: string[] = [];
    for (const kind of kinds) {
      const raws = Array.from({ length: 5 }, () => openRaw());
      await Promise.all(raws.map((r) => r.connected));
      for (const r of raws) r.sock.end(rawRequest(JSON.stringify(kind.body)));
      await Promise.race([Promise.all(raws.map((r) => r.closed)), sleep(5_000)]);
      for (const r of raws) {
        expect(r.closedAt, `${kind.name}: the socket stayed open`).toBeDefined();
        const { responses } = parseResponses(r.data());
        // At most one response, and a complete one is a valid JSON-RPC answer to this request.
        expect(responses.length).toBeLessThanOrEqual(1);
        for (const res of responses) {
          expect(res.status).toBe(200);
          const last = messagesOf(res).at(-1)!;
          expect(last).toMatchObject({ jsonrpc: '2.0', id: kind.body.id });
          expect('result' in last).toBe(true);
        }
        outcomes.push(`${kind.name}: ${responses.length === 1 ? 'answered' : r.data().length === 0 ? 'closed' : 'closed mid-response'}`);
      }
    }
    // Every tool started ran to its end and was untracked (checked after each case too).
    await until(() => running.server.registry.counters().inFlight === 0, 5_000, 'in-flight rows to go');
    expect(outcomes).toHaveLength(15);
    expect((await post(url, echo('after', 'ok'))).status).toBe(200);
  });
});

describe('pipelining floods (many requests back to back on one socket)', () => {
  /** Ids of the JSON-RPC responses received, in order, and the statuses. */
  const answered = (r: Raw) => {
    const { responses } = parseResponses(r.data());
    return { statuses: responses.map((x) => x.status), ids: responses.map((x) => messagesOf(x).at(-1)?.id) };
  };

  it('synchronous requests: answered in order (or the connection closed), bounded', async () => {
    const kCount = 1_000;
    const r = openRaw();
    await r.connected;
    const ids = Array.from({ length: kCount }, (_, i) => i);
    r.sock.write(ids.map((i) => rawRequest(JSON.stringify(i % 2 === 0 ? { jsonrpc: '2.0', id: i, method: 'ping' } : echo(i, `e${i}`)))).join(''));
    await Promise.race([until(() => answered(r).ids.length === kCount, 15_000, 'every answer').catch(() => {}), r.closed]);
    const got = answered(r);
    // An in-order prefix of what was sent; all of it unless the server closed the connection.
    expect(got.ids).toEqual(ids.slice(0, got.ids.length));
    expect(got.statuses.every((s) => s === 200)).toBe(true);
    if (got.ids.length < kCount) expect(r.closedAt, 'neither all answered nor closed').toBeDefined();
    expect(got.ids.length).toBeGreaterThan(0);
    expect((await post(url, echo('after', 'ok'))).status).toBe(200);
  });

  it('a request that answers later, with more pipelined behind it: in-order prefix, then closed; the tool ends and is untracked', async () => {
    const r = openRaw();
    await r.connected;
    const record = recordPath();
    const messages = [
      { jsonrpc: '2.0', id: 0, method: 'ping' },
      { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'block', arguments: { ms: 300, record } } },
      ...Array.from({ length: 50 }, (_, i) => ({ jsonrpc: '2.0', id: i + 2, method: 'ping' })),
    ];
    r.sock.write(messages.map((m) => rawRequest(JSON.stringify(m))).join(''));
    await Promise.race([r.closed, sleep(5_000)]);
    const got = answered(r);
    expect(got.ids).toEqual(messages.slice(0, got.ids.length).map((m) => m.id));
    if (got.ids.length < messages.length) expect(r.closedAt).toBeDefined();
    // Whatever happened to the connection, the tool it started ran to its end and was untracked.
    await until(() => recorded(record).some((l) => l.startsWith('finished')), 5_000, 'the tool to finish');
    await until(() => running.server.registry.counters().inFlight === 0, 5_000, 'its row to go');
    expect((await post(url, echo('after', 'ok'))).status).toBe(200);
  });

  it('a client that pipelines and does not read: others are served, and the answers are in order when it reads', async () => {
    const kCount = 3_000;
    const r = openRaw();
    await r.connected;
    r.sock.pause(); // read nothing for now: the server's writes back up
    const payload = Array.from({ length: kCount }, (_, i) => rawRequest(JSON.stringify(echo(i, 'x'.repeat(200)))));
    // Written in slices of 100 requests, as fast as the socket takes them; bounded at 10 s.
    const deadline = Date.now() + 10_000;
    for (let i = 0; i < kCount && !r.sock.destroyed && Date.now() < deadline; i += 100) {
      if (!r.sock.write(payload.slice(i, i + 100).join(''))) {
        await Promise.race([new Promise((res) => r.sock.once('drain', res)), r.closed, sleep(500)]);
      }
    }
    const others = wellBehaved(50);
    await sleep(1_000);
    expect(await others.stop()).toBeLessThan(1_500);
    r.sock.resume();
    await Promise.race([until(() => answered(r).ids.length === kCount, 15_000, 'every answer').catch(() => {}), r.closed]);
    await sleep(100);
    const got = answered(r);
    expect(got.ids).toEqual(Array.from({ length: got.ids.length }, (_, i) => i));
    if (got.ids.length < kCount) expect(r.closedAt, 'neither all answered nor closed').toBeDefined();
    r.sock.destroy();
    expect((await post(url, echo('after', 'ok'))).status).toBe(200);
  });
});
