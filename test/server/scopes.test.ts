import { afterEach, describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
import type { Server, Tool } from '../../src/index.js';
import { post } from '../helpers/http.js';
import { kToolsModule, recordPath, recorded, until } from '../helpers/server.js';

const tools = ((await import(kToolsModule.href)) as { default: Tool[] }).default.filter((t) => t.pool !== true);
let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const block = (id: number, record: string) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'block', arguments: { ms: 10_000, record } } });
const cancel = (requestId: number) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId } });
const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

describe('request scopes over HTTP', () => {
  it('authenticated principals do not share a namespace, and a session is bound to its principal', async () => {
    server = createServer({
      tools,
      port: 0,
      janitor: false,
      http: 'node', // the node:http adapter serves the same protocol
      authenticate: (req) => {
        const token = req.header('authorization');
        if (token === 'Bearer boom') throw new Error('bad token');
        return token === undefined ? undefined : { id: token.replace('Bearer ', '') };
      },
    }, { log: () => {} });
    const { url } = await server.listen();
    const as = (who: string, session?: string) => ({ authorization: `Bearer ${who}`, 'mcp-protocol-version': '2025-11-25', ...(session === undefined ? {} : { 'mcp-session-id': session }) });
    const aliceSession = String((await post(url, init, as('alice'))).headers['mcp-session-id']);
    const bobSession = String((await post(url, init, as('bob'))).headers['mcp-session-id']);
    // Bob presenting Alice's session id: 404, as if it did not exist.
    expect((await post(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, as('bob', aliceSession))).status).toBe(404);
    expect((await post(url, { jsonrpc: '2.0', id: 1, method: 'ping' }, as('alice', aliceSession))).status).toBe(200);
    // A throwing authenticate hook: 401.
    expect((await post(url, init, { authorization: 'Bearer boom' })).status).toBe(401);
    const record = recordPath();
    const call = post(url, block(5, record), as('alice', aliceSession));
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    expect((await post(url, cancel(5), as('bob', bobSession))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 150));
    expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
    expect((await post(url, cancel(5), as('alice', aliceSession))).status).toBe(202);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'alice\'s cancel');
    expect((await call).status).toBe(202);
  });

  it('behind a trusted proxy the client address comes from X-Forwarded-For (its last hop)', async () => {
    server = createServer({ tools, port: 0, janitor: false, sessions: false, trustProxy: true }, { log: () => {} });
    const { url } = await server.listen();
    const from = (chain: string) => ({ 'x-forwarded-for': chain, 'mcp-protocol-version': '2025-11-25' });
    const record = recordPath();
    const call = post(url, block(9, record), from('203.0.113.7'));
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    // A client forging the first hop is still another client: only the last hop counts.
    expect((await post(url, cancel(9), from('203.0.113.7, 198.51.100.2'))).status).toBe(202);
    // Another address in the same IPv6 /64 would share a scope; another IPv4 address does not.
    expect((await post(url, cancel(9), from('203.0.113.8'))).status).toBe(202);
    await new Promise((r) => setTimeout(r, 150));
    expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
    expect((await post(url, cancel(9), from('198.51.100.9, 203.0.113.7'))).status).toBe(202);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the same client\'s cancel');
    expect((await call).status).toBe(202);
  });
});
