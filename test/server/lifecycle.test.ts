// Server.listen() and close() called the ways applications call them: twice, at once, in the
// wrong order. One start per server; none after close().
import { connect } from 'node:net';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
import { kToolsModule } from '../helpers/server.js';

/** Whether something accepts a TCP connection on 127.0.0.1:`port`. */
function accepts(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => { socket.destroy(); resolve(true); });
    socket.once('error', () => resolve(false));
  });
}

describe('Server lifecycle', () => {
  it('two listen() calls at once start one server: the same address, one set of workers, one close() stops it', async () => {
    const server = createServer({ tools: kToolsModule, port: 0, workers: 2, janitor: false }, { log: () => {} });
    try {
      const [a, b] = await Promise.all([server.listen(), server.listen()]);
      expect(b).toBe(a);
      expect(server.workerThreadIds).toHaveLength(2);
      expect(await server.listen()).toBe(a);
      expect(await accepts(a.port)).toBe(true);
      await server.close();
      expect(await accepts(a.port)).toBe(false);
    } finally {
      await server.close();
    }
  });

  it('close() while listen() is still starting (0, 50, 150 ms in) waits for the start, then stops all of it: no worker left listening', async () => {
    for (const delay of [0, 50, 150]) {
      const server = createServer({ tools: kToolsModule, port: 0, workers: 2, janitor: false }, { log: () => {} });
      const started = server.listen();
      await new Promise((r) => setTimeout(r, delay));
      await server.close();
      const { port } = await started;
      expect({ delay, workers: server.workerThreadIds.length, listening: await accepts(port) }).toEqual({ delay, workers: 0, listening: false });
      await expect(server.listen()).rejects.toMatchObject({ code: 'server_closed' });
    }
  });

  it('listen() after close(), or after a close() that came first, is refused with server_closed and opens nothing', async () => {
    const server = createServer({ tools: kToolsModule, port: 0, workers: 1, janitor: false }, { log: () => {} });
    const { port } = await server.listen();
    await server.close();
    await expect(server.listen()).rejects.toMatchObject({ code: 'server_closed' });
    expect(await accepts(port)).toBe(false);
    expect(server.workerThreadIds).toEqual([]);
    const never = createServer({ tools: kToolsModule, port: 0, workers: 1, janitor: false }, { log: () => {} });
    await never.close();
    await expect(never.listen()).rejects.toMatchObject({ code: 'server_closed' });
    expect(never.workerThreadIds).toEqual([]);
  });
});
