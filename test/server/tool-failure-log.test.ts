// A tool that throws is logged on the server with the tool's name (at 'warn', bounded per minute);
// a tool that stops by throwing its CancelledError is not a failure. Issue 12.
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { kMaxFailureChars } from '../../src/tools/result.js';
import { post } from '../helpers/http.js';
import { modernMeta } from '../helpers/server.js';
import { until } from '../helpers/wait.js';

const kFailingPoolTools = new URL('../fixtures/failing-pool-tools.mjs', import.meta.url);

const boom = defineTool({ name: 'boom', description: 'Throws.', inputSchema: { type: 'object', properties: {} }, handler: async () => { throw new Error('kaput'); } });
const huge = defineTool({ name: 'huge', description: 'Throws what it was sent.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (args) => { throw new Error(`bad text: ${String(args.text)}`); } });
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

  it('a pool tool\'s throw is logged the same, described in its thread; one that throws on its cancel is not', async () => {
    const logs: string[] = [];
    server = createServer({ tools: kFailingPoolTools, port: 0, workers: 1, poolThreads: 1, janitor: false, sessions: false }, { log: (_level, message) => { logs.push(message); } });
    const { url } = await server.listen();
    const boom = async (id: number) => {
      const response = await post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'boom_pool', arguments: {} } }, { 'mcp-protocol-version': '2025-11-25' });
      expect(JSON.parse(response.body)).toMatchObject({ result: { isError: true, content: [{ text: 'pool kaput' }] } });
    };
    await boom(1);
    await until(() => logs.some((m) => m.includes('tool boom_pool threw')));
    // The pool thread's stack: where the handler threw.
    expect(logs.find((m) => m.includes('tool boom_pool threw'))).toMatch(/^sluice: tool boom_pool threw: Error: pool kaput\n\s+at .*failing-pool-tools\.mjs/);
    // 2026-07-28: closing the stream cancels; the tool then throws an error of its own.
    const abort = new AbortController();
    const cancelled = fetch(url, {
      method: 'POST', signal: abort.signal,
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'stops_by_throwing' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'stops_by_throwing', arguments: {}, _meta: modernMeta() } }),
    }).catch((error: unknown) => error);
    setTimeout(() => abort.abort(), 200);
    expect(await cancelled).toMatchObject({ name: 'AbortError' });
    // One pool thread: this call runs after the cancelled one has thrown, and its line comes after.
    await boom(3);
    await until(() => logs.filter((m) => m.includes('tool boom_pool threw')).length === 2);
    expect(logs.filter((m) => m.includes('stopped after the cancel'))).toEqual([]);
  });

  it('cut a long message to kMaxFailureChars and say how much was left out; the client still gets all of it', async () => {
    const logs: string[] = [];
    server = createServer({ tools: [huge], port: 0, janitor: false, sessions: false }, { log: (_level, message) => { logs.push(message); } });
    const { url } = await server.listen();
    const text = 'x'.repeat(1_000_000);
    const response = await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'huge', arguments: { text } } }, { 'mcp-protocol-version': '2025-11-25' });
    expect(JSON.parse(response.body)).toMatchObject({ result: { isError: true, content: [{ text: `bad text: ${text}` }] } });
    const line = logs.find((m) => m.includes('tool huge threw'));
    expect(line).toMatch(/^sluice: tool huge threw: Error: bad text: x+… \(\d+ more characters\)$/);
    expect(line!.length).toBeLessThan(kMaxFailureChars + 100);
    // The stack and message together were 1 000 000 characters and more: every one is counted.
    expect(Number(/\((\d+) more/.exec(line!)![1]) + kMaxFailureChars).toBeGreaterThan(1_000_000);
  });
});
