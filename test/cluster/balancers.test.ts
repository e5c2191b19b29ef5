// The balancer snippets of docs/deployment.md under a real haproxy and nginx (Debian packages
// `haproxy` and `nginx`; skipped, visibly, where a binary is missing), in front of two cluster
// nodes on one real redis-server. The snippets are read from the document itself, their example
// addresses replaced by the nodes'.
// - haproxy round robin with the documented HTTP/1.1 `/readyz` check: both servers UP and serving;
//   with Redis down the balancer still serves (readiness is not tied to the shared Redis); a
//   draining node is taken out while the other serves. Plain `option httpchk GET /readyz` (HTTP/1.0)
//   marks a uWebSockets.js server DOWN, as the document says.
// - nginx, the sticky snippet: a legacy session and its SSE calls pass through.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { chmodSync, readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { kUwsLoads, skipNote } from '../helpers/adapters.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { freePort, startRedis } from '../helpers/redis.js';
import { modernHeaders, modernMeta, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';
import { scratchDir } from '../helpers/scratch.js';

const onCleanup = cleanupAfterEach();
const kDoc = readFileSync(new URL('../../docs/deployment.md', import.meta.url), 'utf8');
const kHttp = kUwsLoads ? 'uws' : 'node';

function has(binary: string): boolean {
  try {
    execFileSync(binary, ['-v'], { stdio: 'ignore' });
    return true;
  } catch {
    return false;
  }
}

/** The fenced blocks of `lang` in the document. */
function blocks(lang: string): string[] {
  return [...kDoc.matchAll(new RegExp('```' + lang + '\\n([\\s\\S]*?)```', 'g'))].map((m) => m[1]!);
}

function withNodes(snippet: string, nodes: readonly Node[]): string {
  return snippet.replace('10.0.0.11:3000', `127.0.0.1:${nodes[0]!.address.port}`).replace('10.0.0.12:3000', `127.0.0.1:${nodes[1]!.address.port}`);
}

async function echoThrough(port: number, text: string): Promise<number> {
  try {
    const res = await post(`http://127.0.0.1:${port}/mcp`, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text }, _meta: modernMeta } }, modernHeaders('tools/call', 'echo'));
    return res.status === 200 && res.body.includes(text) ? 200 : res.status;
  } catch {
    return 0;
  }
}

async function run(binary: string, args: readonly string[], port: number): Promise<ChildProcess> {
  const child = spawn(binary, args, { stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
  onCleanup(async () => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    const exited = new Promise((r) => child.once('exit', r));
    child.kill('SIGKILL');
    await exited;
  });
  await until(async () => {
    if (child.exitCode !== null) throw new Error(`${binary} exited ${child.exitCode}: ${stderr}`);
    return (await echoThrough(port, 'up')) !== 0;
  }, 10_000, `${binary} to listen`);
  return child;
}

async function twoNodes(): Promise<[Node, Node, Awaited<ReturnType<typeof startRedis>>]> {
  const redis = await startRedis();
  onCleanup(() => redis.stop());
  const keyPrefix = `b${Date.now().toString(36)}:`;
  const nodes = await Promise.all(['A', 'B'].map((nodeId) => startNode(redis.url, { workers: 1, http: kHttp, shutdownGraceMs: 4_000 }, { keyPrefix, nodeId })));
  onCleanup(() => Promise.all(nodes.map((n) => n.close())));
  return [nodes[0]!, nodes[1]!, redis];
}

async function haproxy(backend: string): Promise<number> {
  const port = await freePort();
  const dir = scratchDir('sluice-haproxy-');
  const config = join(dir, 'haproxy.cfg');
  writeFileSync(config, [
    'defaults',
    '    mode http',
    '    timeout connect 2s',
    '    timeout client 30s',
    '    timeout server 30s',
    '    default-server inter 200ms fall 2 rise 1',
    'frontend mcp',
    `    bind 127.0.0.1:${port}`,
    '    default_backend sluice',
    backend,
  ].join('\n'));
  await run('haproxy', ['-db', '-f', config], port);
  return port;
}

async function allServed(port: number, times: number): Promise<boolean> {
  for (let i = 0; i < times; i++) if ((await echoThrough(port, `r${i}`)) !== 200) return false;
  return true;
}

describe.skipIf(!has('haproxy'))(`haproxy (docs/deployment.md, round robin)${skipNote(has('haproxy'), 'no haproxy binary here (.ci/run installs the Debian package)')}`, () => {
  const snippet = blocks('haproxy').find((b) => b.includes('balance roundrobin'));

  it('the documented HTTP/1.1 check keeps both servers UP; Redis down leaves them serving; a draining node is taken out', { timeout: 40_000 }, async () => {
    expect(snippet, 'the round robin haproxy snippet').toBeDefined();
    expect(snippet).toContain('ver HTTP/1.1');
    const [a, b, redis] = await twoNodes();
    const port = await haproxy(withNodes(snippet!, [a, b]));
    await until(() => allServed(port, 6), 10_000, 'haproxy to serve through both nodes');
    // Many checks later (200 ms apart) still served: neither server was marked DOWN.
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await allServed(port, 10)).toBe(true);

    // Redis gone: every node's link is down at once, /readyz stays 200, the balancer serves on.
    await redis.kill();
    await until(async () => (await fetch(`${a.base}/readyz`).then((r) => r.text())) === 'ready, cluster link down', 10_000, 'A to see Redis gone');
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await allServed(port, 10)).toBe(true);
    await redis.restart();

    // A drains (/readyz 503): haproxy takes it out, B serves everything.
    const closing = a.close();
    await new Promise((r) => setTimeout(r, 1_000));
    expect(await allServed(port, 10)).toBe(true);
    await closing;
    expect(await allServed(port, 10)).toBe(true);
  });

  it.skipIf(!kUwsLoads)(`plain \`option httpchk GET /readyz\` (HTTP/1.0) marks a uWebSockets.js server DOWN, as documented${skipNote(kUwsLoads, `uWebSockets.js cannot load under Node ${process.versions.node}: this case is about uWS, node:http answers HTTP/1.0`)}`, { timeout: 30_000 }, async () => {
    const [a, b] = await twoNodes();
    const old = withNodes(snippet!, [a, b]).replace(/ *http-check send[^\n]*\n/, '').replace('option httpchk', 'option httpchk GET /readyz');
    const port = await haproxy(old);
    await until(async () => (await echoThrough(port, 'x')) === 503, 10_000, 'haproxy to mark both servers DOWN');
  });
});

describe.skipIf(!has('nginx'))(`nginx (docs/deployment.md, sticky on the session and task headers)${skipNote(has('nginx'), 'no nginx binary here (.ci/run installs the Debian package)')}`, () => {
  it('a legacy session, its SSE calls and a 2026-07-28 call pass through', { timeout: 30_000 }, async () => {
    const snippet = blocks('nginx').find((b) => b.includes('location /mcp'));
    expect(snippet, 'the nginx snippet').toBeDefined();
    const [a, b] = await twoNodes();
    const port = await freePort();
    const dir = scratchDir('sluice-nginx-');
    chmodSync(dir, 0o777);
    const config = join(dir, 'nginx.conf');
    const server = withNodes(snippet!, [a, b]).replace('listen 80;', `listen 127.0.0.1:${port};`);
    writeFileSync(config, [
      'daemon off;', 'master_process off;', `pid ${dir}/nginx.pid;`, 'error_log stderr warn;', 'events {}',
      'http {', '    access_log off;',
      ...['client_body', 'proxy', 'fastcgi', 'uwsgi', 'scgi'].map((t) => `    ${t}_temp_path ${dir}/${t};`),
      server, '}',
    ].join('\n'));
    await run('nginx', ['-p', dir, '-c', config, '-e', 'stderr'], port);

    const url = `http://127.0.0.1:${port}/mcp`;
    const init = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, { 'mcp-protocol-version': '2025-11-25' });
    expect(init.status).toBe(200);
    const session = String(init.headers['mcp-session-id']);
    for (let i = 0; i < 4; i++) {
      const call = await post(url, { jsonrpc: '2.0', id: i + 1, method: 'tools/call', params: { name: 'block', arguments: { ms: 50, tick: 10 }, _meta: { progressToken: `p${i}` } } }, { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session });
      expect(call.status).toBe(200);
      expect(call.body).toContain('notifications/progress');
      expect(call.body).toContain('finished');
    }
    expect(await allServed(port, 4)).toBe(true);
  });
});
