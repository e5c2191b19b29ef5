// The requestState key ring (no Redis needed): a state sealed by one server opens on another server
// with the same ring; rotated to [K2, K], a server still opens K's states and seals new ones with K2.
import { randomBytes } from 'node:crypto';
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { modernHeaders, modernMeta, startNode } from './cross-node-helpers.js';
import type { Node } from './cross-node-helpers.js';
import { createServer } from '../../src/index.js';

const nodes: Node[] = [];
afterEach(async () => { await Promise.all(nodes.splice(0).map((n) => n.close())); });

const K = randomBytes(32);
const K2 = randomBytes(32).toString('base64url');

async function node(keys: readonly (string | Uint8Array)[] | undefined): Promise<Node> {
  const started = await startNode(undefined, { workers: 1, ...(keys === undefined ? {} : { requestStateKeys: keys }) });
  nodes.push(started);
  return started;
}

/** Round 1 of the two-round tool: its requestState. */
async function roundOne(at: Node): Promise<string> {
  const first = JSON.parse((await post(at.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'two_rounds', arguments: {}, _meta: modernMeta } }, modernHeaders('tools/call', 'two_rounds'))).body);
  return first.result.requestState as string;
}

/** Whether round 2 on `at` accepts the state (a refused state is -32602 before the tool runs). */
async function accepts(at: Node, state: string): Promise<boolean> {
  // The tool's second round waits for a cancel: a short timeout on the HTTP request ends it; an
  // accepted state shows as a stream (or a result), a refused one as the -32602 error at once.
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), 500);
  try {
    const res = await fetch(at.url, {
      method: 'POST', signal: controller.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...modernHeaders('tools/call', 'two_rounds') },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'two_rounds', arguments: {}, inputResponses: { name: { action: 'accept', content: { name: 'x' } } }, requestState: state, _meta: modernMeta } }),
    });
    const text = await res.text();
    return !text.includes('-32602');
  } catch {
    return true; // still running after 500 ms: the state was accepted and round 2 runs
  } finally {
    clearTimeout(timer);
  }
}

describe('requestState key ring', () => {
  it('a state sealed on one server opens on another with the same ring; a rotated ring opens old states and seals with the new key', async () => {
    const [one, two, rotated, onlyOld, onlyNew, randomKeys] = await Promise.all([node([K]), node([K.toString('base64')]), node([K2, K]), node([K]), node([K2]), node(undefined)]);
    const state = await roundOne(one);
    expect(await accepts(two, state)).toBe(true);
    expect(await accepts(rotated, state)).toBe(true);
    // A server with its own random key (the default) refuses it: the case the ring exists for.
    expect(await accepts(randomKeys, state)).toBe(false);
    const fresh = await roundOne(rotated);
    expect(await accepts(onlyNew, fresh)).toBe(true);
    expect(await accepts(onlyOld, fresh)).toBe(false);
  });

  it('refuses keys shorter than 32 bytes, undecodable strings, and an empty ring', () => {
    for (const requestStateKeys of [[randomBytes(16)], ['not base64!'], [], [Buffer.from('short').toString('base64')]]) {
      expect(() => createServer({ tools: [], requestStateKeys })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    }
  });
});
