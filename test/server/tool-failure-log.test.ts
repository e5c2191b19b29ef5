// A tool that throws is logged on the server with the tool's name (at 'warn', bounded per minute);
// a tool that stops by throwing its CancelledError is not a failure. Issue 12.
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { post } from '../helpers/http.js';

const boom = defineTool({ name: 'boom', description: 'Throws.', inputSchema: { type: 'object', properties: {} }, handler: async () => { throw new Error('kaput'); } });
const nullProto = defineTool({ name: 'null_proto', description: 'Throws a bare object.', inputSchema: { type: 'object', properties: {} }, handler: () => { throw Object.create(null); } });

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('tool failures in the log', () => {
  it('name the tool at warn, at most 20 a minute, then say how many were not logged', async () => {
    const logs: Array<[string, string]> = [];
    server = createServer({ tools: [boom, nullProto], port: 0, janitor: false, sessions: false, logLevel: 'debug' }, { log: (level, message) => { logs.push([level, message]); } });
    const { url } = await server.listen();
    const call = (name: string, id: number) => post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, { 'mcp-protocol-version': '2025-11-25' });
    const first = await call('boom', 1);
    expect(JSON.parse(first.body)).toMatchObject({ result: { isError: true, content: [{ text: 'kaput' }] } });
    expect(logs.filter(([, m]) => m.includes('tool boom threw'))).toEqual([['warn', expect.stringContaining('kaput')]]);
    await call('null_proto', 2);
    expect(logs.some(([l, m]) => l === 'warn' && m.includes('tool null_proto threw'))).toBe(true);
    for (let i = 0; i < 30; i++) await call('boom', 10 + i);
    const lines = logs.filter(([, m]) => /tool (boom|null_proto) threw/.test(m));
    expect(lines.length).toBe(20);
  });
});
