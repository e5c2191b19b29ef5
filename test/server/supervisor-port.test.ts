// A port held by another process is refused, clearly, instead of being shared through
// SO_REUSEPORT (which would split the traffic between two servers); our own HTTP workers still
// share theirs.
import { spawn } from 'node:child_process';
import { createServer as createNetServer } from 'node:net';
import type { Server as NetServer } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { post } from '../helpers/http.js';
import { kToolsModule, modernMeta } from '../helpers/server.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { adapterCases, kNodeReusePort, kNoReusePortReason, kUwsLoads, skipNote } from '../helpers/adapters.js';
import { listenersOn } from '../../src/transport/http/shared-port.js';
import { loadUws } from '../../src/transport/http/uws/load.js';

const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const cleanup = cleanupAfterEach();

function server(options: { port: number; http: 'uws' | 'node'; workers?: number; inProcess?: boolean }): Server {
  const echo = defineTool({ name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (a) => String(a.text) });
  const s = createServer({
    tools: options.inProcess === true ? [echo] : kToolsModule, port: options.port, http: options.http, workers: options.workers ?? 1, janitor: false, exposeWorker: true,
  }, { log: () => {} });
  cleanup(() => s.close());
  return s;
}

async function holdPort(): Promise<{ port: number; holder: NetServer }> {
  const holder = createNetServer((socket) => socket.destroy());
  await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
  cleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())));
  const address = holder.address();
  return { port: typeof address === 'object' && address !== null ? address.port : 0, holder };
}

async function echoes(url: string): Promise<boolean> {
  const res = await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'mine' }, _meta: modernMeta() } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' });
  return JSON.parse(res.body).result?.content?.[0]?.text === 'mine';
}

describe('a port held by another server', () => {
  it.each(adapterCases('a second Sluice on the same port is refused', [
    { http: 'uws' as const, workers: 2 },
    { http: 'node' as const, workers: 1 },
  ]))('$http: a second Sluice on the same port is refused with port_in_use; the first keeps all the traffic', async ({ http, workers }) => {
    const first = server({ port: 0, http, workers });
    const address = await first.listen();
    const second = server({ port: address.port, http, workers });
    await expect(second.listen()).rejects.toMatchObject({ code: 'port_in_use', message: expect.stringContaining('already in use') });
    expect(second.workerThreadIds).toEqual([]);
    // Every connection still lands on the first server's workers.
    for (let i = 0; i < 8; i++) expect(await echoes(address.url)).toBe(true);
    expect(first.workerThreadIds).toHaveLength(workers);
  });

  it.each(adapterCases('a plain net server on the port makes listen() reject', [
    { http: 'uws' as const, inProcess: false },
    { http: 'uws' as const, inProcess: true },
    { http: 'node' as const, inProcess: false },
    { http: 'node' as const, inProcess: true },
  ]))('$http (in-process: $inProcess): a plain net server on the port makes listen() reject with port_in_use', async ({ http, inProcess }) => {
    const { port } = await holdPort();
    await expect(server({ port, http, inProcess }).listen()).rejects.toMatchObject({ code: 'port_in_use' });
  });

  it('the CLI says the port is in use and exits non-zero', async () => {
    const { port } = await holdPort();
    const child = spawn(process.execPath, [kBin, 'serve', '--port', String(port), '--workers', '1'], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanup(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.stdout.resume();
    const code = await new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c)));
    expect(code, stderr).toBe(1);
    expect(stderr).toContain(`cannot listen on 127.0.0.1:${port}: the port is already in use by another process (EADDRINUSE)`);
    expect(stderr).not.toContain('serving');
  });
});

/** A listener on host:port that shares it (SO_REUSEPORT): raw uWS where it loads, else node:net's reusePort. */
async function sharingListener(host: string, port: number): Promise<void> {
  if (kUwsLoads) {
    const uws = loadUws();
    const app = uws.App().any('/*', (res) => { res.end('foreign'); });
    const socket = await new Promise<unknown>((resolve) => app.listen(host, port, resolve));
    expect(socket).toBeTruthy();
    cleanup(() => { uws.us_listen_socket_close(socket as never); });
    return;
  }
  const holder = createNetServer((c) => c.destroy());
  await new Promise<void>((resolve, reject) => {
    holder.once('error', reject);
    holder.listen({ host, port, reusePort: true } as Parameters<NetServer['listen']>[0], () => resolve());
  });
  cleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())));
}

/** Whether this Node can bind a port twice (uWS, or node:http's reusePort). */
const kCanShare = kUwsLoads || kNodeReusePort;
const kCanShareNote = skipNote(kCanShare, `neither uWS nor reusePort here: ${kNoReusePortReason}`);

describe('listenersOn: the listening sockets on one address, from /proc/net/tcp{,6}', () => {
  it('counts a plain listener, not one on another address or port, and nothing for a host name', async () => {
    const { port } = await holdPort();
    expect(listenersOn('127.0.0.1', port)).toBe(1);
    expect(listenersOn('127.0.0.2', port)).toBe(0);
    expect(listenersOn('::1', port)).toBe(0);
    expect(listenersOn('127.0.0.1', port === 65535 ? 1 : port + 1)).toBe(0);
    expect(listenersOn('localhost', port)).toBeUndefined();
  });

  it('reads IPv6 literals in every spelling', async () => {
    const holder = createNetServer((c) => c.destroy());
    await new Promise<void>((resolve) => holder.listen(0, '::1', resolve));
    cleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const { port } = holder.address() as { port: number };
    expect(listenersOn('::1', port)).toBe(1);
    expect(listenersOn('0:0:0:0:0:0:0:1', port)).toBe(1);
    expect(listenersOn('::', port)).toBe(0);
    expect(listenersOn('127.0.0.1', port)).toBe(0);
  });

  it.runIf(kCanShare)(`counts every socket sharing a port through SO_REUSEPORT${kCanShareNote}`, async () => {
    const { port, holder } = await holdPort();
    await new Promise<void>((resolve) => holder.close(() => resolve()));
    await sharingListener('127.0.0.1', port);
    expect(listenersOn('127.0.0.1', port)).toBe(1);
    await sharingListener('127.0.0.1', port);
    expect(listenersOn('127.0.0.1', port)).toBe(2);
  });
});

describe('a server that binds the port while this one starts', () => {
  // The probe before the first worker sees a free port; the other server binds it (SO_REUSEPORT)
  // before or while our worker does. Sharing it silently would split the traffic.
  it.each(adapterCases('two servers started together on one port never both serve it', [
    // In-process servers are left out: their probe and listen are too close together for this
    // test to put the other server's bind between them (it passes with or without the check).
    { http: 'uws' as const, workers: 1 },
    ...(kNodeReusePort ? [{ http: 'node' as const, workers: 2 }] : []),
  ]))('$http: two servers started together on one port never both serve it', async ({ http, workers }) => {
    for (let round = 0; round < 3; round++) {
      const { port, holder } = await holdPort();
      await new Promise<void>((resolve) => holder.close(() => resolve()));
      const a = server({ port, http, workers });
      const b = server({ port, http, workers });
      const first = a.listen();
      // b's probe runs once a's is done and before a's worker listens (it loads its tools module).
      await new Promise((r) => setTimeout(r, 15));
      const results = await Promise.allSettled([first, b.listen()]);
      const served = results.filter((r) => r.status === 'fulfilled');
      expect(served.length, JSON.stringify(results.map((r) => (r.status === 'rejected' ? String(r.reason) : 'served')))).toBeLessThanOrEqual(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).toMatchObject({ code: 'port_in_use' });
      expect(listenersOn('127.0.0.1', port)).toBe(served.length === 1 ? workers : 0);
      if (served.length === 1) for (let i = 0; i < 4; i++) expect(await echoes(`http://127.0.0.1:${port}/mcp`)).toBe(true);
      await Promise.all([a.close(), b.close()]);
    }
  });

  it.runIf(kCanShare)(`six servers started at once on port 0 each end up alone on their port${kCanShareNote}`, async () => {
    // Their probes may hand two of them one port; the one that counts a second listener picks again.
    const servers = Array.from({ length: 6 }, () => server({ port: 0, http: kUwsLoads ? 'uws' : 'node', workers: kUwsLoads ? 1 : 2 }));
    const addresses = await Promise.all(servers.map((s) => s.listen()));
    const ports = addresses.map((a) => a.port);
    expect(new Set(ports).size).toBe(ports.length);
    for (const p of ports) expect(listenersOn('127.0.0.1', p)).toBe(kUwsLoads ? 1 : 2);
  });
});
