/**
 * `tasks` is declared per negotiated revision: 2025-11-25 has experimental tasks, 2025-06-18 and
 * 2025-03-26 have none (and 2026-07-28 declares the tasks extension in server/discover instead).
 * (The official SDKs cannot be pinned to 2025-06-18: v1 always asks for its latest, v2 pins only
 * 2026-07-28 and later; so this is a raw initialize at each revision over HTTP.)
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kAccept, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);

async function initializeAt(url: string, version: string): Promise<Record<string, unknown>> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: kAccept },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'caps', version: '1' } } }),
  });
  const text = await res.text();
  const body = JSON.parse(text.trimStart().startsWith('{') ? text : /^data: (.*)$/m.exec(text)![1]!) as { result: Record<string, unknown> };
  const session = res.headers.get('mcp-session-id');
  if (session !== null) await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': version } });
  return body.result;
}

describe('capabilities per negotiated revision', () => {
  let s: TestServer;
  beforeAll(async () => { s = await startServer({ tools: kTools }); });
  afterAll(async () => { await s?.close(); });

  it('initialize at 2025-11-25 declares tasks; at 2025-06-18 and 2025-03-26 it does not', async () => {
    const latest = await initializeAt(s.address.url, '2025-11-25');
    expect(latest.protocolVersion).toBe('2025-11-25');
    expect((latest.capabilities as Record<string, unknown>).tasks).toMatchObject({ cancel: {}, requests: { tools: { call: {} } } });
    for (const version of ['2025-06-18', '2025-03-26']) {
      const older = await initializeAt(s.address.url, version);
      expect(older.protocolVersion).toBe(version);
      const capabilities = older.capabilities as Record<string, unknown>;
      expect(capabilities.tasks, version).toBeUndefined();
      expect(capabilities.tools, version).toBeDefined();
    }
  });
});
