import { readFileSync } from 'node:fs';
import { createServer as createNetServer } from 'node:net';
import type { Socket } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { CancelledError, Client, HttpClientTransport, SluiceError, StdioClientTransport } from '../../src/client/index.js';
import { kToolsModule, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const bin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const recorder = fileURLToPath(new URL('../fixtures/stdio-recorder.mjs', import.meta.url));
let running: TestServer | undefined;
const clients: Client[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await running?.close();
  running = undefined;
});

function track(client: Client): Client {
  clients.push(client);
  return client;
}

/** A client of a Sluice server with the test tools: over HTTP (a server started here) or stdio (`sluice serve --stdio`). */
async function sluiceClient(kind: 'http' | 'stdio', era: 'auto' | 'legacy'): Promise<Client> {
  if (kind === 'http') {
    running = await startServer();
    return track(new Client(new HttpClientTransport({ url: running.address.url }), { era }));
  }
  return track(new Client(new StdioClientTransport({ command: process.execPath, args: [bin, 'serve', '--stdio', '--tools', fileURLToPath(kToolsModule)] }), { era }));
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

describe('the client against a Sluice server, per transport', () => {
  it.each([
    ['stdio', 'auto', 'modern'],
    ['stdio', 'legacy', 'legacy'],
    ['http', 'legacy', 'legacy'],
    ['http', 'auto', 'modern'],
  ] as const)('%s (%s): an aborted call rejects at once and the tool sees the cancel', async (kind, era, expected) => {
    const client = await sluiceClient(kind, era);
    expect((await client.callTool('echo', { text: 'hi' })).content).toEqual([{ type: 'text', text: 'hi' }]);
    expect(client.era).toBe(expected);
    const record = recordPath();
    const progress: number[] = [];
    const ac = new AbortController();
    const call = client.callTool('block', { ms: 10_000, tick: 20, record }, { signal: ac.signal, onProgress: (p) => progress.push(p.progress) });
    await until(() => progress.length >= 2, 10_000, 'progress');
    const t0 = performance.now();
    ac.abort('user pressed stop');
    const error = await rejection(call);
    const took = performance.now() - t0;
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('user pressed stop');
    expect(took).toBeLessThan(1000); // at once, not when the server finishes (a loose bound, not a benchmark)
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
    expect(recorded(record).at(-1)).toContain(expected === 'modern' && kind === 'http' ? 'reason=client disconnected' : 'reason=user pressed stop');
    // The connection is still good, and a timeout cancels the same way.
    const timedOut = await rejection(client.callTool('block', { ms: 10_000 }, { timeoutMs: 50 }));
    expect((timedOut as CancelledError).reason).toBe('timed out after 50 ms');
    expect((await client.callTool('echo', { text: 'after' })).content).toEqual([{ type: 'text', text: 'after' }]);
  });

  it.each([
    ['stdio', 'legacy'],
    ['stdio', 'auto'],
    ['http', 'legacy'],
    ['http', 'auto'],
  ] as const)('%s (%s): an onProgress that throws, or rejects, ends its call with that error; nothing escapes, the client serves on', async (kind, era) => {
    const client = await sluiceClient(kind, era);
    // Before: the throw escaped the transport's read as an uncaught exception (the call then failed
    // with "aborted" over HTTP, hung over stdio); a rejection was an unhandled one.
    const escaped: unknown[] = [];
    const onEscape = (error: unknown) => escaped.push(error);
    process.on('uncaughtException', onEscape);
    process.on('unhandledRejection', onEscape);
    try {
      for (const onProgress of [() => { throw new Error('a bug in the callback'); }, async () => { throw new Error('a bug in the callback'); }]) {
        const record = recordPath();
        const error = await rejection(client.callTool('block', { ms: 10_000, tick: 20, record }, { onProgress }));
        expect(error).toMatchObject({ message: 'a bug in the callback' });
        expect(error).not.toBeInstanceOf(CancelledError);
        await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
        // The server learns that it failed, not the caller's error text.
        expect(recorded(record).at(-1)).toContain(client.era === 'modern' && kind === 'http' ? 'reason=client disconnected' : "reason=the client's progress callback failed");
      }
      expect((await client.callTool('echo', { text: 'after' })).content).toEqual([{ type: 'text', text: 'after' }]);
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(escaped).toEqual([]);
    } finally {
      process.off('uncaughtException', onEscape);
      process.off('unhandledRejection', onEscape);
    }
  });

  it.each([
    ['stdio', 'legacy'],
    ['stdio', 'auto'],
    ['http', 'legacy'],
    ['http', 'auto'],
  ] as const)('%s (%s): arguments JSON cannot carry (a BigInt, a cycle) are invalid_params, not a TypeError; the client serves on', async (kind, era) => {
    const client = await sluiceClient(kind, era);
    const cycle: Record<string, unknown> = {};
    cycle.self = cycle;
    for (const [args, why] of [[{ text: 1n }, 'BigInt'], [cycle, 'circular']] as const) {
      const error = await rejection(client.callTool('echo', args));
      expect(error).toBeInstanceOf(SluiceError);
      expect(error).toMatchObject({ code: 'invalid_params' });
      expect((error as Error).message).toContain('tools/call');
      expect((error as Error).message).toContain(why);
    }
    expect((await client.callTool('echo', { text: 'after' })).content).toEqual([{ type: 'text', text: 'after' }]);
  });

  it('lists, reads, gets and completes through one client', async () => {
    running = await startServer();
    const client = track(new Client(new HttpClientTransport({ url: running.address.url })));
    expect(((await client.listTools()).tools as { name: string }[]).map((t) => t.name)).toContain('block');
    expect(((await client.listResources()).resources as { uri: string }[]).map((r) => r.uri)).toContain('test://slow');
    expect((await client.listPrompts()).prompts).toEqual([{ name: 'slow_prompt', arguments: [{ name: 'record', required: true }] }]);
    expect(await client.complete({ type: 'ref/prompt', name: 'slow_prompt' }, { name: 'record', value: '' })).toMatchObject({ completion: { values: [] } });
    expect(await client.discover()).toMatchObject({ supportedVersions: expect.arrayContaining(['2026-07-28']) });
    await expect(client.callTool('nope')).rejects.toMatchObject({ rpcCode: -32602 });
  });

  it('the transport takes the endpoint alone, as a string or a URL (as the official SDK\'s do); a URL that is not http(s) is invalid_option', async () => {
    running = await startServer();
    for (const endpoint of [running.address.url, new URL(running.address.url)]) {
      const client = track(new Client(new HttpClientTransport(endpoint)));
      expect((await client.callTool('echo', { text: 'short form' })).content).toEqual([{ type: 'text', text: 'short form' }]);
    }
    // A TypeError ("Invalid URL", input undefined) before: the URL given where options go.
    for (const bad of ['127.0.0.1:3000', 'ftp://127.0.0.1/mcp', 'not a url', { url: 5 }, {}]) {
      expect(() => new HttpClientTransport(bad as never), JSON.stringify(bad)).toThrow(expect.objectContaining({ code: 'invalid_option', message: expect.stringContaining('http:// or https://') }));
    }
  });

  it('headers HTTP would refuse on every call are invalid_option at construction, naming the header', () => {
    const url = 'http://127.0.0.1:1/mcp';
    // Before: each call failed with Node's ERR_INVALID_CHAR / ERR_INVALID_HTTP_TOKEN, the transport built fine.
    for (const [headers, named] of [[{ 'x-a': 'b\r\nx-c: d' }, 'x-a'], [{ 'bad name': 'v' }, 'bad name'], [{ 'x-nul': 'a\u0000b' }, 'x-nul']] as const) {
      expect(() => new HttpClientTransport({ url, headers }), named).toThrow(expect.objectContaining({ code: 'invalid_option', message: expect.stringContaining(named) }));
    }
    expect(() => new HttpClientTransport({ url, headers: 'x-a: b' as never })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    expect(() => new HttpClientTransport({ url, headers: { 'x-trace': 'abc', 'user-agent': 'probe/1' } })).not.toThrow();
  });

  it('timeoutMs: one setTimeout cannot hold is refused, not a call cancelled after 1 ms; Infinity is none', async () => {
    running = await startServer();
    const client = track(new Client(new HttpClientTransport({ url: running.address.url })));
    // 2^31 ms and up, negative and NaN: setTimeout runs them after 1 ms, which cancelled the call at once.
    for (const timeoutMs of [2 ** 31, 30 * 24 * 3600 * 1000, -5, NaN]) {
      await expect(client.callTool('block', { ms: 100 }, { timeoutMs }), String(timeoutMs)).rejects.toMatchObject({ code: 'invalid_option' });
      await expect(client.callTool('block', { ms: 100 }, { task: true, timeoutMs }), `task ${timeoutMs}`).rejects.toMatchObject({ code: 'invalid_option' });
    }
    for (const timeoutMs of [2 ** 31 - 1, Infinity]) {
      expect((await client.callTool('block', { ms: 100 }, { timeoutMs })).content, String(timeoutMs)).toBeDefined();
    }
    // Refused before connecting: closing at once leaves no connection attempt to reject unhandled
    // (`sluice call --timeout 3000000000` crashed that way with a stack trace).
    const fresh = new Client(new HttpClientTransport({ url: running.address.url }));
    await expect(fresh.callTool('echo', { text: 'x' }, { timeoutMs: NaN })).rejects.toMatchObject({ code: 'invalid_option' });
    await fresh.close();
    await new Promise((resolve) => setTimeout(resolve, 200));
  });
});

describe('stdio wire order and demultiplexing', () => {
  it('the server receives each request line before its cancel line, under concurrency', async () => {
    const log = recordPath();
    const client = track(new Client(new StdioClientTransport({ command: process.execPath, args: [recorder, log] }), { era: 'legacy' }));
    await client.connect();
    const calls = Array.from({ length: 50 }, (_, i) => {
      const ac = new AbortController();
      const call = client.callTool('anything', { i }, { signal: ac.signal });
      // Abort some at once (before the write completed) and some a little later.
      if (i % 2 === 0) ac.abort(`stop ${i}`);
      else setTimeout(() => ac.abort(`stop ${i}`), i % 7);
      return call.catch((e: unknown) => e);
    });
    const errors = await Promise.all(calls);
    expect(errors.every((e) => e instanceof CancelledError)).toBe(true);
    // A call aborted before it was written is never sent (nothing to cancel); every call that was
    // written gets its cancel line, after it.
    const count = (what: string) => readFileSync(log, 'utf8').split('\n').filter((l) => l.includes(what)).length;
    await until(() => count('"tools/call"') > 0 && count('notifications/cancelled') === count('"tools/call"'), 10_000, 'a cancel line for every request line');
    const lines = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as { id?: number; method: string; params?: { requestId?: number } });
    const position = new Map<string, number>();
    lines.forEach((m, i) => {
      if (m.method === 'tools/call') position.set(`request ${m.id}`, i);
      if (m.method === 'notifications/cancelled') position.set(`cancel ${m.params?.requestId}`, i);
    });
    const requestIds = lines.filter((m) => m.method === 'tools/call').map((m) => m.id!);
    expect(requestIds.length).toBeGreaterThanOrEqual(25); // the ones aborted a little later were all written
    for (const id of requestIds) expect(position.get(`request ${id}`)!).toBeLessThan(position.get(`cancel ${id}`)!);
  });

  it('a cancelled call never swallows another call\'s response', async () => {
    const client = track(new Client(new StdioClientTransport({ command: process.execPath, args: [bin, 'serve', '--stdio', '--tools', fileURLToPath(kToolsModule)] }), { era: 'legacy' }));
    const ac = new AbortController();
    const slow = client.callTool('stubborn', { ms: 300 }, { signal: ac.signal }); // ignores the cancel, answers late
    ac.abort('no longer needed');
    await expect(slow).rejects.toBeInstanceOf(CancelledError);
    const results = await Promise.all([1, 2, 3].map((i) => client.callTool('echo', { text: `n${i}` })));
    expect(results.map((r) => (r.content as { text: string }[])[0].text)).toEqual(['n1', 'n2', 'n3']);
    await new Promise((r) => setTimeout(r, 400)); // the stubborn tool's late response arrives and is dropped
    expect((await client.callTool('echo', { text: 'last' })).content).toEqual([{ type: 'text', text: 'last' }]);
  });
});

describe('a wedged server', () => {
  it('stdio: the call still rejects on abort, and close() ends the process', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [recorder, '/dev/null', 'wedged'] });
    const client = new Client(transport, { era: 'legacy' });
    await client.connect(); // it answers initialize, then nothing else
    const ac = new AbortController();
    const call = client.callTool('anything', {}, { signal: ac.signal });
    setTimeout(() => ac.abort('gave up'), 20);
    expect(await rejection(call)).toBeInstanceOf(CancelledError);
    const pid = transport.process.pid!;
    await client.close();
    expect(transport.process.exitCode !== null || transport.process.signalCode !== null).toBe(true);
    expect(() => process.kill(pid, 0)).toThrow(); // the process is gone
    await expect(client.callTool('anything')).rejects.toThrow();
  });

  it('http: a server that accepts and never answers cannot hold a call or close() up', async () => {
    const sockets = new Set<Socket>();
    const silent = createNetServer((socket) => { sockets.add(socket); socket.resume(); socket.on('close', () => sockets.delete(socket)); socket.on('error', () => {}); });
    await new Promise<void>((r) => silent.listen(0, '127.0.0.1', () => r()));
    const port = (silent.address() as { port: number }).port;
    try {
      const client = new Client(new HttpClientTransport({ url: `http://127.0.0.1:${port}/mcp` }), { era: 'modern' });
      const ac = new AbortController();
      const call = client.callTool('anything', {}, { signal: ac.signal });
      setTimeout(() => ac.abort('gave up'), 30);
      const t0 = performance.now();
      expect(await rejection(call)).toBeInstanceOf(CancelledError);
      expect(performance.now() - t0).toBeLessThan(1000);
      await expect(client.callTool('anything', {}, { timeoutMs: 30 })).rejects.toBeInstanceOf(CancelledError);
      await client.close();
      await until(() => sockets.size === 0, 5_000, 'the client\'s connections to close');
    } finally {
      for (const s of sockets) s.destroy();
      await new Promise<void>((r) => silent.close(() => r()));
    }
  });
});
