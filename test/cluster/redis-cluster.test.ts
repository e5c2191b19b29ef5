// Redis Cluster is refused at start, with a clear message, against a real 3-master cluster started
// here (redis-server --cluster-enabled yes ×3, slots assigned by `redis-cli --cluster create`).
// Sluice's scripts change keys of several slots at once, so a cluster would accept the URL, look
// ready, and then fail every task create ("Script attempted to access a non local key").
import { execFile, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { freePort } from '../helpers/redis.js';
import { metric, readyz, startNode, until } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';
import { scratchDir } from '../helpers/scratch.js';

const run = promisify(execFile);
const children: ChildProcess[] = [];
const ports: number[] = [];
const nodes: Node[] = [];

beforeAll(async () => {
  for (let i = 0; i < 3; i++) {
    const port = await freePort();
    const dir = scratchDir('sluice-rcluster-');
    children.push(spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--cluster-enabled', 'yes', '--cluster-config-file', join(dir, 'nodes.conf'), '--save', '', '--appendonly', 'no', '--dir', dir, '--loglevel', 'warning'], { stdio: 'ignore' }));
    ports.push(port);
  }
  for (const port of ports) {
    await until(async () => {
      const probe = new Redis({ port, host: '127.0.0.1', lazyConnect: true, retryStrategy: () => null, maxRetriesPerRequest: 0 });
      probe.on('error', () => {});
      try {
        await probe.connect();
        return (await probe.ping()) === 'PONG';
      } catch {
        return false;
      } finally {
        probe.disconnect();
      }
    }, 10_000, `cluster node ${port} to start`);
  }
  await run('redis-cli', ['--cluster', 'create', ...ports.map((p) => `127.0.0.1:${p}`), '--cluster-replicas', '0', '--cluster-yes'], { timeout: 20_000 });
  const probe = new Redis({ port: ports[0], host: '127.0.0.1' });
  await until(async () => /cluster_state:ok/.test(String(await probe.call('CLUSTER', 'INFO'))), 15_000, 'the cluster to be ok');
  probe.disconnect();
}, 40_000);

afterAll(async () => {
  await Promise.all(nodes.map((n) => n.close()));
  for (const child of children) child.kill('SIGKILL');
});

describe('Redis Cluster', () => {
  it('--redis with a cluster node is refused at start: invalid_option naming Redis Cluster', { timeout: 20_000 }, async () => {
    const started = startNode(`redis://127.0.0.1:${ports[0]}`, { workers: 1 });
    await expect(started).rejects.toMatchObject({ code: 'invalid_option', message: expect.stringMatching(/is a Redis Cluster node \(cluster_enabled:1\); Sluice needs one Redis or Valkey primary/) });
  });

  it('a degraded start logs the refusal once Redis answers and keeps the link down (never up on a cluster)', { timeout: 20_000 }, async () => {
    const node = await startNode(`redis://127.0.0.1:${ports[1]}`, { workers: 1 }, { startDegraded: true });
    nodes.push(node);
    await until(() => node.logs.some((l) => l.startsWith('error') && l.includes('is a Redis Cluster node')), 10_000, 'the refusal to be logged');
    await new Promise((r) => setTimeout(r, 500));
    expect(await metric(node, 'sluice_cluster_up')).toBe(0);
    expect(await readyz(node)).toEqual({ status: 200, text: 'ready, cluster link down' });
  });
});
