import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { adapters } from '../helpers/adapters.js';
import { recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

/**
 * A client's address decides its registry scope (`ip:<address>` without sessions) and its in-flight
 * bound. On uWS builds that report connections (`App.filter`), a listener whose open connections all
 * come from one address answers that address without asking the socket (uws/peers.ts): these cases
 * open connections from two loopback addresses on one HTTP worker, in both orders, and check that
 * each request is still its own client's.
 */
let running: TestServer | undefined;
const agents: Agent[] = [];
afterEach(async () => {
  for (const agent of agents.splice(0)) agent.destroy();
  await running?.close();
  running = undefined;
});

/** A keep-alive connection from `from` (any 127/8 address reaches the server's 127.0.0.1). */
function from(localAddress: string): Agent {
  const agent = new Agent({ keepAlive: true, maxSockets: 1, localAddress });
  agents.push(agent);
  return agent;
}

const kHeaders = { 'mcp-protocol-version': '2025-11-25' };
const ping = (id: string) => ({ jsonrpc: '2.0', id, method: 'ping' });
const block = (id: number, record: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'block', arguments: { ms: 10_000, record } } });
const cancel = (requestId: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });

describe.each(adapters('peer addresses'))('peer addresses over %s', (http) => {
  const start = () => startServer({ http, workers: 1, sessions: false, maxInFlightPerClient: 1 });

  /**
   * `owner` holds the one request its bound allows, a blocked tool; `other` is another address.
   * The other client is not at the owner's bound and cannot cancel its request; the owner is and can.
   */
  async function checkSeparate(url: string, owner: string, other: string): Promise<void> {
    const record = recordPath();
    const call = post(url, block(7, record), kHeaders, from(owner));
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    expect((await post(url, ping('b'), kHeaders, from(other))).status).toBe(200);
    expect((await post(url, ping('a'), kHeaders, from(owner))).status).toBe(429);
    expect((await post(url, cancel(7), kHeaders, from(other))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 150));
    expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
    expect((await post(url, cancel(7), kHeaders, from(owner))).status).toBe(202);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the owner\'s cancel');
    await call;
  }

  it('connections from two addresses open together: each request is its own client\'s', async () => {
    running = await start();
    // The owner's connection opens first, so its address is the one all open connections share
    // until the other's opens.
    await checkSeparate(running.address.url, '127.0.0.1', '127.0.0.2');
  });

  it('after one address\'s connections have all closed, the next address is not taken for it', async () => {
    running = await start();
    const { url } = running.address;
    const first = from('127.0.0.2');
    expect((await post(url, ping('x'), kHeaders, first)).status).toBe(200);
    first.destroy();
    await new Promise((r) => setTimeout(r, 100)); // the server sees that connection close
    await checkSeparate(url, '127.0.0.3', '127.0.0.2');
  });
});
