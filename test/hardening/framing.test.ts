// HTTP framing, on both adapters (issue 31, findings 1–3): a request whose length is ambiguous, or
// whose header lines are malformed, too many or too large, is answered 400 or 431 and its connection
// closed: nothing after it on that connection is taken for another request.
import { connect } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { loadUwsWithSource } from '../../src/transport/http/uws/load.js';
import { adapters, kUwsLoads } from '../helpers/adapters.js';

/**
 * uWS v20.30 (@trufflesuite/uws-js-unofficial, the only build that loads on glibc < 2.38) has no
 * error responses in its parser: it waits for more bytes (until its 10 s idle timeout) on obs-fold,
 * bare LF, a space before a colon or more than about 50 header lines, and closes without a word on
 * `Content-Length: 5, 5` or CL + TE. The adapter never sees those requests, so it cannot answer
 * them; the later builds answer 400/431 themselves. Those cases are skipped, by name, on that build.
 */
const kOldUwsParser = kUwsLoads && loadUwsWithSource().source.packageName === '@trufflesuite/uws-js-unofficial';

interface Outcome { statuses: number[]; closed: boolean; reset: boolean; text: string }

/** Writes `chunks` on a fresh connection and reads until it closes or `ms` pass. */
function exchange(port: number, chunks: readonly string[], ms = 3_000): Promise<Outcome> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    let text = '';
    let reset = false;
    let done = false;
    const finish = (closed: boolean) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      socket.destroy();
      resolve({ statuses: [...text.matchAll(/HTTP\/1\.1 (\d{3})/g)].map((m) => Number(m[1])), closed, reset, text });
    };
    const timer = setTimeout(() => finish(false), ms);
    socket.setEncoding('latin1');
    socket.on('data', (d: string) => { text += d; });
    socket.on('error', (e: NodeJS.ErrnoException) => { if (e.code === 'ECONNRESET') reset = true; });
    socket.on('close', () => finish(true));
    socket.on('connect', () => {
      void (async () => {
        for (const chunk of chunks) {
          if (socket.destroyed) return;
          socket.write(chunk);
          if (chunks.length > 1) await new Promise((r) => setTimeout(r, 5));
        }
      })();
    });
  });
}

const ping = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'ping' });
const kBase = 'Host: 127.0.0.1\r\nContent-Type: application/json\r\nAccept: application/json, text/event-stream\r\nMCP-Protocol-Version: 2025-11-25\r\n';
const body = ping(1);
/** A complete second request: answered only if the connection was (wrongly) kept. */
const smuggled = `POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${ping(666).length}\r\n\r\n${ping(666)}`;
const manyHeaders = (n: number) => Array.from({ length: n }, (_, i) => `X-Filler-${i}: v\r\n`).join('');

interface Case { name: string; request: string; status: number; oldUws?: boolean }
const kCases: Case[] = [
  { name: 'two different Content-Length values', status: 400, request: `POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${body.length}\r\nContent-Length: ${body.length + smuggled.length}\r\n\r\n${body}${smuggled}` },
  { name: 'the same Content-Length twice', status: 400, request: `POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${body.length}\r\nContent-Length: ${body.length}\r\n\r\n${body}${smuggled}` },
  { name: 'a Content-Length list', status: 400, oldUws: false, request: `POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${body.length}, ${body.length}\r\n\r\n${body}${smuggled}` },
  { name: 'Content-Length beside Transfer-Encoding', status: 400, oldUws: false, request: `POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${body.length + 9}\r\nTransfer-Encoding: chunked\r\n\r\n${body.length.toString(16)}\r\n${body}\r\n0\r\n\r\n${smuggled}` },
  { name: 'an obs-fold continuation line', status: 400, oldUws: false, request: `POST /mcp HTTP/1.1\r\n${kBase}X-Folded: a\r\n  b\r\nContent-Length: ${body.length}\r\n\r\n${body}${smuggled}` },
  { name: 'a bare LF ending a header line', status: 400, oldUws: false, request: `POST /mcp HTTP/1.1\r\n${kBase}X-Bare: a\nContent-Length: ${body.length}\r\n\r\n${body}${smuggled}` },
  { name: 'a space before the colon', status: 400, oldUws: false, request: `POST /mcp HTTP/1.1\r\n${kBase}Content-Length : ${body.length}\r\n\r\n${body}${smuggled}` },
  { name: '101 header lines', status: 431, oldUws: false, request: `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n${manyHeaders(100)}\r\n${smuggled}` },
  { name: '200 header lines', status: 431, oldUws: false, request: `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n${manyHeaders(199)}\r\n${smuggled}` },
  { name: 'a 20 KiB header line', status: 431, request: `GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: ${'a'.repeat(20 * 1024)}\r\n\r\n${smuggled}` },
];

describe.each(adapters('HTTP framing'))('HTTP framing over %s', (http) => {
  let server: Server;
  let port = 0;
  beforeAll(async () => {
    const echo = defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object' }, handler: () => 'ok' });
    server = createServer({ tools: [echo], port: 0, http, janitor: false, sessions: false }, { log: () => {} });
    port = Number(new URL((await server.listen()).url).port);
  });
  afterAll(async () => { await server?.close(); });

  it('a well-framed request is served and its connection kept (the baseline the cases differ from)', async () => {
    const r = await exchange(port, [`POST /mcp HTTP/1.1\r\n${kBase}Content-Length: ${body.length}\r\n\r\n${body}`], 500);
    expect(r.statuses).toEqual([200]);
    expect(r.closed).toBe(false);
  });

  for (const c of kCases) {
    const skip = http === 'uws' && kOldUwsParser && c.oldUws === false;
    const title = `${c.name}: ${c.status} and the connection closed, nothing after it served${skip ? ' — SKIPPED: uWS v20.30 parser never hands this request to the adapter (see kOldUwsParser)' : ''}`;
    it.skipIf(skip)(title, async () => {
      const r = await exchange(port, [c.request]);
      expect(r.closed, `connection left open; got ${JSON.stringify(r.text.slice(0, 200))}`).toBe(true);
      // The first answer is the refusal (a build's own parser may say 400 where we say 431, or 505
      // for a line it cannot read at all); never a 2xx, and the smuggled request is never run.
      expect(r.statuses.length).toBeGreaterThan(0);
      expect(r.statuses[0]).toBeGreaterThanOrEqual(400);
      if (!(http === 'uws' && !kOldUwsParser)) expect(r.statuses[0]).toBe(c.status);
      expect(r.statuses.every((s) => s >= 400)).toBe(true);
      expect(r.text).not.toContain('666');
    });
  }

  // uWS v20.30 closes a header block it has to buffer past 4 KiB without answering.
  const oldSkip = http === 'uws' && kOldUwsParser;
  it.skipIf(oldSkip)(`a 100 KB bearer token, sent in pieces, gets 431 (read by the client), not a reset${oldSkip ? ' — SKIPPED: uWS v20.30 parser closes without an answer (see kOldUwsParser)' : ''}`, async () => {
    const head = `POST /mcp HTTP/1.1\r\n${kBase}Authorization: Bearer `;
    const token = 'a'.repeat(100_000);
    const pieces = [head, ...Array.from({ length: 10 }, (_, i) => token.slice(i * 10_000, (i + 1) * 10_000)), `\r\nContent-Length: ${body.length}\r\n\r\n${body}`];
    const r = await exchange(port, pieces);
    expect(r.statuses, `got ${JSON.stringify(r.text.slice(0, 200))}, reset ${r.reset}`).toEqual([431]);
    expect(r.closed).toBe(true);
  });
});
