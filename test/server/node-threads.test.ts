// node:http serves with N worker threads on one port wherever Node has `reusePort` (≥ 22.12, ≥ 23.1,
// Linux); Node 20 keeps one thread and says why. The port_in_use probe still refuses a foreign
// holder while our own workers share. And the uWS loader: the official uWebSockets.js first, then
// the btc-vision npm build, then the trufflesuite republish, for the running ABI, never a JavaScript
// imitation.
import { mkdirSync, symlinkSync, writeFileSync, existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { createServer as createNetServer } from 'node:net';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { reusePortSupport } from '../../src/transport/http/node/reuse-port.js';
import { findUws, kCurrentBuildPackage, kOfficialPackage, kPackagedPackage } from '../../src/transport/http/uws/load.js';
import { kNoReusePortReason, kNodeReusePort, kUwsLoads, skipNote } from '../helpers/adapters.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { kToolsModule, modernMeta } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const cleanup = cleanupAfterEach();
const kNode = process.versions.node;

function nodeServer(port: number, workers: number, logs: string[] = []): Server {
  const s = createServer({ tools: kToolsModule, port, http: 'node', workers, janitor: false, exposeWorker: true }, { log: (_l, m) => { logs.push(m); } });
  cleanup(() => s.close());
  return s;
}

const kEcho = { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'hi' }, _meta: modernMeta() } };
const kEchoHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };

/** The `sluice-worker` of each of `n` fresh connections (one request each, no keep-alive). */
async function workersSeen(url: string, n: number): Promise<string[]> {
  const seen: string[] = [];
  for (let i = 0; i < n; i++) {
    const res = await post(url, kEcho, kEchoHeaders);
    expect(res.status).toBe(200);
    expect(JSON.parse(res.body).result.content[0].text).toBe('hi');
    seen.push(String(res.headers['sluice-worker']));
  }
  return seen;
}

describe('reusePort feature detection (by version and platform)', () => {
  it.each([
    ['20.20.2', 'linux', false],
    ['22.11.0', 'linux', false],
    ['22.12.0', 'linux', true],
    ['22.23.3', 'linux', true],
    ['23.0.0', 'linux', false],
    ['23.1.0', 'linux', true],
    ['24.21.0', 'linux', true],
    ['v26.0.0', 'freebsd', true],
    ['24.21.0', 'darwin', false],
    ['24.21.0', 'win32', false],
  ] as const)('Node %s on %s: %s', (version, platform, ok) => {
    expect(reusePortSupport(version, platform).ok).toBe(ok);
  });

  it('names the real reason', () => {
    expect(reusePortSupport('20.20.2', 'linux')).toEqual({ ok: false, reason: 'Node 20.x has no reusePort (needs ≥ 22.12; this is 20.20.2)' });
    expect(reusePortSupport('23.0.0', 'linux')).toMatchObject({ ok: false, reason: expect.stringContaining('Node 23.x has no reusePort (needs ≥ 22.12 on the 22 line, ≥ 23.1 after it') });
    expect(reusePortSupport('24.0.0', 'darwin')).toMatchObject({ ok: false, reason: expect.stringContaining('not supported on darwin') });
  });
});

describe(`node:http with 2 workers on Node ${kNode}`, () => {
  it.runIf(kNodeReusePort)(`serves from 2 threads on one port (reusePort), and warns about nothing${skipNote(kNodeReusePort, kNoReusePortReason)}`, async () => {
    const logs: string[] = [];
    const s = nodeServer(0, 2, logs);
    const { url } = await s.listen();
    expect(s.adapter).toBe('node');
    expect(s.workerThreadIds).toHaveLength(2);
    expect(s.adapterDetail).toBe('node:http, 2 threads sharing the port through reusePort');
    const expected = new Set(s.workerThreadIds.map(String));
    const seen = new Set<string>();
    // The kernel spreads new connections by a hash of the 4-tuple: a few fresh ones reach both.
    for (let round = 0; round < 20 && seen.size < 2; round++) for (const w of await workersSeen(url, 8)) seen.add(w);
    expect(seen).toEqual(expected);
    expect(logs).toEqual([]);
  });

  it.skipIf(kNodeReusePort)(`serves from 1 thread and says why (Node < 22.12 has no reusePort)${skipNote(!kNodeReusePort, `Node ${kNode} shares the port through reusePort`)}`, async () => {
    const logs: string[] = [];
    const s = nodeServer(0, 2, logs);
    const { url } = await s.listen();
    expect(s.workerThreadIds).toHaveLength(1);
    expect(new Set(await workersSeen(url, 6))).toEqual(new Set(s.workerThreadIds.map(String)));
    const major = kNode.split('.')[0];
    expect(logs).toEqual([`sluice: HTTP adapter: node:http runs 1 HTTP thread instead of 2: it can share a port between threads only with reusePort, and Node ${major}.x has no reusePort (needs ≥ 22.12; this is ${kNode}).`]);
    expect(s.adapterDetail).toContain(`Node ${major}.x has no reusePort (needs ≥ 22.12`);
  });

  it('a second Sluice on the port is refused with port_in_use; the first keeps all the traffic on its own threads', async () => {
    const first = nodeServer(0, 2);
    const address = await first.listen();
    const second = nodeServer(address.port, 2);
    await expect(second.listen()).rejects.toMatchObject({ code: 'port_in_use' });
    expect(second.workerThreadIds).toEqual([]);
    const own = new Set(first.workerThreadIds.map(String));
    for (const w of await workersSeen(address.url, 8)) expect(own.has(w)).toBe(true);
  });

  it.runIf(kNodeReusePort)(`a foreign reusePort holder of the port is refused too (the exclusive probe)${skipNote(kNodeReusePort, kNoReusePortReason)}`, async () => {
    const holder = createNetServer((socket) => socket.destroy());
    await new Promise<void>((resolve) => holder.listen({ port: 0, host: '127.0.0.1', reusePort: true } as Parameters<typeof holder.listen>[0], resolve));
    cleanup(() => new Promise<void>((resolve) => holder.close(() => resolve())));
    const address = holder.address();
    const port = typeof address === 'object' && address !== null ? address.port : 0;
    await expect(nodeServer(port, 2).listen()).rejects.toMatchObject({ code: 'port_in_use' });
  });
});

describe('the uWS loader', () => {
  const abiFile = `uws_${process.platform}_${process.arch}_${process.versions.modules}.node`;
  const realRequire = createRequire(import.meta.url);
  const packagedDir = dirname(realRequire.resolve(`${kPackagedPackage}/package.json`));
  const currentDir = dirname(realRequire.resolve(kCurrentBuildPackage));
  /** The binding that really serves here (undefined where none loads): what the sandboxes must end on. */
  const real = kUwsLoads ? findUws(realRequire).source : undefined;
  const kPackagedHasAbi = existsSync(join(packagedDir, 'binaries', abiFile));

  /**
   * A folder whose node_modules has the two npm builds (or a stand-in for the btc-vision one with no
   * binary) and, optionally, an "official" uWebSockets.js whose binary is the one that loads here.
   */
  function sandbox(official?: { binary?: 'real' | 'none'; version?: string }, current: 'real' | 'no-binary' | 'absent' = 'real'): NodeRequire {
    const root = scratchDir('sluice-uws-');
    mkdirSync(join(root, 'node_modules', '@trufflesuite'), { recursive: true });
    mkdirSync(join(root, 'node_modules', '@btc-vision'), { recursive: true });
    symlinkSync(packagedDir, join(root, 'node_modules', kPackagedPackage), 'dir');
    if (current === 'real') symlinkSync(currentDir, join(root, 'node_modules', kCurrentBuildPackage), 'dir');
    if (current === 'no-binary') {
      const dir = join(root, 'node_modules', kCurrentBuildPackage);
      mkdirSync(dir);
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: kCurrentBuildPackage, version: '20.57.0', main: 'uws.js', exports: { require: './uws.js' } }));
      writeFileSync(join(dir, 'uws.js'), 'throw new Error("never run");');
    }
    if (official !== undefined) {
      const dir = join(root, 'node_modules', kOfficialPackage);
      mkdirSync(dir);
      writeFileSync(join(dir, 'package.json'), JSON.stringify({ name: kOfficialPackage, version: official.version ?? '20.99.0', main: 'uws.js', exports: { require: './uws.js', import: './uws.js' } }));
      // Its entry is never used: a JavaScript stand-in there would be an imitation.
      writeFileSync(join(dir, 'uws.js'), 'module.exports = { App() { return {}; }, us_listen_socket_close() {}, us_socket_local_port() { return 0; } };');
      if (official.binary === 'real' && real !== undefined) symlinkSync(real.file, join(dir, abiFile));
    }
    return createRequire(join(root, 'index.js'));
  }

  it.runIf(kUwsLoads)(`prefers the official uWebSockets.js when it is installed and its binary loads${skipNote(kUwsLoads, `uWebSockets.js cannot load under Node ${kNode}`)}`, () => {
    const { source, officialSkipped } = findUws(sandbox({ binary: 'real', version: '20.99.0' }));
    expect(source.official).toBe(true);
    expect(source.description).toBe(`official uWebSockets.js v20.99.0 (native ${abiFile})`);
    expect(officialSkipped).toBeUndefined();
  });

  it.runIf(kUwsLoads)(`falls back to an npm build when the official one has no binary for this Node, and says why${skipNote(kUwsLoads, `uWebSockets.js cannot load under Node ${kNode}`)}`, () => {
    const { source, officialSkipped } = findUws(sandbox({ binary: 'none' }));
    expect(source.official).toBe(false);
    expect(source.packageName).toBe(real?.packageName);
    expect(source.description.startsWith(`uWebSockets.js from ${real?.packageName ?? ''} v`)).toBe(true);
    expect(officialSkipped).toContain('the official uWebSockets.js v20.99.0 is installed but its binary does not load');
  });

  it.runIf(kUwsLoads)(`without the official package, the npm build that loads here serves${skipNote(kUwsLoads, `uWebSockets.js cannot load under Node ${kNode}`)}`, () => {
    const { source, officialSkipped, skipped } = findUws(sandbox());
    expect(source.packageName).toBe(real?.packageName);
    expect(officialSkipped).toBeUndefined();
    expect(skipped[0]).toBe('the official uWebSockets.js is not installed');
  });

  it.runIf(real?.packageName === kCurrentBuildPackage)(`the btc-vision build is taken before the trufflesuite republish where its binary loads${skipNote(real?.packageName === kCurrentBuildPackage, `the btc-vision build does not load under Node ${kNode} on this system`)}`, () => {
    const { source, skipped } = findUws(sandbox());
    expect(source.packageName).toBe(kCurrentBuildPackage);
    expect(source.file).toBe(join(currentDir, abiFile));
    expect(skipped).toEqual(['the official uWebSockets.js is not installed']);
  });

  it.runIf(kPackagedHasAbi)(`with no btc-vision binary for this ABI, the trufflesuite binding serves and the reason is kept${skipNote(kPackagedHasAbi, `${kPackagedPackage} has no binary for ABI ${process.versions.modules}`)}`, () => {
    const { source, skipped } = findUws(sandbox(undefined, 'no-binary'));
    expect(source.packageName).toBe(kPackagedPackage);
    expect(skipped).toEqual(['the official uWebSockets.js is not installed', `${kCurrentBuildPackage} v20.57.0 has no native uWebSockets.js binding for ${process.platform}-${process.arch}, Node ${kNode} (ABI ${process.versions.modules}) (it ships ABI 115/127/137/141: Node 20/22/24/25, glibc >= 2.38)`]);
  });

  it.skipIf(kUwsLoads)(`on Node ${kNode} none loads: uws_native_unavailable names every reason${skipNote(!kUwsLoads, `a uWS binding loads under Node ${kNode}`)}`, () => {
    expect(() => findUws(sandbox({ binary: 'none' }))).toThrow(expect.objectContaining({
      code: 'uws_native_unavailable',
      message: expect.stringMatching(/official uWebSockets\.js v20\.99\.0 is installed but its binary does not load.*@btc-vision\/uwebsockets\.js v20\.57\.0 .*@trufflesuite\/uws-js-unofficial v20\.30\.0\S* has no native uWebSockets\.js binding for .*ABI/),
    }));
    expect(() => findUws(sandbox())).toThrow(/the official uWebSockets\.js is not installed/);
  });

  it('never serves on a JavaScript imitation, whatever its file is called', () => {
    const imitation = { App() { return {}; }, us_listen_socket_close() {}, us_socket_local_port() { return 0; } };
    const fake = Object.assign((id: string) => { if (id.endsWith('.node')) return imitation; throw new Error(`cannot find ${id}`); }, {
      resolve: (id: string) => { if (id === kOfficialPackage) return '/nowhere/uWebSockets.js/uws.js'; throw new Error(`cannot find ${id}`); },
    }) as unknown as NodeRequire;
    expect(() => findUws(fake)).toThrow(expect.objectContaining({
      code: 'uws_native_unavailable',
      message: expect.stringContaining('is not a native uWebSockets.js binding (a JavaScript imitation?)'),
    }));
  });

  it('the adapter decision is exposed: which build serves', async () => {
    const s = createServer({ tools: kToolsModule, port: 0, workers: 1, janitor: false }, { log: () => {} });
    cleanup(() => s.close());
    await s.listen();
    if (kUwsLoads) expect(s.adapterDetail).toMatch(/uWebSockets\.js .*\(native uws_.*\.node\)$/);
    else expect(s.adapterDetail).toMatch(/^node:http/);
  });
});
