// CORS for browser-based MCP clients (issue 12): off by default; with `cors.origins`, a preflight
// from a listed origin gets 204 with the methods and headers it may use, responses expose the MCP
// headers, and other origins get neither (and are still refused by the Origin check). Both adapters.
import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server, ServerOptions } from '../../src/index.js';
import { adapters } from '../helpers/adapters.js';

const echo = defineTool({ name: 'echo', description: 'Echo.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (a) => String(a.text) });
const kApp = 'https://app.example.com';

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(http: 'uws' | 'node', extra: Partial<ServerOptions> = {}): Promise<string> {
  server = createServer({ tools: [echo], port: 0, http, janitor: false, ...extra }, { log: () => {} });
  return (await server.listen()).url;
}

function send(url: string, method: string, headers: Record<string, string>, body?: string): Promise<{ status: number; headers: Record<string, string | string[] | undefined>; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { method, agent: false, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks).toString() }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const preflight = (origin: string) => ({ origin, 'access-control-request-method': 'POST', 'access-control-request-headers': 'content-type, mcp-protocol-version, x-api-key' });
const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });

describe.each(adapters('CORS'))('CORS over %s', (http) => {
  it('is off by default: a preflight gets 405 and responses carry no Access-Control-* headers', async () => {
    const url = await start(http, { allowedOrigins: [kApp] });
    const pre = await send(url, 'OPTIONS', preflight(kApp));
    expect(pre.status).toBe(405);
    const res = await send(url, 'POST', { origin: kApp, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, init);
    expect(res.status).toBe(200);
    expect(Object.keys(res.headers).filter((h) => h.startsWith('access-control-'))).toEqual([]);
  });

  it('with cors.origins: preflight 204, responses expose Mcp-Session-Id; other origins get nothing and 403', async () => {
    const url = await start(http, { cors: { origins: [kApp] } });
    const pre = await send(url, 'OPTIONS', preflight(kApp));
    expect(pre.status).toBe(204);
    expect(pre.headers['access-control-allow-origin']).toBe(kApp);
    expect(pre.headers['access-control-allow-methods']).toBe('POST, DELETE');
    expect(pre.headers['access-control-allow-headers']).toBe('content-type, mcp-protocol-version, x-api-key');
    expect(pre.headers['access-control-max-age']).toBe('600');
    const res = await send(url, 'POST', { origin: kApp, 'content-type': 'application/json', accept: 'application/json, text/event-stream' }, init);
    expect(res.status).toBe(200);
    expect(res.headers['access-control-allow-origin']).toBe(kApp);
    expect(String(res.headers['access-control-expose-headers'])).toContain('mcp-session-id');
    expect(res.headers['vary']).toBe('Origin');
    expect(res.headers['mcp-session-id']).toMatch(/^[0-9a-f]{32}$/);
    // Another origin: no preflight, no CORS headers, and the Origin check refuses its requests.
    expect((await send(url, 'OPTIONS', preflight('https://evil.example'))).status).toBe(403);
    const evil = await send(url, 'POST', { origin: 'https://evil.example', 'content-type': 'application/json' }, init);
    expect(evil.status).toBe(403);
    expect(evil.headers['access-control-allow-origin']).toBeUndefined();
    // A non-browser client (no Origin) is served as before, without CORS headers.
    const plain = await send(url, 'POST', { 'content-type': 'application/json' }, init);
    expect(plain.status).toBe(200);
    expect(plain.headers['access-control-allow-origin']).toBeUndefined();
  });

  it('refuses a malformed cors option at createServer', () => {
    expect(() => createServer({ tools: [echo], cors: { origins: ['https://app.example.com/path'] } })).toThrow(/cors\.origins/);
  });
});
