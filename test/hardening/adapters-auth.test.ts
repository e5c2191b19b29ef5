// An authenticate hook over both HTTP adapters, in real HTTP worker threads: a hook that waits
// must not cost the request its body (the uWS adapter lost a body that was complete before
// readBody), and the hook must see every request header, not only the adapters' fixed list.
import { describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { adapters } from '../helpers/adapters.js';

const kAuthTools = new URL('../fixtures/adapters-auth-tools.mjs', import.meta.url);
const kVersion = '2025-11-25';
const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: kVersion, capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const onCleanup = cleanupAfterEach();

async function start(http: 'uws' | 'node'): Promise<TestServer> {
  const running = await startServer({ tools: kAuthTools, http });
  onCleanup(() => running.close());
  return running;
}

function headers(extra: Record<string, string | undefined>): Record<string, string> {
  const out: Record<string, string> = { 'mcp-protocol-version': kVersion };
  for (const [k, v] of Object.entries(extra)) if (v !== undefined) out[k] = v;
  return out;
}

describe.each(adapters('authenticate hook'))('authenticate hook over the %s adapter', (http) => {
  it.each(['wait-timer', 'wait-microtasks'])('a hook that awaits (%s) leaves the body intact', async (wait) => {
    const { address } = await start(http);
    const as = (session?: string) => headers({ authorization: wait, 'x-api-key': 'key-a', 'mcp-session-id': session });
    // Several rounds: body chunks arrive before readBody every time the hook waits.
    for (let round = 0; round < 3; round++) {
      const opened = await post(address.url, init, as());
      expect(opened.status, opened.body).toBe(200);
      const session = String(opened.headers['mcp-session-id']);
      const list = await post(address.url, { jsonrpc: '2.0', id: 1, method: 'tools/list' }, as(session));
      expect(list.status, list.body).toBe(200);
      expect(list.body).toContain('"echo"');
      const text = `round ${round} ${'é'.repeat(3000)}`; // a body of several kB
      const call = await post(address.url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text } } }, as(session));
      expect(call.status, call.body).toBe(200);
      expect(call.body).toContain(text);
    }
  });

  it('the hook reads x-api-key: principals scope sessions, no key is anonymous', async () => {
    const { address } = await start(http);
    const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
    const as = (key: string | undefined, session?: string) => headers({ 'x-api-key': key, 'mcp-session-id': session });
    const sessionOf = async (key: string | undefined) => {
      const res = await post(address.url, init, as(key));
      expect(res.status, res.body).toBe(200);
      return String(res.headers['mcp-session-id']);
    };
    const alice = await sessionOf('key-a');
    const anonymous = await sessionOf(undefined);
    expect((await post(address.url, ping, as('key-a', alice))).status).toBe(200);
    // A session is bound to the principal that opened it (its scope is principal:<id>).
    expect((await post(address.url, ping, as('key-b', alice))).status).toBe(404);
    expect((await post(address.url, ping, as(undefined, alice))).status).toBe(404);
    expect((await post(address.url, ping, as(undefined, anonymous))).status).toBe(200);
    expect((await post(address.url, ping, as('key-a', anonymous))).status).toBe(404);
  });
});
