/**
 * x-mcp-header from the client's side (2026-07-28): a tools/call must mirror annotated arguments in
 * Mcp-Param-{Name} headers, which the client learns from tools/list. `sluice call` calls without
 * listing first, so the client lists and retries once when the server refuses the call for its
 * headers (-32020); tools whose annotations break the rules are dropped from lists and never called.
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { Client, HttpClientTransport, RpcError } from '../../src/client/index.js';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { startFixture } from '../loadgen/helpers.js';

const bin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));

const geo = defineTool({
  name: 'geo',
  description: 'Answers with the region it was routed for.',
  inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' }, note: { type: 'string' } }, required: ['region'] },
  taskSupport: 'optional',
  handler: async ({ region }) => {
    await new Promise((r) => setTimeout(r, 20));
    return `routed to ${String(region)}`;
  },
});

let server: Server | undefined;
let fake: HttpServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
  if (fake !== undefined) await new Promise<void>((resolve) => fake!.close(() => resolve()));
  fake = undefined;
});

async function sluice(): Promise<string> {
  server = createServer({ tools: [geo], port: 0, janitor: false }, { log: () => {} });
  return (await server.listen()).url;
}

async function cli(args: string[]): Promise<{ code: number | null; out: string; err: string }> {
  const child = spawn(process.execPath, [bin, ...args]);
  let out = '';
  let err = '';
  child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
  const [code] = await once(child, 'exit') as [number | null];
  return { code, out, err };
}

describe('sluice call with x-mcp-header tools', () => {
  for (const era of ['auto', 'modern'] as const) {
    it(`--era ${era}: the call succeeds (the client learns the annotations and retries once)`, async () => {
      const url = await sluice();
      const plain = await cli(['call', '--era', era, url, 'geo', '{"region":"eu-west-1"}']);
      expect(plain.err).toBe('');
      expect(plain.code).toBe(0);
      expect(plain.out).toBe('routed to eu-west-1\n');
    }, 20_000);
  }

  it('--task: the task is created and its result printed', async () => {
    const url = await sluice();
    const task = await cli(['call', '--task', url, 'geo', '{"region":"ap-south-1"}']);
    expect(task.code, task.err).toBe(0);
    expect(task.out).toBe('routed to ap-south-1\n');
  }, 20_000);
});

interface Seen { method: string; name?: string; region?: string | undefined }

/**
 * A minimal 2026-07-28 server on loopback: lists one good annotated tool and three whose
 * annotations break the rules, and refuses a `geo` call whose Mcp-Param-Region is missing.
 * `alwaysRefuse` refuses every call (a header the client can never get right).
 */
async function fakeServer(alwaysRefuse = false): Promise<{ url: string; seen: Seen[] }> {
  const seen: Seen[] = [];
  const tools = [
    { name: 'geo', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } } } },
    { name: 'in_items', inputSchema: { type: 'object', properties: { list: { type: 'array', items: { type: 'string', 'x-mcp-header': 'Item' } } } } },
    { name: 'a_number', inputSchema: { type: 'object', properties: { n: { type: 'number', 'x-mcp-header': 'N' } } } },
    { name: 'twice', inputSchema: { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Key' }, b: { type: 'string', 'x-mcp-header': 'key' } } } },
    { name: 'bad_token', inputSchema: { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'has space' } } } },
    { name: 'plain', inputSchema: { type: 'object', properties: { a: { type: 'string' } } } },
  ];
  fake = createHttpServer((req: IncomingMessage, res) => {
    let body = '';
    req.on('data', (c: Buffer) => { body += c.toString(); });
    req.on('end', () => {
      const rpc = JSON.parse(body) as { id?: number; method: string; params?: { name?: string; arguments?: { region?: string } } };
      const answer = (status: number, payload: Record<string, unknown>) => {
        res.writeHead(status, { 'content-type': 'application/json' });
        res.end(JSON.stringify({ jsonrpc: '2.0', id: rpc.id, ...payload }));
      };
      if (rpc.id === undefined) { res.writeHead(202).end(); return; }
      const region = req.headers['mcp-param-region'];
      seen.push({ method: rpc.method, ...(rpc.params?.name === undefined ? {} : { name: rpc.params.name }), region: typeof region === 'string' ? region : undefined });
      if (rpc.method === 'server/discover') return answer(200, { result: { resultType: 'complete', supportedVersions: ['2026-07-28'], capabilities: { tools: {} } } });
      if (rpc.method === 'tools/list') return answer(200, { result: { resultType: 'complete', tools } });
      if (rpc.method === 'tools/call') {
        if (alwaysRefuse || (rpc.params?.name === 'geo' && region !== rpc.params.arguments?.region)) {
          return answer(400, { error: { code: -32020, message: 'Mcp-Param-Region header is required: arguments.region is in the body' } });
        }
        return answer(200, { result: { resultType: 'complete', content: [{ type: 'text', text: `called ${String(rpc.params?.name)}` }] } });
      }
      answer(200, { error: { code: -32601, message: 'Method not found' } });
    });
  });
  await new Promise<void>((resolve) => fake!.listen(0, '127.0.0.1', () => resolve()));
  return { url: `http://127.0.0.1:${(fake.address() as AddressInfo).port}/mcp`, seen };
}

describe('the Sluice client and x-mcp-header', () => {
  it('a first call is refused for its headers, the client lists the tools and retries once with Mcp-Param-Region', async () => {
    const { url, seen } = await fakeServer();
    const client = new Client(new HttpClientTransport({ url }), { era: 'modern' });
    try {
      const result = await client.callTool('geo', { region: 'us-east-2' });
      expect(result.content).toEqual([{ type: 'text', text: 'called geo' }]);
      expect(seen.filter((s) => s.method !== 'server/discover')).toEqual([
        { method: 'tools/call', name: 'geo', region: undefined },
        { method: 'tools/list', region: undefined },
        { method: 'tools/call', name: 'geo', region: 'us-east-2' },
      ]);
      // Learned: the next call carries the header at once.
      await client.callTool('geo', { region: 'eu' });
      expect(seen.at(-1)).toEqual({ method: 'tools/call', name: 'geo', region: 'eu' });
    } finally {
      await client.close();
    }
  });

  it('retries only once: a server that keeps refusing gets its -32020 back', async () => {
    const { url, seen } = await fakeServer(true);
    const client = new Client(new HttpClientTransport({ url }), { era: 'modern' });
    try {
      const error = await client.callTool('geo', { region: 'x' }).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(RpcError);
      expect((error as RpcError).rpcCode).toBe(-32020);
      expect(seen.filter((s) => s.method === 'tools/call')).toHaveLength(2);
      expect(seen.filter((s) => s.method === 'tools/list')).toHaveLength(1);
    } finally {
      await client.close();
    }
  });

  it('a server whose tools/list pages loop: the call ends with invalid_response after one round of them, not a hundred pages', async () => {
    const loop = await startFixture('bench-bad-servers.mjs', ['cursor-loop']);
    const client = new Client(new HttpClientTransport({ url: loop.url }), { era: 'modern' });
    try {
      const error = await client.callTool('t0', {}).catch((e: unknown) => e);
      expect(error).toMatchObject({ code: 'invalid_response', message: 'the server\'s tools/list gave the cursor "1" a second time (page 4): its pages loop' });
    } finally {
      await client.close();
      await loop.stop();
    }
  });

  it('drops tools whose annotations are invalid from lists, and refuses to call them', async () => {
    const { url, seen } = await fakeServer();
    const client = new Client(new HttpClientTransport({ url }), { era: 'modern' });
    try {
      const { tools } = await client.listTools();
      expect(tools.map((t) => t.name)).toEqual(['geo', 'plain']);
      expect([...client.droppedTools].sort()).toEqual(['a_number', 'bad_token', 'in_items', 'twice']);
      const calls = seen.filter((s) => s.method === 'tools/call').length;
      await expect(client.callTool('in_items', { list: ['a'] })).rejects.toMatchObject({ code: 'invalid_response' });
      expect(seen.filter((s) => s.method === 'tools/call')).toHaveLength(calls);
    } finally {
      await client.close();
    }
  });

  it('sluice list leaves the invalid tools out and says so', async () => {
    const { url } = await fakeServer();
    const listed = await cli(['list', '--era', 'modern', url]);
    expect(listed.code, listed.err).toBe(0);
    expect(listed.out).toContain('Tools (2):');
    expect(listed.out).not.toContain('in_items');
    expect(listed.err).toContain('left out tool in_items: its x-mcp-header annotations are invalid');
  }, 20_000);
});
