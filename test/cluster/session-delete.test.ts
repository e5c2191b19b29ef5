// A legacy session DELETEd on node A is never served by node B afterwards: B holds a copy (it
// served the session), the DELETE's 204 comes only once B has dropped it (B acknowledges the
// invalidation), and a request sent to B right after the 204 gets 404. Hundreds of rounds, bounded.
import { randomBytes } from 'node:crypto';
import { Agent } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { startNode } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';

const kRounds = 600;
const kLanes = 20;
const kLegacy = { 'mcp-protocol-version': '2025-11-25' };
let redis: RedisInstance;
let a: Node;
let b: Node;

beforeAll(async () => {
  redis = await startRedis();
  const keyPrefix = `d${randomBytes(3).toString('hex')}:`;
  [a, b] = await Promise.all(['A', 'B'].map((nodeId) => startNode(redis.url, { workers: 1 }, { keyPrefix, nodeId }))) as [Node, Node];
});
afterAll(async () => {
  await Promise.all([a?.close(), b?.close()]);
  await redis?.stop();
});

function del(url: string, session: string, agent: Agent): Promise<number> {
  return new Promise((resolve, reject) => {
    const req = new URL(url);
    import('node:http').then(({ request }) => {
      const r = request({ host: req.hostname, port: req.port, path: req.pathname, method: 'DELETE', agent, headers: { ...kLegacy, 'mcp-session-id': session } }, (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      });
      r.on('error', reject);
      r.end();
    }, reject);
  });
}

describe('DELETE on one node, a request on another right after', () => {
  it(`is never served after the 204 (${kRounds} rounds, ${kLanes} at a time)`, { timeout: 60_000 }, async () => {
    const served: number[] = [];
    const lane = async (n: number): Promise<void> => {
      const agentA = new Agent({ keepAlive: true });
      const agentB = new Agent({ keepAlive: true });
      try {
        for (let round = n; round < kRounds; round += kLanes) {
          const init = await post(a.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }, kLegacy, agentA);
          expect(init.status).toBe(200);
          const session = String(init.headers['mcp-session-id']);
          const headers = { ...kLegacy, 'mcp-session-id': session };
          // B serves it once, so B holds a copy.
          const before = await post(b.url, { jsonrpc: '2.0', id: 1, method: 'ping' }, headers, agentB);
          expect(before.status).toBe(200);
          expect(await del(a.url, session, agentA)).toBe(204);
          const after = await post(b.url, { jsonrpc: '2.0', id: 2, method: 'ping' }, headers, agentB);
          if (after.status !== 404) served.push(round);
        }
      } finally {
        agentA.destroy();
        agentB.destroy();
      }
    };
    // Several lanes at once keep both nodes busy, as real traffic would: the window is widest then.
    await Promise.all(Array.from({ length: kLanes }, (_, n) => lane(n)));
    expect(served, `rounds where B served the session after A's 204: ${served.join(', ')}`).toEqual([]);
  });
});
