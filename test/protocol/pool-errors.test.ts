// A ProtocolError thrown by a tool is a JSON-RPC error whether the tool runs inline or in the pool
// (it crosses the thread as plain { code, message, data }); any other failure is isError content in
// both. End to end: a real server, the fixture module loaded by its HTTP worker and its pool thread.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { modernMeta, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { post } from '../helpers/http.js';

const kTools = new URL('../fixtures/protocol-error-tools.mjs', import.meta.url);

let server: TestServer;
beforeAll(async () => {
  server = await startServer({ tools: kTools, workers: 1, poolThreads: 1, sessions: false });
});
afterAll(async () => {
  await server?.close();
});

const legacy = (name: string, id: number) => post(server.address.url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, { 'mcp-protocol-version': '2025-11-25' });
const modern = (name: string, id: number) => post(
  server.address.url,
  { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: modernMeta() } },
  { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
);

describe.each([['legacy', legacy], ['modern', modern]])('%s era', (_era, call) => {
  it.each([
    ['refuse', { code: -32602, message: 'nothing to refine', data: { field: 'query' } }],
    ['refuse_later', { code: -32050, message: 'upstream said no' }],
  ])('%s: a ProtocolError is the same JSON-RPC error inline and in the pool', async (name, error) => {
    const inline = await call(name, 1);
    const pooled = await call(`${name}_pool`, 1);
    expect(inline.status).toBe(200);
    expect(pooled.status).toBe(200);
    expect(JSON.parse(inline.body)).toEqual({ jsonrpc: '2.0', id: 1, error });
    expect(JSON.parse(pooled.body)).toEqual({ jsonrpc: '2.0', id: 1, error });
  });

  it('a ProtocolError whose data is not JSON still reaches the client, without the data, in both', async () => {
    expect(JSON.parse((await call('refuse_bigint_data', 2)).body).error).toEqual({ code: -32602, message: 'odd data' });
    expect(JSON.parse((await call('refuse_bigint_data_pool', 2)).body).error).toEqual({ code: -32602, message: 'odd data' });
  });

  it('any other failure is isError content in both', async () => {
    const inline = JSON.parse((await call('plain_throw', 3)).body);
    const pooled = JSON.parse((await call('plain_throw_pool', 3)).body);
    expect(inline.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'kaput' }] });
    expect(pooled.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'kaput' }] });
  });
});
