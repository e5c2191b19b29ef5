// A handler written for 2026-07-28 asks the client by returning ctx.inputRequired(...). A legacy
// client cannot retry with answers, so in the legacy era Sluice asks it mid-call (elicitation,
// sampling, roots, on the call's stream) and runs the handler again with the answers: one tool asks
// in both eras. Checked with the official SDK v1 client over HTTP and stdio.
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { CreateMessageRequestSchema, ElicitRequestSchema, ListRootsRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { kAccept, kToolsModule, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import { stdioServer } from '../helpers/stdio.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/ask-tools.mjs', import.meta.url);
const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kCallTimeout = { timeout: 10_000 };

const onCleanup = cleanupAfterEach();

async function server(): Promise<TestServer> {
  const s = await startServer({ tools: kTools });
  onCleanup(() => s.close());
  return s;
}

interface Asked { method: string; params: Record<string, unknown> }

/** An SDK v1 client that declares `capabilities` and answers what it is asked (recording it). */
async function client(transport: StreamableHTTPClientTransport | StdioClientTransport, capabilities: Record<string, object>, answerElicitation?: () => Promise<unknown>) {
  const asked: Asked[] = [];
  const c = new Client({ name: 'legacy-input-test', version: '1' }, { capabilities });
  if (capabilities.elicitation !== undefined) {
    c.setRequestHandler(ElicitRequestSchema, async (request) => {
      asked.push({ method: request.method, params: request.params as Record<string, unknown> });
      if (answerElicitation !== undefined) await answerElicitation();
      return { action: 'accept', content: { name: `Ada ${asked.length}` } };
    });
  }
  if (capabilities.sampling !== undefined) {
    c.setRequestHandler(CreateMessageRequestSchema, async (request) => {
      asked.push({ method: request.method, params: request.params as Record<string, unknown> });
      return { role: 'assistant', content: { type: 'text', text: 'roses are red' }, model: 'test-model' };
    });
  }
  if (capabilities.roots !== undefined) {
    c.setRequestHandler(ListRootsRequestSchema, async (request) => {
      asked.push({ method: request.method, params: request.params as Record<string, unknown> });
      return { roots: [{ uri: 'file:///work', name: 'work' }] };
    });
  }
  await c.connect(transport);
  onCleanup(() => c.close());
  return { c, asked };
}

const everything = { elicitation: {}, sampling: {}, roots: {} };

describe('legacy era: a handler that returns inputRequired is answered mid-call', () => {
  it('one question: the client is asked on the call\'s stream, the handler runs again with the answer and its state (through JSON)', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    const result = await c.callTool({ name: 'ask_name', arguments: {} }, undefined, kCallTimeout);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'hello Ada 1 (accept)' }], structuredContent: { state: { round: 1, at: '1970-01-01T00:00:00.000Z' } } });
    expect(result.isError).not.toBe(true);
    expect(asked).toEqual([{ method: 'elicitation/create', params: expect.objectContaining({ message: 'Name?' }) }]);
    expect(s.logs).toEqual([]);
  });

  it('two rounds, the first with two questions asked one after the other, in the order given', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    const result = await c.callTool({ name: 'ask_all', arguments: {} }, undefined, kCallTimeout).catch((e: unknown) => { throw new Error(`${String(e)}\n${s.logs.join('\n')}`); });
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Ada 1: roses are red' }], structuredContent: { state: { round: 2, name: 'Ada 1', roots: 1 }, keys: ['poem'] } });
    expect(asked.map((a) => a.method)).toEqual(['elicitation/create', 'roots/list', 'sampling/createMessage']);
  });

  it('a pool tool asks the same way: the answers, the state and the capabilities reach its thread', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    const result = await c.callTool({ name: 'ask_in_pool', arguments: {} }, undefined, kCallTimeout);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'pool: hello Ada 1' }], structuredContent: { state: { round: 1 }, elicitation: true } });
    expect(asked).toHaveLength(1);
  });

  it('a prompt asks the same way', async () => {
    const s = await server();
    const { c } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    const prompt = await c.getPrompt({ name: 'ask_prompt', arguments: {} }, kCallTimeout);
    expect(prompt.messages).toEqual([{ role: 'user', content: { type: 'text', text: 'Greet Ada 1.' } }]);
  });

  it('a handler that never stops asking fails after 10 rounds (-32603, logged)', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    await expect(c.callTool({ name: 'ask_forever', arguments: {} }, undefined, kCallTimeout)).rejects.toMatchObject({ code: -32603 });
    expect(asked).toHaveLength(10);
    await until(() => s.logs.some((l) => l.includes('more than 10 times')), 5_000, 'the failure logged');
  });

  it('a malformed inputRequired is the handler\'s fault: -32603, logged, the client never asked', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything);
    await expect(c.callTool({ name: 'ask_badly', arguments: {} }, undefined, kCallTimeout)).rejects.toMatchObject({ code: -32603 });
    expect(asked).toEqual([]);
    await until(() => s.logs.some((l) => l.includes('inputRequests.name must be { method: string, params?: object }')), 5_000, 'the failure logged');
  });

  it('a client that did not declare the capability is refused with -32021 naming it, and is not asked', async () => {
    const s = await server();
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), { elicitation: {} });
    await expect(c.callTool({ name: 'ask_all', arguments: {} }, undefined, kCallTimeout)).rejects.toMatchObject({ code: -32021, data: { requiredCapabilities: { roots: {} } } });
    expect(asked).toEqual([]);
    // A tool's `requires` is refused the same way (a JSON-RPC error the SDK v1 client can read).
    await expect(c.callTool({ name: 'needs_sampling', arguments: {} }, undefined, kCallTimeout)).rejects.toMatchObject({ code: -32021, data: { requiredCapabilities: { sampling: {} } } });
  });

  it('a request whose Accept takes JSON only cannot be asked: 406 with -32600', async () => {
    const s = await server();
    const init = await fetch(s.address.url, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: kAccept },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } }),
    });
    const session = init.headers.get('mcp-session-id')!;
    const res = await fetch(s.address.url, {
      method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_name', arguments: {} } }),
    });
    expect(res.status).toBe(406);
    expect(await res.json()).toMatchObject({ id: 1, error: { code: -32600, message: expect.stringContaining('text/event-stream') } });
  });

  it('cancelled while the client is being asked: the call is cancelled, the handler never runs again', async () => {
    const s = await server();
    let release!: () => void;
    const held = new Promise<void>((resolve) => { release = resolve; });
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything, () => held);
    const record = recordPath();
    const ac = new AbortController();
    const call = c.callTool({ name: 'ask_recorded', arguments: { record } }, undefined, { signal: ac.signal, timeout: 10_000 });
    await until(() => asked.length === 1, 5_000, 'the question');
    ac.abort();
    await expect(call).rejects.toThrow();
    // The cancel has landed well before the client answers: the answer finds nobody waiting.
    await new Promise((resolve) => setTimeout(resolve, 300));
    release();
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(recorded(record)).toEqual(['first']);
  });

  it('a client that never answers: after clientRequestTimeoutMs the question is withdrawn (notifications/cancelled) and the call fails with -31002, its row released', async () => {
    const s = await startServer({ tools: kTools, clientRequestTimeoutMs: 400 });
    onCleanup(() => s.close());
    const c = new Client({ name: 'legacy-input-test', version: '1' }, { capabilities: { elicitation: {} } });
    let withdrawn = false;
    // Holds the question until the server withdraws it (the SDK aborts the handler on notifications/cancelled).
    c.setRequestHandler(ElicitRequestSchema, (_request, extra) => new Promise((resolve) => {
      extra.signal.addEventListener('abort', () => { withdrawn = true; resolve({ action: 'cancel' }); });
    }));
    await c.connect(new StreamableHTTPClientTransport(new URL(s.address.url)));
    onCleanup(() => c.close());
    const record = recordPath();
    const started = Date.now();
    await expect(c.callTool({ name: 'ask_recorded', arguments: { record } }, undefined, kCallTimeout)).rejects.toMatchObject({ code: -31002, message: expect.stringContaining('the client did not answer elicitation/create within 400 ms') });
    expect(Date.now() - started).toBeGreaterThanOrEqual(350);
    expect(withdrawn).toBe(true);
    expect(recorded(record)).toEqual(['first']); // the handler did not run again
    await until(() => s.server.registry.counters().inFlight === 0, 2_000, 'the row released');
  });

  it('a client that ends its session (DELETE) while being asked: the call ends at once, not at clientRequestTimeoutMs, and the handler never runs again', async () => {
    const s = await startServer({ tools: kTools, clientRequestTimeoutMs: 60_000 });
    onCleanup(() => s.close());
    const { c, asked } = await client(new StreamableHTTPClientTransport(new URL(s.address.url)), everything, () => new Promise(() => {}));
    const transport = c.transport as StreamableHTTPClientTransport;
    const record = recordPath();
    const call = c.callTool({ name: 'ask_recorded', arguments: { record } }, undefined, kCallTimeout).catch((error: unknown) => error);
    await until(() => asked.length === 1, 5_000, 'the question');
    expect(s.server.registry.counters().inFlight).toBe(1);
    await transport.terminateSession();
    await until(() => s.server.registry.counters().inFlight === 0, 2_000, 'the call to end at the DELETE');
    expect(s.server.registry.counters().cancellations).toBe(1);
    expect(recorded(record)).toEqual(['first']);
    void call;
  });

  it('over stdio, a client that closes its input while being asked ends the call (cancelled, not failed) and the server ends', async () => {
    for (const [tools, call] of [[kTools, { name: 'ask_recorded', arguments: { record: recordPath() } }], [kToolsModule, { name: 'ask', arguments: {} }]] as const) {
      const s = stdioServer({ tools });
      s.send({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } });
      s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: call });
      await until(() => s.lines.some((l) => l.method === 'elicitation/create'), 5_000, `${call.name}: the question`);
      s.input.end();
      let timer: ReturnType<typeof setTimeout> | undefined;
      await Promise.race([s.done, new Promise((_, reject) => { timer = setTimeout(() => reject(new Error(`${call.name}: the server did not end within 5 s of its input`)), 5_000); })]).finally(() => clearTimeout(timer));
      expect(s.lines.some((l) => l.id === 1), call.name).toBe(false); // cancelled: no response
      expect(s.logs.filter((l) => /failed/.test(l)), call.name).toEqual([]);
      if ('record' in call.arguments) expect(recorded(call.arguments.record)).toEqual(['first']);
    }
  });

  it('over stdio too (sluice serve --stdio with the SDK v1 stdio transport)', async () => {
    const transport = new StdioClientTransport({ command: process.execPath, args: [kBin, 'serve', '--stdio', '--tools', fileURLToPath(kTools)], stderr: 'pipe' });
    const { c, asked } = await client(transport, everything);
    const result = await c.callTool({ name: 'ask_all', arguments: {} }, undefined, kCallTimeout);
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Ada 1: roses are red' }] });
    expect(asked.map((a) => a.method)).toEqual(['elicitation/create', 'roots/list', 'sampling/createMessage']);
  });
});

describe('the same tool in 2026-07-28 (SDK v2 drives the rounds itself)', () => {
  it('asks the same questions in the same rounds and gets the same result', async () => {
    const s = await server();
    const { Client: ClientV2, StreamableHTTPClientTransport: TransportV2 } = await import('@modelcontextprotocol/client');
    const asked: string[] = [];
    const c = new ClientV2({ name: 'legacy-input-parity', version: '2' }, { capabilities: everything, versionNegotiation: { mode: { pin: '2026-07-28' } } });
    c.setRequestHandler('elicitation/create', async () => { asked.push('elicitation/create'); return { action: 'accept', content: { name: 'Ada 1' } }; });
    c.setRequestHandler('roots/list', async () => { asked.push('roots/list'); return { roots: [{ uri: 'file:///work', name: 'work' }] }; });
    c.setRequestHandler('sampling/createMessage', async () => { asked.push('sampling/createMessage'); return { role: 'assistant', content: { type: 'text', text: 'roses are red' }, model: 'test-model' }; });
    await c.connect(new TransportV2(new URL(s.address.url)));
    onCleanup(() => c.close());
    const result = await c.callTool({ name: 'ask_all', arguments: {} });
    expect(result).toMatchObject({ content: [{ type: 'text', text: 'Ada 1: roses are red' }], structuredContent: { state: { round: 2, name: 'Ada 1', roots: 1 }, keys: ['poem'] } });
    expect([...asked].sort()).toEqual(['elicitation/create', 'roots/list', 'sampling/createMessage']);
    // A pool tool sees the retry's answers, state and capabilities in its own thread.
    const pooled = await c.callTool({ name: 'ask_in_pool', arguments: {} });
    expect(pooled).toMatchObject({ content: [{ type: 'text', text: 'pool: hello Ada 1' }], structuredContent: { state: { round: 1 }, elicitation: true } });
  });

  it('answers too deep to cross to a pool thread are refused (-32602), and the server serves on', async () => {
    const s = await server();
    let deep: unknown = 'x';
    for (let i = 0; i < 200; i++) deep = { deeper: deep };
    const headers = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'ask_in_pool' };
    const call = (inputResponses: unknown) => fetch(s.address.url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask_in_pool', arguments: {}, inputResponses, _meta: modernMeta() } }) }).then((r) => r.json() as Promise<Record<string, any>>);
    expect(await call({ name: deep })).toMatchObject({ error: { code: -32602, message: expect.stringContaining('inputResponses') } });
    expect(await call({ name: { action: 'accept', content: { name: 'Bo' } } })).toMatchObject({ result: { content: [{ type: 'text', text: 'pool: hello Bo' }] } });
  });
});
