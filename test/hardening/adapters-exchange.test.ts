// The Exchange contract at adapter level, over both adapters (listenUws / listenNode with a tiny
// handler, raw HTTP/1.1 over a loopback socket): repeated security headers are reported, not
// resolved differently by each adapter; a stream to a client that stops reading shows its backlog
// in bufferedBytes, drains with onDrain, and destroy() closes it.
import { connect, createServer } from 'node:net';
import type { Socket } from 'node:net';
import { describe, expect, it } from 'vitest';
import { SluiceError } from '../../src/errors.js';
import type { AdapterOptions, Listening } from '../../src/transport/http/adapter.js';
import type { Exchange } from '../../src/transport/http/exchange.js';
import { listenNode } from '../../src/transport/http/node/adapter.js';
import { listenUws } from '../../src/transport/http/uws/adapter.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { until } from '../helpers/server.js';
import { adapters, itUws } from '../helpers/adapters.js';

const onCleanup = cleanupAfterEach();

async function serve(kind: 'uws' | 'node', handler: (ex: Exchange) => void, allHeaders = false): Promise<Listening> {
  const options: AdapterOptions = { host: '127.0.0.1', port: 0, maxBodyBytes: 1 << 20, bodyTimeoutMs: 5_000, allHeaders, handler };
  const listening = kind === 'uws' ? await listenUws(options) : await listenNode(options);
  onCleanup(() => listening.close(0));
  return listening;
}

interface Client {
  sock: Socket;
  received(): Buffer;
  closed: Promise<void>;
}

/** A raw loopback client that sends `head` as is; paused clients read nothing until resumed. */
function client(port: number, head: string, paused = false): Client {
  const sock = connect(port, '127.0.0.1');
  onCleanup(() => sock.destroy());
  const chunks: Buffer[] = [];
  const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
  sock.on('error', () => { /* 'close' follows */ });
  if (paused) sock.pause();
  sock.on('data', (c: Buffer) => chunks.push(c));
  if (paused) sock.pause(); // 'data' listeners resume a socket: pause again
  sock.write(head);
  return { sock, received: () => Buffer.concat(chunks), closed };
}

/** The body of one complete response in `buf` (Content-Length or chunked), else undefined. */
function bodyOf(buf: Buffer): Buffer | undefined {
  const split = buf.indexOf('\r\n\r\n');
  if (split === -1) return undefined;
  const head = buf.subarray(0, split).toString('latin1').toLowerCase();
  const length = /\r\ncontent-length: *(\d+)/.exec(head);
  if (length !== null) {
    const end = split + 4 + Number(length[1]);
    return end <= buf.length ? buf.subarray(split + 4, end) : undefined;
  }
  const parts: Buffer[] = [];
  let p = split + 4;
  for (;;) {
    const eol = buf.indexOf('\r\n', p);
    if (eol === -1) return undefined;
    const size = parseInt(buf.subarray(p, eol).toString('latin1'), 16);
    if (eol + 2 + size + 2 > buf.length) return undefined;
    if (size === 0) return Buffer.concat(parts);
    parts.push(buf.subarray(eol + 2, eol + 2 + size));
    p = eol + 2 + size + 2;
  }
}

const tick = () => new Promise((resolve) => setImmediate(resolve));

describe.each(adapters('Exchange'))('Exchange over the %s adapter', (kind) => {
  it('reports a repeated security header (first value kept) and joins other repeats', async () => {
    const listening = await serve(kind, (ex) => {
      ex.respond(200, [['content-type', 'application/json']], JSON.stringify({
        duplicate: ex.duplicateHeader ?? null, host: ex.header('host') ?? null, authorization: ex.header('authorization') ?? null,
        origin: ex.header('origin') ?? null, accept: ex.header('accept') ?? null, apiKey: ex.header('x-api-key') ?? null,
      }));
    });
    const askRaw = async (headers: string) => {
      const c = client(listening.port, `GET /x HTTP/1.1\r\n${headers}connection: close\r\n\r\n`);
      await c.closed;
      return c.received().toString('latin1');
    };
    const ask = async (headers: string) => {
      const c = client(listening.port, `GET /x HTTP/1.1\r\n${headers}connection: close\r\n\r\n`);
      await c.closed;
      const body = bodyOf(c.received());
      expect(body, c.received().toString('latin1')).toBeDefined();
      return JSON.parse(String(body)) as Record<string, string | null>;
    };
    const plain = await ask('Host: a.example\r\nAuthorization: Bearer one\r\nX-Api-Key: k\r\n');
    expect(plain).toEqual({ duplicate: null, host: 'a.example', authorization: 'Bearer one', origin: null, accept: null, apiKey: null });
    // uWS v20.57 refuses a repeated Host itself (400 and close) before the handler runs.
    const repeatedHost = await askRaw('Host: a.example\r\nhost: b.example\r\n');
    if (kind === 'uws' && repeatedHost.includes('<i>uWebSockets/')) expect(repeatedHost).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    else expect(JSON.parse(String(bodyOf(Buffer.from(repeatedHost, 'latin1'))))).toMatchObject({ duplicate: 'host', host: 'a.example' });
    expect(await ask('Host: a.example\r\nAuthorization: Bearer one\r\nAUTHORIZATION: Bearer two\r\n')).toMatchObject({ duplicate: 'authorization', authorization: 'Bearer one' });
    expect(await ask('Host: a.example\r\nOrigin: http://a.example\r\nOrigin: http://b.example\r\n')).toMatchObject({ duplicate: 'origin', origin: 'http://a.example' });
    // The first repeated one is named; a repeat outside the list is joined, not reported.
    expect(await ask('Host: a.example\r\nAccept: text/plain\r\nOrigin: http://a.example\r\nAccept: application/json\r\nOrigin: http://b\r\nmcp-session-id: s1\r\nMcp-Session-Id: s2\r\n'))
      .toMatchObject({ duplicate: 'origin', accept: 'text/plain, application/json', host: 'a.example' });
  });

  it('with allHeaders every header is readable, and repeats are still reported', async () => {
    const listening = await serve(kind, (ex) => {
      ex.respond(200, [['content-type', 'application/json']], JSON.stringify({ duplicate: ex.duplicateHeader ?? null, apiKey: ex.header('x-api-key') ?? null, custom: ex.header('x-custom') ?? null }));
    }, true);
    const c = client(listening.port, 'GET /x HTTP/1.1\r\nHost: a\r\nX-Api-Key: secret\r\nx-custom: 1\r\nX-Custom: 2\r\nauthorization: a\r\nAuthorization: b\r\nconnection: close\r\n\r\n');
    await c.closed;
    expect(JSON.parse(String(bodyOf(c.received())))).toEqual({ duplicate: 'authorization', apiKey: 'secret', custom: '1, 2' });
  });

  /** A stream to a client that reads nothing, written in 1 KiB chunks until the adapter holds `backlog` bytes. */
  async function stalledStream(backlog: number) {
    let exchange: Exchange | undefined;
    const listening = await serve(kind, (ex) => {
      exchange = ex;
      ex.startStream(200, [['content-type', 'text/plain']]);
    });
    const c = client(listening.port, 'GET /stream HTTP/1.1\r\nHost: a\r\n\r\n', true);
    await until(() => exchange !== undefined, 5_000, 'the request');
    const ex = exchange as Exchange;
    let aborts = 0;
    let drains = 0;
    let bufferedAtDrain = -1;
    ex.onAbort(() => { aborts++; });
    ex.onDrain(() => { drains++; bufferedAtDrain = ex.bufferedBytes; });
    const sent: string[] = [];
    // Bounded: 64 MiB at most, far more than loopback socket buffers hold.
    while (ex.bufferedBytes < backlog && sent.length < 65_536) {
      for (let i = 0; i < 256; i++) {
        const chunk = `${sent.length}`.padEnd(1023, '.') + '\n';
        expect(ex.write(chunk)).toBe(true);
        sent.push(chunk);
      }
      await tick();
    }
    return { ex, c, sent, counts: () => ({ aborts, drains, bufferedAtDrain }) };
  }

  it('a client that stops reading: bufferedBytes grows past the socket buffers, onDrain fires once it has read everything', async () => {
    const { ex, c, sent, counts } = await stalledStream(2 << 20);
    const total = sent.length * 1024;
    expect(ex.bufferedBytes).toBeGreaterThanOrEqual(2 << 20);
    expect(ex.bufferedBytes).toBeLessThanOrEqual(total + 4096);
    // Still not reading: the backlog stays (nothing is dropped, nothing drains).
    await new Promise((r) => setTimeout(r, 200));
    expect(ex.bufferedBytes).toBeGreaterThanOrEqual(2 << 20);
    const drainsBefore = counts().drains;
    c.sock.resume();
    await until(() => counts().drains > drainsBefore, 10_000, 'onDrain after the client reads');
    expect(counts().bufferedAtDrain).toBe(0);
    expect(ex.bufferedBytes).toBe(0);
    expect(ex.aborted).toBe(false);
    ex.end();
    await until(() => bodyOf(c.received()) !== undefined, 10_000, 'the whole stream');
    const body = bodyOf(c.received()) as Buffer;
    expect(body.length).toBe(total);
    expect(body.toString('latin1') === sent.join('')).toBe(true); // every chunk, once, in order
    expect(counts().aborts).toBe(0);
  });

  it('one write larger than the socket buffers, then nothing: it still drains and onDrain fires', async () => {
    const { ex, c, sent, counts } = await stalledStream(1);
    const big = 'x'.repeat(8 << 20);
    expect(ex.write(big)).toBe(true);
    expect(ex.bufferedBytes).toBeGreaterThan(0);
    const drainsBefore = counts().drains;
    c.sock.resume();
    await until(() => counts().drains > drainsBefore && ex.bufferedBytes === 0, 10_000, 'onDrain after the big write');
    ex.end();
    await until(() => bodyOf(c.received()) !== undefined, 10_000, 'the whole stream');
    expect((bodyOf(c.received()) as Buffer).length).toBe(sent.length * 1024 + big.length);
  });

  it('destroy() closes a stalled stream at once and fires onAbort once', async () => {
    const { ex, c, counts } = await stalledStream(1 << 20);
    expect(ex.bufferedBytes).toBeGreaterThanOrEqual(1 << 20);
    ex.destroy();
    expect(ex.aborted).toBe(true);
    expect(counts().aborts).toBe(1);
    expect(ex.write('more\n')).toBe(false);
    ex.destroy(); // idempotent
    c.sock.resume(); // a closed socket is noticed only by reading what is left
    await Promise.race([c.closed, new Promise((_, reject) => setTimeout(() => reject(new Error('socket not closed')), 5_000))]);
    await new Promise((r) => setTimeout(r, 50));
    expect(counts().aborts).toBe(1);
  });
});

itUws('uWS: a port another process holds fails with listen_failed, naming the likely causes', async () => {
  const holder = createServer();
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  onCleanup(() => new Promise((resolve) => holder.close(resolve)));
  const port = (holder.address() as { port: number }).port;
  const failure = await listenUws({ host: '127.0.0.1', port, maxBodyBytes: 1024, bodyTimeoutMs: 1_000, allHeaders: false, handler: () => {} }).then(
    (listening) => { onCleanup(() => listening.close(0)); return undefined; },
    (error: unknown) => error,
  );
  expect(failure).toBeInstanceOf(SluiceError);
  expect((failure as SluiceError).code).toBe('listen_failed');
  expect((failure as SluiceError).message).toMatch(/in use by another process.*not permitted/);
});
