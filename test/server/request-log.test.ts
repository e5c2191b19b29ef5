/**
 * The per-request log line at logLevel 'debug': one structured line per request as it ends
 * (method, target, id, scope, status, error type, duration, trace id), over HTTP workers (the line
 * crosses to the supervisor's log) and in-process; none at any other level.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { post } from '../helpers/http.js';
import { modernMeta, until } from '../helpers/server.js';

const nap = defineTool({ name: 'nap', description: 'sleeps', inputSchema: { type: 'object', properties: { ms: { type: 'number' } } }, handler: async (a) => { await new Promise((r) => setTimeout(r, Number(a.ms))); return 'ok'; } });
const refuse = defineTool({ name: 'refuse', description: 'fails', inputSchema: { type: 'object' }, handler: () => { throw new Error('no'); } });
const kModern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

interface Line { method: string; target?: string; id: unknown; scope: string; status: string; error?: string; durationMs: number; traceId?: string }

async function serve(logLevel: 'debug' | 'info', tools: URL | typeof nap[] = [nap, refuse]): Promise<{ url: string; lines: () => Line[]; all: string[] }> {
  const all: string[] = [];
  server = createServer({ tools, port: 0, logLevel, http: 'node', janitor: false }, { log: (_level, message) => { all.push(message); } });
  const { url } = await server.listen();
  const lines = () => all.filter((m) => m.startsWith('sluice: request ')).map((m) => JSON.parse(m.slice('sluice: request '.length)) as Line);
  return { url, lines, all };
}

describe('request log line (logLevel debug)', () => {
  it('one line per request: method, target, status, error type, duration and the _meta trace id', async () => {
    const { url, lines } = await serve('debug');
    const traceId = '3'.repeat(32);
    const ok = await post(url, { jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'nap', arguments: { ms: 30 }, _meta: modernMeta({ traceparent: `00-${traceId}-${'4'.repeat(16)}-01` }) } }, { ...kModern, 'mcp-name': 'nap' });
    expect(ok.status).toBe(200);
    await post(url, { jsonrpc: '2.0', id: 12, method: 'tools/call', params: { name: 'refuse', arguments: {}, _meta: modernMeta() } }, { ...kModern, 'mcp-name': 'refuse' });
    await until(() => lines().length >= 2, 5_000, 'two request lines');
    const napped = lines().find((l) => l.id === 11)!;
    expect(napped).toMatchObject({ method: 'tools/call', target: 'nap', status: 'ok', traceId });
    expect(napped.error).toBeUndefined();
    expect(napped.durationMs).toBeGreaterThanOrEqual(29);
    expect(napped.scope).toMatch(/^modern:|^ip:/);
    const refused = lines().find((l) => l.id === 12)!;
    expect(refused).toMatchObject({ target: 'refuse', error: 'tool_error' });
    expect(refused.traceId).toBeUndefined();
    expect(lines()).toHaveLength(2); // one per request, nothing for the rest
  });

  it('from HTTP workers, the line reaches the server log', async () => {
    const { url, lines } = await serve('debug', new URL('../fixtures/telemetry-tools.mjs', import.meta.url));
    await post(url, { jsonrpc: '2.0', id: 'w1', method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: modernMeta() } }, { ...kModern, 'mcp-name': 'nap' });
    await until(() => lines().some((l) => l.id === 'w1'), 10_000, 'the worker request line');
    expect(lines().find((l) => l.id === 'w1')).toMatchObject({ method: 'tools/call', target: 'nap', status: 'ok' });
  });

  it('at info, no request line is made', async () => {
    const { url, all } = await serve('info');
    for (let i = 0; i < 3; i++) await post(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: modernMeta() } }, { ...kModern, 'mcp-name': 'nap' });
    await new Promise((r) => setTimeout(r, 100));
    expect(all.filter((m) => m.startsWith('sluice: request '))).toEqual([]);
  });
});
