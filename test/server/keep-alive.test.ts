// Keep-alive on node:http. The adapter closes idle keep-alive connections itself (a sweep a second,
// transport/http/node/connections.ts) instead of node's keepAliveTimeout, which arms a socket timer
// after every response. What a client sees must not change: responses advertise
// `Keep-Alive: timeout=5`; an idle connection is closed a little after that (node: 6 s), never
// before; a connection whose request runs longer, or that keeps sending requests, stays open.
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer;
beforeAll(async () => {
  running = await startServer({ http: 'node', workers: 1, sessions: false });
});
afterAll(() => running.close());

/** One keep-alive connection, raw: each response's head and when it arrived, and when the server closed it. */
class Connection {
  readonly heads: string[] = [];
  lastAnswerAt = 0;
  closedAt: number | undefined;
  readonly #socket: Socket;
  readonly #waiting: ((head: string) => void)[] = [];
  #buffer = '';

  constructor(port: number) {
    this.#socket = connect(port, '127.0.0.1');
    this.#socket.setEncoding('utf8');
    this.#socket.on('data', (chunk: string) => this.#read(chunk));
    this.#socket.on('close', () => { this.closedAt = Date.now(); });
    this.#socket.on('error', () => {});
  }

  /** Sends a tools/call and resolves with the response's head once the whole response is in. */
  call(tool: string, args: Record<string, unknown>): Promise<string> {
    const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: tool, arguments: args } });
    this.#socket.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: application/json\r\nmcp-protocol-version: 2025-11-25\r\ncontent-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    return new Promise((resolve) => this.#waiting.push(resolve));
  }

  /** Resolves with the time the server closed the connection (bounded: rejects after `ms`). */
  closed(ms: number): Promise<number> {
    return new Promise((resolve, reject) => {
      if (this.closedAt !== undefined) return resolve(this.closedAt);
      const timer = setTimeout(() => reject(new Error(`still open after ${ms} ms`)), ms);
      this.#socket.once('close', () => { clearTimeout(timer); resolve(this.closedAt!); });
    });
  }

  destroy(): void {
    this.#socket.destroy();
  }

  #read(chunk: string): void {
    this.#buffer += chunk;
    for (;;) {
      const end = this.#buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const head = this.#buffer.slice(0, end);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (this.#buffer.length < end + 4 + length) return;
      this.#buffer = this.#buffer.slice(end + 4 + length);
      this.heads.push(head);
      this.lastAnswerAt = Date.now();
      this.#waiting.shift()?.(head);
    }
  }
}

describe('keep-alive on node:http', () => {
  it.concurrent('advertises timeout=5 and closes an idle connection after 5 s, within about 2 s more', async () => {
    const connection = new Connection(running.address.port);
    const head = await connection.call('echo', { text: 'hi' });
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(head).toMatch(/\r\nConnection: keep-alive(\r\n|$)/i);
    expect(head).toMatch(/\r\nKeep-Alive: timeout=5(\r\n|$)/i);
    const closedAt = await connection.closed(12_000);
    const idle = closedAt - connection.lastAnswerAt;
    expect(idle).toBeGreaterThanOrEqual(5_000);
    expect(idle).toBeLessThan(8_500);
  });

  it.concurrent('keeps a connection whose request runs longer than that, then closes it once idle', async () => {
    const connection = new Connection(running.address.port);
    const started = Date.now();
    const head = await connection.call('stubborn', { ms: 7_500 });
    expect(head).toMatch(/^HTTP\/1\.1 200/);
    expect(Date.now() - started).toBeGreaterThanOrEqual(7_400);
    expect(connection.closedAt).toBeUndefined();
    const closedAt = await connection.closed(12_000);
    expect(closedAt - connection.lastAnswerAt).toBeGreaterThanOrEqual(5_000);
  });

  it.concurrent('keeps a connection that sends a request every 2 s, all answered on it', async () => {
    const connection = new Connection(running.address.port);
    try {
      for (let i = 0; i < 5; i++) {
        if (i > 0) await new Promise((r) => setTimeout(r, 2_000));
        expect(connection.closedAt).toBeUndefined();
        expect(await connection.call('echo', { text: `n${i}` })).toMatch(/^HTTP\/1\.1 200/);
      }
      expect(connection.heads).toHaveLength(5);
      expect(connection.closedAt).toBeUndefined();
    } finally {
      connection.destroy();
    }
  });
});
