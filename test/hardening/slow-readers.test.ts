// Slow readers (issue 11, item 1): a client that asks for progress and logs and then stops reading
// its stream must not make the server buffer without bound. Past maxStreamBufferBytes, progress
// coalesces, logs are dropped (both counted), and a final response that finds no room within
// slowReaderTimeoutMs closes the connection. Real servers on loopback, raw sockets, both adapters.
// Also: repeated security-relevant headers are refused with 400 on both adapters.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { until } from '../helpers/server.js';
import { adapters } from '../helpers/adapters.js';

const kBound = 64 * 1024;
let toolState = { calls: 0, progress: 0, done: 0 };

const flood = defineTool({
  name: 'flood',
  description: 'Streams 1 KB progress and log messages as fast as it can for `ms`.',
  inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
  handler: async (args, ctx) => {
    toolState.calls++;
    const until = Date.now() + Number(args.ms ?? 1000);
    const text = 'x'.repeat(1000);
    let i = 0;
    while (Date.now() < until && !ctx.cancelled) {
      ctx.progress(++i, undefined, text);
      ctx.log('info', text);
      toolState.progress = i;
      if (i % 50 === 0) await new Promise((r) => setImmediate(r));
    }
    toolState.done++;
    return `sent ${i}`;
  },
});
const echo = defineTool({ name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (a) => String(a.text) });

let server: Server | undefined;
const sockets: Socket[] = [];
afterEach(async () => {
  for (const s of sockets.splice(0)) s.destroy();
  await server?.close();
  server = undefined;
});

async function start(http: 'uws' | 'node', extra: Record<string, unknown> = {}): Promise<{ port: number; url: string }> {
  toolState = { calls: 0, progress: 0, done: 0 };
  server = createServer({ tools: [flood, echo], port: 0, http, janitor: false, sessions: false, metrics: true, maxStreamBufferBytes: kBound, ...extra }, { log: () => {} });
  const address = await server.listen();
  return { port: address.port, url: address.url };
}

async function metrics(url: string): Promise<Record<string, number>> {
  const text = await (await fetch(url.replace('/mcp', '/metrics'))).text();
  const out: Record<string, number> = {};
  for (const m of text.matchAll(/^(sluice_[a-z_]+) (\S+)$/gm)) out[m[1]] = Number(m[2]);
  return out;
}

/** A legacy SSE tools/call of `flood` on a raw socket that reads the headers, then stops reading. */
function stalledCall(port: number, ms: number): { sock: Socket; received: () => Buffer; closed: Promise<void>; resume(): void } {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'flood', arguments: { ms }, _meta: { progressToken: 'p' } } });
  const sock = connect(port, '127.0.0.1');
  sockets.push(sock);
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
  sock.on('error', () => {});
  let stalled = true;
  sock.on('data', (c: Buffer) => {
    chunks.push(c);
    if (stalled) sock.pause(); // read the first bytes only; the kernel buffers then fill and the server's writes back up
  });
  sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: text/event-stream\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
  return { sock, received: () => Buffer.concat(chunks), closed, resume: () => { stalled = false; sock.resume(); } };
}

/** SSE `data:` payloads in a (de-chunked enough) byte stream. */
function events(raw: Buffer): Record<string, unknown>[] {
  const out: Record<string, unknown>[] = [];
  for (const m of raw.toString('utf8').matchAll(/^data: (\{.*\})$/gm)) {
    try {
      out.push(JSON.parse(m[1]) as Record<string, unknown>);
    } catch {
      // a line split by chunk framing: ignored (the test counts whole events only)
    }
  }
  return out;
}

describe.each(adapters('slow readers'))('slow readers over %s', (http) => {
  it('memory held for a reader that stopped is bounded; progress coalesces, logs drop; on reading, the newest progress and the response arrive in order', async () => {
    const { port, url } = await start(http, { slowReaderTimeoutMs: 30_000 });
    const call = stalledCall(port, 1_500);
    await until(() => toolState.done === 1, 15_000, 'the tool to finish');
    const m = await metrics(url);
    // What the server holds for this connection: the bound, plus one event in flight and one pending.
    expect(m.sluice_stream_buffered_bytes).toBeLessThanOrEqual(kBound + 16 * 1024);
    expect(m.sluice_progress_coalesced_total).toBeGreaterThan(0);
    expect(m.sluice_logs_dropped_total).toBeGreaterThan(0);
    // The tool sent far more than the bound plus the kernel's buffers would hold.
    expect(toolState.progress * 2 * 1000).toBeGreaterThan(16 * 1024 * 1024);
    // Now read everything: the stream ends with the response, progress strictly increasing.
    call.resume();
    await until(() => /\r\n0\r\n\r\n$|"result"/.test(call.received().toString('latin1').slice(-300)) || call.received().toString('utf8').includes('"result"'), 20_000, 'the response');
    const all = events(call.received());
    const progress = all.filter((e) => e.method === 'notifications/progress').map((e) => (e.params as { progress: number }).progress);
    for (let i = 1; i < progress.length; i++) expect(progress[i]).toBeGreaterThan(progress[i - 1]);
    expect(progress.at(-1)).toBe(toolState.progress);
    expect(all.at(-1)).toMatchObject({ id: 1, result: { content: [{ text: `sent ${toolState.progress}` }] } });
    await until(async () => (await metrics(url)).sluice_stream_buffered_bytes === 0, 5_000, 'the gauge to return to 0').catch(() => {});
    expect((await metrics(url)).sluice_stream_buffered_bytes).toBe(0);
  });

  it('a final response that finds no room within slowReaderTimeoutMs closes the connection and is counted', async () => {
    const { port, url } = await start(http, { slowReaderTimeoutMs: 300 });
    const call = stalledCall(port, 800);
    await until(() => toolState.done === 1, 15_000, 'the tool to finish');
    const deadline = Date.now() + 5_000;
    while ((await metrics(url)).sluice_slow_readers_closed_total !== 1 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect((await metrics(url)).sluice_slow_readers_closed_total).toBe(1);
    // The paused client sees the close once it reads again; the response never came.
    call.resume();
    await Promise.race([call.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('not closed')), 5_000))]);
    expect(call.received().toString('utf8')).not.toContain('"result"');
    expect((await metrics(url)).sluice_stream_buffered_bytes).toBe(0);
    // Everyone else is served.
    const res = await fetch(url, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'ok' } } }),
    });
    expect(res.status).toBe(200);
  });

  it('a repeated Host, Origin, Authorization or Mcp-Session-Id is refused with 400', async () => {
    const { port } = await start(http);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'ping' });
    const ask = (extra: string) => new Promise<string>((resolve) => {
      const sock = connect(port, '127.0.0.1');
      sockets.push(sock);
      const chunks: Buffer[] = [];
      sock.on('data', (c: Buffer) => chunks.push(c));
      sock.on('error', () => {});
      sock.on('close', () => resolve(Buffer.concat(chunks).toString('latin1')));
      sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\n${extra}content-type: application/json\r\nmcp-protocol-version: 2025-11-25\r\nconnection: close\r\ncontent-length: ${body.length}\r\n\r\n${body}`);
    });
    expect(await ask('')).toMatch(/^HTTP\/1\.1 200/);
    for (const extra of ['host: evil.example\r\n', 'origin: http://localhost\r\norigin: http://evil.example\r\n', 'authorization: a\r\nauthorization: b\r\n', 'mcp-session-id: a\r\nmcp-session-id: b\r\n']) {
      const answer = await ask(extra);
      expect(answer).toMatch(/^HTTP\/1\.1 400/);
      // uWS v20.57 refuses a repeated Host in its parser (its own 400 page, then close) before
      // Sluice sees the request; every other repeat, and Host on v20.30 and node:http, is ours.
      if (extra.startsWith('host:') && answer.includes('<i>uWebSockets/')) expect(answer).toMatch(/^HTTP\/1\.1 400 Bad Request\r\nConnection: close\r\n/);
      else expect(answer).toContain('appears more than once');
    }
  });
});
