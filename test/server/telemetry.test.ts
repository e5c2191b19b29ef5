import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { initialize, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('telemetry from worker threads', () => {
  it('reaches subscribers in the main thread', async () => {
    const seen: Record<string, unknown[]> = {};
    const names = ['sluice:request:cancelled', 'sluice:request:stop', 'sluice:request:killed', 'sluice:cancellation:cleanup'];
    const subscribers = names.map((name) => {
      const fn = (message: unknown) => { (seen[name] ??= []).push(message); };
      subscribe(name, fn);
      return () => unsubscribe(name, fn);
    });
    try {
      running = await startServer({ forwardRequestStop: true, streamCancelTimeoutMs: 100, janitor: { intervalMs: 50, ttlMs: 0 } });
      const { url } = running.address;
      const session = await initialize(url);
      const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
      await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' } } }, headers);
      const record = recordPath();
      const call = post(url, { jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stubborn', arguments: { ms: 600, record } } }, headers);
      await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
      await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'why not' } }, headers);
      await call;
      await until(() => (seen['sluice:request:killed']?.length ?? 0) > 0 && (seen['sluice:cancellation:cleanup']?.length ?? 0) > 0, 5_000, 'kill and cleanup events');
      expect(seen['sluice:request:cancelled']).toEqual([{ requestId: 2, scope: `session:${session}`, reason: 'why not' }]);
      expect(seen['sluice:request:killed']).toEqual([{ requestId: 2, scope: `session:${session}` }]);
      expect(seen['sluice:request:stop']).toEqual(expect.arrayContaining([
        expect.objectContaining({ method: 'initialize', status: 'ok' }),
        expect.objectContaining({ method: 'tools/call', status: 'ok' }),
        expect.objectContaining({ method: 'tools/call', status: 'killed' }),
      ]));
      expect(seen['sluice:cancellation:cleanup']?.[0]).toEqual({ removed: expect.any(Number), inFlightRemoved: expect.any(Number) });
    } finally {
      for (const stop of subscribers) stop();
    }
  });
});
