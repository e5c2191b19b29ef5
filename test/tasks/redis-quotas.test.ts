/**
 * Per-client task quotas in the cluster's store: counted over every node in Redis (the keys
 * `client:<client>` and `cbytes:<client>`), so a client rotating sessions and nodes is stopped at
 * its own bound, and another client is served. A real redis-server (test/helpers/redis.ts), two
 * RedisTaskStores as two nodes on one key prefix.
 */
import { Redis } from 'ioredis';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RedisTaskStore } from '../../src/index.js';
import type { NewTask, TaskLimits } from '../../src/index.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';

const cleanup = cleanupAfterEach();
let server: RedisInstance;
let prefixes = 0;

beforeAll(async () => { server = await startRedis(); });
afterAll(async () => { await server?.stop(); });

async function nodes(limits: Partial<TaskLimits>): Promise<[RedisTaskStore, RedisTaskStore]> {
  const keyPrefix = `q${++prefixes}:`;
  const out: RedisTaskStore[] = [];
  for (const nodeId of ['A', 'B']) {
    const redis = new Redis(server.url, { enableOfflineQueue: false, maxRetriesPerRequest: 1, lazyConnect: true });
    redis.on('error', () => {});
    await redis.connect();
    cleanup(() => redis.disconnect());
    const store = new RedisTaskStore({ redis, keyPrefix, nodeId }, limits, { heartbeatMs: 60_000 });
    cleanup(() => store.close());
    out.push(store);
  }
  return [out[0], out[1]];
}

let next = 0;
const task = (owner: string, client: string, runner: string): NewTask => ({ taskId: `q${++next}`, owner, client, dialect: 'legacy', toolName: 't', runner });

async function outcome(promise: Promise<unknown>): Promise<string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return `${(error as { code?: string }).code}: ${(error as Error).message}`;
  }
}

describe('RedisTaskStore: per-client quotas, cluster-wide', () => {
  it('a client rotating sessions over two nodes keeps at most maxTasksPerClient tasks; another client is served', async () => {
    const [a, b] = await nodes({ maxTasks: 100, maxTasksPerOwner: 5, maxTasksPerClient: 12 });
    let created = 0;
    let refused = '';
    for (let session = 0; session < 10 && refused === ''; session++) {
      for (let i = 0; i < 5; i++) {
        const node = (session + i) % 2 === 0 ? a : b;
        const got = await outcome(node.create(task(`session:s${session}`, 'ip:192.0.2.7', node === a ? 'A/1' : 'B/1')));
        if (got === 'ok') created++;
        else { refused = got; break; }
      }
    }
    expect(created).toBe(12);
    expect(refused).toMatch(/^task_quota_reached: .*maxTasksPerClient 12/);
    for (let i = 0; i < 5; i++) expect(await outcome(b.create(task('session:other', 'ip:192.0.2.8', 'B/1')))).toBe('ok');
  });

  it('one client\'s results fill only its own share of the bytes, whichever node stores them; another client keeps its results', async () => {
    const [a, b] = await nodes({ maxTasks: 100, maxTasksPerOwner: 100, maxStoredBytes: 100_000, maxStoredBytesPerClient: 30_000, maxTaskBytes: 20_000 });
    const statuses: string[] = [];
    for (let i = 0; i < 6; i++) {
      const node = i % 2 === 0 ? a : b;
      const t = task(`session:s${i}`, 'ip:192.0.2.7', node === a ? 'A/1' : 'B/1');
      const made = await outcome(node.create(t));
      if (made !== 'ok') { statuses.push(made); continue; }
      const done = await node.update(t.taskId, { status: 'completed', resultJson: JSON.stringify('x'.repeat(12_000)) });
      statuses.push(`${done!.status} ${done!.statusMessage ?? ''}`);
    }
    // Two results (24 kB) fit the client's 30 kB; the third fails on the client's own bound.
    expect(statuses.slice(0, 2).every((s) => s.startsWith('completed'))).toBe(true);
    expect(statuses.slice(2).every((s) => /maxStoredBytesPerClient/.test(s))).toBe(true);
    // The other client's own share holds two such results, whatever the first client did.
    for (let i = 0; i < 2; i++) {
      const t = task('session:other', 'ip:192.0.2.8', 'A/1');
      await a.create(t);
      const done = await a.update(t.taskId, { status: 'completed', resultJson: JSON.stringify('y'.repeat(12_000)) });
      expect(done!.status).toBe('completed');
      expect((await b.get(t.taskId, 'session:other'))!.resultJson!.length).toBe(12_002);
    }
  });
});
