// Redis over TLS with a self-signed CA given by option (`cluster.tlsCaFile`, CLI --redis-tls-ca):
// a real redis-server with --tls-port and a CA and certificate made here with openssl. With the CA
// the nodes connect and share a session and a task; without it the start is refused (the
// certificate is not trusted), rather than a node that looks up and cannot reach Redis.
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { freePort } from '../helpers/redis.js';
import { modernHeaders, modernMeta, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';
import { scratchDir } from '../helpers/scratch.js';

const dir = scratchDir('sluice-redis-tls-');
const ca = join(dir, 'ca.pem');
let port = 0;
let child: ChildProcess | undefined;
const nodes: Node[] = [];

function openssl(...args: string[]): void {
  execFileSync('openssl', args, { cwd: dir, stdio: 'ignore' });
}

beforeAll(async () => {
  openssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.pem', '-days', '2', '-subj', '/CN=sluice-test-ca');
  openssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'server.key', '-out', 'server.csr', '-subj', '/CN=127.0.0.1');
  writeFileSync(join(dir, 'ext'), 'subjectAltName=IP:127.0.0.1,DNS:localhost');
  openssl('x509', '-req', '-in', 'server.csr', '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-out', 'server.pem', '-days', '2', '-extfile', 'ext');
  port = await freePort();
  child = spawn('redis-server', ['--port', '0', '--tls-port', String(port), '--bind', '127.0.0.1', '--tls-cert-file', join(dir, 'server.pem'), '--tls-key-file', join(dir, 'server.key'), '--tls-ca-cert-file', ca, '--tls-auth-clients', 'no', '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], { stdio: 'ignore' });
  await until(() => {
    try {
      return execFileSync('redis-cli', ['--tls', '--cacert', ca, '-p', String(port), 'ping'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim() === 'PONG';
    } catch {
      return false;
    }
  }, 10_000, 'redis-server (TLS) to start');
}, 30_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  child?.kill('SIGKILL');
});

describe('rediss:// with cluster.tlsCaFile', () => {
  it('with the CA: two nodes share a legacy session and a task over TLS', { timeout: 30_000 }, async () => {
    const keyPrefix = 'tls:';
    const [a, b] = await Promise.all(['A', 'B'].map((nodeId) => startNode(`rediss://127.0.0.1:${port}`, { workers: 1, tools: new URL('./cluster-task-tools.mjs', import.meta.url), tasks: {} }, { keyPrefix, nodeId, tlsCaFile: ca })));
    nodes.push(a!, b!);
    const init = await post(a!.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, { 'mcp-protocol-version': '2025-11-25' });
    expect(init.status).toBe(200);
    const onB = await post(b!.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': String(init.headers['mcp-session-id']) });
    expect(onB.status).toBe(200);
    const meta = { ...modernMeta, 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } };
    const made = await post(a!.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'sleepy', arguments: { ms: 50 }, _meta: meta } }, modernHeaders('tools/call', 'sleepy'));
    const taskId = String((JSON.parse(made.body) as { result: { taskId: string } }).result.taskId);
    await until(async () => {
      const got = await post(b!.url, { jsonrpc: '2.0', id: 3, method: 'tasks/get', params: { taskId, _meta: meta } }, modernHeaders('tasks/get', taskId));
      return got.body.includes('"completed"');
    }, 10_000, 'the task to read completed on B');
  });

  it('without it: the self-signed certificate is refused at start (cluster_unavailable)', { timeout: 20_000 }, async () => {
    await expect(startNode(`rediss://127.0.0.1:${port}`, { workers: 1 }, { keyPrefix: 'tls2:' })).rejects.toMatchObject({ code: 'cluster_unavailable', message: expect.stringMatching(/certificate/i) });
  });

  it('a CA file with a redis:// URL, or one that cannot be read, is an invalid option', async () => {
    await expect(startNode(`redis://127.0.0.1:${port}`, { workers: 1 }, { tlsCaFile: ca })).rejects.toMatchObject({ code: 'invalid_option', message: expect.stringContaining('rediss://') });
    await expect(startNode(`rediss://127.0.0.1:${port}`, { workers: 1 }, { tlsCaFile: join(dir, 'missing.pem') })).rejects.toMatchObject({ code: 'invalid_option', message: expect.stringContaining('cannot be read') });
  });
});
