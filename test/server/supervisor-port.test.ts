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
import { adapterCases } from '../helpers/adapters.js';

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
