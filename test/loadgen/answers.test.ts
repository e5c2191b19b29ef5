/**
 * Counting answers exactly: a raw HTTP server on loopback answers request `id` by `id % 12` (mostly
 * the same bytes bar the id, which `sluice bench` learns and then does not parse; in between,
 * answers that look like those bytes but are not the answer, split bodies, tool and JSON-RPC
 * errors, an HTTP error, another head). One connection, so the counted requests are ids 1..R and
 * every kind's count is known from R.
 */
import { createServer } from 'node:net';
import type { AddressInfo, Server, Socket } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchJson } from './helpers.js';

const ok = (id: string): string => `{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"hello"}]}}`;

/** The response to request `id`, as one or two writes. */
function answer(id: number): string[] {
  const json = (body: string, extra = ''): string => `HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n${extra}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
  switch (id % 12) {
    case 5: return [json(ok(String(id + 1)))]; // the learnt bytes, another id: not the answer
    case 6: return [json(`{"jsonrpc":"2.0","id":${id},"result":{"content":[{"type":"text","text":"boom"}],"isError":true}}`)];
    case 7: return [json(`{"jsonrpc":"2.0","id":${id},"error":{"code":-32602,"message":"bad arguments"}}`)];
    case 8: return [json(ok(`0${id}`))]; // a leading zero: not JSON
    case 9: { // the learnt bytes, then one more byte in a second write: not JSON
      const whole = json(`${ok(String(id))}x`);
      return [whole.slice(0, -1), whole.slice(-1)];
    }
    case 10: return ['HTTP/1.1 503 Service Unavailable\r\ncontent-type: text/plain\r\ncontent-length: 4\r\n\r\nbusy'];
    case 11: return [json(ok(String(id)), `x-round: ${Math.floor(id / 12)}\r\n`)];
    default: return [json(ok(String(id)))];
  }
}

/** Reads whole requests (Content-Length bodies) off `socket` and answers each. */
function serve(socket: Socket): void {
  let buffer = Buffer.alloc(0);
  socket.setNoDelay(true);
  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk]);
    for (;;) {
      const end = buffer.indexOf('\r\n\r\n');
      if (end === -1) return;
      const length = Number(/content-length: (\d+)/i.exec(buffer.toString('latin1', 0, end))?.[1] ?? 0);
      if (buffer.length < end + 4 + length) return;
      const body = JSON.parse(buffer.toString('utf8', end + 4, end + 4 + length)) as { id: number };
      buffer = buffer.subarray(end + 4 + length);
      const [first, second] = answer(body.id);
      socket.write(first!);
      if (second !== undefined) setTimeout(() => socket.write(second), 2);
    }
  });
  socket.on('error', () => {});
}

describe('answers counted by kind, learnt ones included', () => {
  let server: Server;
  let url: string;
  beforeAll(async () => {
    server = createServer(serve);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
  });
  afterAll(async () => {
    await new Promise((resolve) => server.close(resolve));
  });

  it('every kind of ids 1..R counted as what it is (2026-07-28, JSON answers, one connection)', async () => {
    const run = await benchJson([url, '--era', '2026-07-28', '--tool', 'echo', '--args', '{"text":"hello"}', '--connections', '1', '--duration', '1s', '--warmup', '0s', '--max-errors', '100']);
    expect(run.code).toBe(0);
    const s = run.json!;
    const r = s.requests as number;
    expect(r).toBeGreaterThan(100);
    expect(s.warmupRequests).toBe(0);
    const count = (kinds: number[]): number => Array.from({ length: r }, (_, i) => i + 1).filter((id) => kinds.includes(id % 12)).length;
    expect(s.ok).toBe(count([0, 1, 2, 3, 4, 11]));
    expect(s.errors.byKind).toEqual({
      'invalid answer': count([5, 8, 9]),
      'tool isError': count([6]),
      'rpc -32602': count([7]),
      'http 503': count([10]),
    });
    expect(s.errors.total).toBe(r - s.ok);
    expect(s.errors.details['tool isError']).toBe('boom');
  });
});
