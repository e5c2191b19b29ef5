// A body over maxBodyBytes, as real clients send one (a tool argument too large): the client must
// read the 413, not a reset. The server used to answer and close while the client was still
// writing; the client's kernel then reset the connection and the official SDK v1 client (undici's
// fetch) and Sluice's own client both reported `write EPIPE`. Now such a body is read to its end
// and dropped (up to dropLimit), then answered 413 on a connection that stays usable; past
// dropLimit, or too slow, the 413 goes at once and the connection closes. Both adapters.
import { connect } from 'node:net';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, HttpClientTransport } from '../../src/client/index.js';
import { adapters } from '../helpers/adapters.js';
import type { Adapter } from '../helpers/adapters.js';
import { kAccept, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kMaxBody = 1024 * 1024;
const kBodyTimeoutMs = 1_000;
const kTimeout = { timeout: 10_000 };

describe.each(adapters('oversized bodies'))('%s: a body over maxBodyBytes', (http: Adapter) => {
  let running: TestServer;
  beforeAll(async () => {
    running = await startServer({ http, maxBodyBytes: kMaxBody, bodyTimeoutMs: kBodyTimeoutMs, workers: 1 });
  });
  afterAll(async () => {
    await running?.close();
  });

  it('the official SDK v1 client gets the 413, then calls again on its session', async () => {
    const client = new ClientV1({ name: 'oversized', version: '1.0.0' });
    await client.connect(new StreamableHTTPClientTransport(new URL(running.address.url)), kTimeout);
    try {
      for (const size of [kMaxBody + 1, 5 * kMaxBody, 20 * kMaxBody]) {
        const call = client.callTool({ name: 'echo', arguments: { text: 'x'.repeat(size) } }, undefined, kTimeout);
        await expect(call, `${size} bytes`).rejects.toMatchObject({ code: 413, message: expect.stringContaining('Payload Too Large') });
      }
      const after = await client.callTool({ name: 'echo', arguments: { text: 'still here' } }, undefined, kTimeout);
      expect(after.content).toEqual([{ type: 'text', text: 'still here' }]);
    } finally {
      await client.close();
    }
  });

  it("Sluice's client gets the JSON-RPC error of the 413, in both eras, then calls again", async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const client = new Client(new HttpClientTransport({ url: running.address.url }), { era });
      try {
        await expect(client.callTool('echo', { text: 'x'.repeat(5 * kMaxBody) }, { timeoutMs: 10_000 }), era)
          .rejects.toMatchObject({ code: 'rpc_error', message: 'Payload Too Large' });
        expect(await client.callTool('echo', { text: 'ok' }, { timeoutMs: 10_000 })).toMatchObject({ content: [{ type: 'text', text: 'ok' }] });
      } finally {
        await client.close();
      }
    }
  });

  it('one that stops sending gets the 413 at its body deadline, and its connection is closed', async () => {
    const sock = connect(running.address.port, '127.0.0.1');
    let data = '';
    sock.setEncoding('utf8');
    sock.on('data', (c: string) => { data += c; });
    sock.on('error', () => {});
    const closed = new Promise<void>((resolve) => sock.once('close', () => resolve()));
    const openedAt = Date.now();
    sock.write(`POST /mcp HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\naccept: ${kAccept}\r\ncontent-length: ${2 * kMaxBody}\r\n\r\n`);
    sock.write('x'.repeat(kMaxBody + 10)); // past the limit, then nothing more
    await closed;
    const elapsed = Date.now() - openedAt;
    // node:http's own requestTimeout answers a request still incomplete at the deadline with 408.
    expect(data).toMatch(http === 'uws' ? /^HTTP\/1\.1 413 / : /^HTTP\/1\.1 (413|408) /);
    expect(elapsed).toBeGreaterThanOrEqual(kBodyTimeoutMs - 100);
    expect(elapsed).toBeLessThan(kBodyTimeoutMs + 5_000);
  });
});
