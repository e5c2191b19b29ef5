/**
 * Server spans with the OpenTelemetry SDK registered in the serving threads (test/fixtures/otel-setup.mjs,
 * through the `tracing` option): names, kinds, MCP attributes, `_meta` trace context as parent,
 * events of a cancel, over HTTP in both eras (2 worker threads) and over stdio.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { initialize, modernMeta, recordPath, recordedJson, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { stdioServer } from '../helpers/stdio.js';
import { Client, HttpClientTransport } from '../../src/client/index.js';

const kTools = new URL('../fixtures/telemetry-tools.mjs', import.meta.url);
const kSetup = new URL('../fixtures/otel-setup.mjs', import.meta.url);
const kServer = 1; // SpanKind.SERVER

interface SpanLine {
  name: string; kind: number; traceId: string; spanId: string; parentSpanId?: string; traceState?: string;
  attributes: Record<string, unknown>; events: { name: string; attributes: Record<string, unknown> }[]; links: { traceId: string; spanId: string }[]; status: number; thread: number;
}

const spansFile = recordPath();
process.env.SLUICE_TEST_SPANS = spansFile; // before any thread starts: workers copy the environment
function spans(): SpanLine[] {
  return recordedJson<SpanLine>(spansFile);
}
async function spanWhere(what: string, test: (s: SpanLine) => boolean): Promise<SpanLine> {
  await until(() => spans().some(test), 10_000, what);
  return spans().find(test)!;
}
const hex = (n: number, c: string) => c.repeat(n);
/** A new legacy session on the HTTP server, and the headers its requests carry. */
async function legacySession(): Promise<{ url: string; session: string; headers: Record<string, string> }> {
  const { url } = running.address;
  const session = await initialize(url);
  return { url, session, headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } };
}

let running: TestServer;
beforeAll(async () => {
  running = await startServer({ tools: kTools, workers: 2, tracing: kSetup, streamCancelTimeoutMs: 200 });
});
afterAll(async () => {
  await running?.close();
});

describe('server spans', () => {
  it('legacy era: a SERVER span named "tools/call nap", parented by _meta traceparent, with the MCP attributes', async () => {
    const { url, session, headers } = await legacySession();
    const traceId = hex(32, 'a');
    const parent = hex(16, 'b');
    const res = await post(url, { jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'nap', arguments: { ms: 5 }, _meta: { traceparent: `00-${traceId}-${parent}-01`, tracestate: 'vendor=x1' } } }, headers);
    expect(res.status).toBe(200);
    const span = await spanWhere('the nap span', (s) => s.traceId === traceId && s.name === 'tools/call nap');
    expect(span.kind).toBe(kServer);
    expect(span.parentSpanId).toBe(parent);
    expect(span.traceState).toBe('vendor=x1');
    expect(span.attributes).toMatchObject({
      'mcp.method.name': 'tools/call',
      'gen_ai.tool.name': 'nap',
      'gen_ai.operation.name': 'execute_tool',
      'jsonrpc.request.id': '7',
      'mcp.session.id': session,
      'mcp.protocol.version': '2025-11-25',
      'network.transport': 'tcp',
    });
    expect(span.attributes['error.type']).toBeUndefined();
    expect(span.status).toBe(0);

    // initialize has no target: its name is the method alone, and it starts a trace of its own.
    const init = await spanWhere('the initialize span', (s) => s.name === 'initialize');
    expect(init.parentSpanId).toBeUndefined();

    // A tool error and a JSON-RPC error.
    await post(url, { jsonrpc: '2.0', id: 8, method: 'tools/call', params: { name: 'refuse', arguments: {} } }, headers);
    const refused = await spanWhere('the refuse span', (s) => s.name === 'tools/call refuse');
    expect(refused.attributes['error.type']).toBe('tool_error');
    expect(refused.status).toBe(2);
    await post(url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'missing', arguments: {} } }, headers);
    const missing = await spanWhere('the unknown tool span', (s) => s.name === 'tools/call missing');
    expect(missing.attributes['error.type']).toBe('-32602');
    expect(missing.attributes['rpc.response.status_code']).toBe('-32602');
  });

  it('the HTTP traceparent header: linked when _meta has the parent, the parent when it has none', async () => {
    const { url, headers } = await legacySession();
    const metaTrace = hex(32, '2');
    const httpTrace = hex(32, '6');
    await post(url, { jsonrpc: '2.0', id: 'h1', method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: { traceparent: `00-${metaTrace}-${hex(16, '3')}-01` } } }, { ...headers, traceparent: `00-${httpTrace}-${hex(16, '7')}-01` });
    const both = await spanWhere('the span with both contexts', (s) => s.traceId === metaTrace);
    expect(both.parentSpanId).toBe(hex(16, '3'));
    expect(both.links).toEqual([{ traceId: httpTrace, spanId: hex(16, '7') }]);
    const onlyHeader = hex(32, '8');
    await post(url, { jsonrpc: '2.0', id: 'h2', method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 } } }, { ...headers, traceparent: `00-${onlyHeader}-${hex(16, '9')}-01`, tracestate: 'vendor=h' });
    const header = await spanWhere('the span with only the header', (s) => s.traceId === onlyHeader);
    expect(header.parentSpanId).toBe(hex(16, '9'));
    expect(header.traceState).toBe('vendor=h');
    expect(header.links).toEqual([]);
  });

  it('a span a tool makes is a child of the server span (same thread, same trace)', async () => {
    const { url } = running.address;
    const traceId = hex(32, 'c');
    await post(url, { jsonrpc: '2.0', id: 'c1', method: 'tools/call', params: { name: 'with_child', arguments: {}, _meta: modernMeta({ traceparent: `00-${traceId}-${hex(16, 'd')}-01` }) } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'with_child' });
    const server = await spanWhere('the with_child span', (s) => s.traceId === traceId && s.name === 'tools/call with_child');
    const child = await spanWhere('the tool span', (s) => s.traceId === traceId && s.name === 'tool work');
    expect(child.parentSpanId).toBe(server.spanId);
    expect(child.thread).toBe(server.thread);
    // 2026-07-28: no session, the revision from _meta.
    expect(server.attributes['mcp.protocol.version']).toBe('2026-07-28');
    expect(server.attributes['mcp.session.id']).toBeUndefined();
  });

  it('a tool sees the baggage of _meta, and runs inside the server span', async () => {
    const { url } = running.address;
    const traceId = hex(32, 'f');
    const res = await post(url, { jsonrpc: '2.0', id: 'b1', method: 'tools/call', params: { name: 'baggage_of', arguments: { key: 'tenant' }, _meta: modernMeta({ traceparent: `00-${traceId}-${hex(16, 'e')}-01`, baggage: 'tenant=acme%20co,other=1' }) } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'baggage_of' });
    expect(res.status).toBe(200);
    const json = res.body.startsWith('{') ? res.body : res.body.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
    const body = JSON.parse(json) as { result: { structuredContent?: { value: string | null }; content: { text: string }[] } };
    expect(body.result.structuredContent?.value ?? (JSON.parse(body.result.content[0]!.text) as { value: string | null }).value).toBe('acme co');
    await spanWhere('the baggage_of span', (s) => s.traceId === traceId && s.name === 'tools/call baggage_of');
  });

  it('a pool tool runs in an execute_tool span in the pool thread, a child of the server span across threads', async () => {
    const { url } = running.address;
    const traceId = hex(32, '7');
    const res = await post(url, { jsonrpc: '2.0', id: 'p1', method: 'tools/call', params: { name: 'pooled_nap', arguments: { ms: 5 }, _meta: modernMeta({ traceparent: `00-${traceId}-${hex(16, '8')}-01`, tracestate: 'vendor=p1' }) } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'pooled_nap' });
    expect(res.status).toBe(200);
    const server = await spanWhere('the pooled_nap server span', (s) => s.traceId === traceId && s.name === 'tools/call pooled_nap');
    const tool = await spanWhere('the pool thread span', (s) => s.traceId === traceId && s.name === 'execute_tool pooled_nap');
    expect(tool.kind).toBe(0); // SpanKind.INTERNAL
    expect(tool.parentSpanId).toBe(server.spanId);
    expect(tool.traceState).toBe('vendor=p1'); // the trace state crossed with the context
    expect(tool.thread).not.toBe(server.thread);
    // The tool ran in the thread the span names (it answers with its own thread id).
    const json = res.body.startsWith('{') ? res.body : res.body.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
    const body = JSON.parse(json) as { result: { structuredContent?: { thread: number }; content: { text: string }[] } };
    const ran = body.result.structuredContent?.thread ?? (JSON.parse(body.result.content[0]!.text) as { thread: number }).thread;
    expect(tool.thread).toBe(ran);
    expect(tool.attributes).toMatchObject({ 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': 'pooled_nap', 'thread.id': ran });
    expect(tool.attributes['error.type']).toBeUndefined();
  });

  it('a cancel is an event on the cancelled request span', async () => {
    const { url, session, headers } = await legacySession();
    const traceId = hex(32, 'e');
    const call = post(url, { jsonrpc: '2.0', id: 'w', method: 'tools/call', params: { name: 'wait_cancel', arguments: {}, _meta: { traceparent: `00-${traceId}-${hex(16, 'f')}-01` } } }, headers);
    await new Promise((r) => setTimeout(r, 300));
    await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'w', reason: 'enough' } }, headers);
    await call;
    const span = await spanWhere('the cancelled span', (s) => s.traceId === traceId);
    const event = span.events.find((e) => e.name === 'mcp.cancel.received');
    expect(event?.attributes).toMatchObject({ 'mcp.cancel.reason': 'enough', 'mcp.cancel.scope': `session:${session}` });
    expect(span.attributes['error.type']).toBe('cancelled');
    // The tool saw it (its signal's abort), once, after it was received.
    expect(span.events.filter((e) => e.name === 'mcp.cancel.observed')).toHaveLength(1);
    expect(span.events.findIndex((e) => e.name === 'mcp.cancel.observed')).toBeGreaterThan(span.events.findIndex((e) => e.name === 'mcp.cancel.received'));
  });

  it('a task created by tools/call is an event on the request span, naming the task', async () => {
    const { url, headers } = await legacySession();
    const traceId = hex(32, '5');
    const res = await post(url, { jsonrpc: '2.0', id: 't1', method: 'tools/call', params: { name: 'task_nap', arguments: { ms: 1 }, task: { ttl: 60_000 }, _meta: { traceparent: `00-${traceId}-${hex(16, '6')}-01` } } }, headers);
    expect(res.status).toBe(200);
    const json = res.body.startsWith('{') ? res.body : res.body.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
    const taskId = (JSON.parse(json) as { result: { task: { taskId: string } } }).result.task.taskId;
    const span = await spanWhere('the task_nap span', (s) => s.traceId === traceId && s.name === 'tools/call task_nap');
    const created = span.events.filter((e) => e.name === 'mcp.task.created');
    expect(created).toHaveLength(1);
    expect(created[0]!.attributes).toMatchObject({ 'mcp.task.id': taskId, 'mcp.task.dialect': 'legacy' });
  });

  it('a task has a span of its own, the request span\'s child: its status changes are events, wherever the change was made', async () => {
    const { url, headers } = await legacySession();
    const taskOf = (body: string) => (JSON.parse(body.startsWith('{') ? body : body.split('\n').find((l) => l.startsWith('data: '))!.slice(6)) as { result: { task: { taskId: string } } }).result.task.taskId;
    // Completed by its tool.
    const doneTrace = hex(32, '3');
    const done = taskOf((await post(url, { jsonrpc: '2.0', id: 'tc', method: 'tools/call', params: { name: 'task_nap', arguments: { ms: 1 }, task: { ttl: 60_000 }, _meta: { traceparent: `00-${doneTrace}-${hex(16, '4')}-01` } } }, headers)).body);
    const request = await spanWhere('the request span', (s) => s.traceId === doneTrace && s.name === 'tools/call task_nap');
    const task = await spanWhere('the task span', (s) => s.traceId === doneTrace && s.name === 'mcp.task task_nap');
    expect(task.parentSpanId).toBe(request.spanId);
    expect(task.attributes).toMatchObject({ 'mcp.task.id': done, 'mcp.task.dialect': 'legacy', 'gen_ai.tool.name': 'task_nap', 'mcp.task.status': 'completed' });
    expect(task.events.filter((e) => e.name === 'mcp.task.status').map((e) => e.attributes['mcp.task.status'])).toEqual(['completed']);
    expect(task.attributes['error.type']).toBeUndefined();
    // Cancelled by the client's tasks/cancel (another request): the event says so, the span is an error.
    const cancelTrace = hex(32, 'c');
    const long = taskOf((await post(url, { jsonrpc: '2.0', id: 'tl', method: 'tools/call', params: { name: 'task_nap', arguments: { ms: 30_000 }, task: { ttl: 60_000 }, _meta: { traceparent: `00-${cancelTrace}-${hex(16, 'd')}-01` } } }, headers)).body);
    const cancelled = await post(url, { jsonrpc: '2.0', id: 'tx', method: 'tasks/cancel', params: { taskId: long } }, headers);
    expect(cancelled.status).toBe(200);
    const stopped = await spanWhere('the cancelled task span', (s) => s.traceId === cancelTrace && s.name === 'mcp.task task_nap');
    expect(stopped.events.filter((e) => e.name === 'mcp.task.status').map((e) => e.attributes['mcp.task.status'])).toEqual(['cancelled']);
    expect(stopped.attributes).toMatchObject({ 'mcp.task.status': 'cancelled', 'error.type': 'cancelled' });
  });

  it('stdio: network.transport pipe', async () => {
    const server = stdioServer({ tools: kTools, tracing: kSetup });
    try {
      server.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      server.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
      const traceId = hex(32, '1');
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: { traceparent: `00-${traceId}-${hex(16, '2')}-01` } } });
      const span = await spanWhere('the stdio span', (s) => s.traceId === traceId);
      expect(span.name).toBe('tools/call nap');
      expect(span.kind).toBe(kServer);
      expect(span.attributes['network.transport']).toBe('pipe');
      // stdio requests carry the version the transport assumes (it does not keep the negotiated one).
      expect(typeof span.attributes['mcp.protocol.version']).toBe('string');
    } finally {
      server.input.end();
      await server.done;
    }
  });
});

describe('client spans', () => {
  it('a Sluice client calling a Sluice server: one trace, the server span a child of the CLIENT span', async () => {
    await import(kSetup.href); // the SDK in this (the client's) thread too
    for (const era of ['legacy', 'modern'] as const) {
      const client = new Client(new HttpClientTransport({ url: running.address.url }), { era });
      try {
        const before = new Set(spans().map((s) => s.spanId));
        const result = await client.callTool('nap', { ms: 1 });
        expect(result).toHaveProperty('content');
        const mine = await spanWhere(`the ${era} client span`, (s) => s.kind === 2 && s.name === 'tools/call nap' && !before.has(s.spanId));
        expect(mine.attributes).toMatchObject({ 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'nap' });
        const server = await spanWhere(`the ${era} server span`, (s) => s.kind === kServer && s.parentSpanId === mine.spanId);
        expect(server.traceId).toBe(mine.traceId);
        expect(server.name).toBe('tools/call nap');
        expect(server.thread).not.toBe(mine.thread);
      } finally {
        await client.close();
      }
    }
  });

  it('a Sluice client\'s cancel carries its request span\'s context: the notifications/cancelled SERVER span is the CLIENT span\'s child', async () => {
    await import(kSetup.href);
    const client = new Client(new HttpClientTransport({ url: running.address.url }), { era: 'legacy' });
    try {
      const before = new Set(spans().map((s) => s.spanId));
      const abort = new AbortController();
      const call = client.callTool('wait_cancel', {}, { signal: abort.signal });
      await new Promise((r) => setTimeout(r, 300)); // the call is running (as the server-side cancel case waits)
      abort.abort('the test cancels');
      await expect(call).rejects.toThrow();
      const mine = await spanWhere('the client span', (s) => s.kind === 2 && s.name === 'tools/call wait_cancel' && !before.has(s.spanId));
      const cancel = await spanWhere('the cancel span', (s) => s.kind === kServer && s.name === 'notifications/cancelled' && s.parentSpanId === mine.spanId);
      expect(cancel.traceId).toBe(mine.traceId);
      expect(cancel.attributes).toMatchObject({ 'mcp.method.name': 'notifications/cancelled', 'sluice.cancel.outcome': 'applied', 'network.transport': 'tcp' });
      const served = await spanWhere('the cancelled request span', (s) => s.kind === kServer && s.name === 'tools/call wait_cancel' && s.parentSpanId === mine.spanId);
      expect(served.events.some((e) => e.name === 'mcp.cancel.received')).toBe(true);
      expect(cancel.attributes['sluice.cancel.request_id']).toBe(served.attributes['jsonrpc.request.id']);
    } finally {
      await client.close();
    }
  });

  it('a cancel of nothing in flight: its span says ignored; a malformed one: the refusal\'s code', async () => {
    const { url, session, headers } = await legacySession();
    const traceId = hex(32, '7');
    await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'nobody', _meta: { traceparent: `00-${traceId}-${hex(16, '8')}-01` } } }, headers);
    const ignored = await spanWhere('the ignored cancel span', (s) => s.traceId === traceId && s.name === 'notifications/cancelled');
    expect(ignored.attributes).toMatchObject({ 'sluice.cancel.outcome': 'ignored', 'mcp.session.id': session });
    const badTrace = hex(32, '9');
    const res = await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: { not: 'an id' }, _meta: { traceparent: `00-${badTrace}-${hex(16, '8')}-01` } } }, headers);
    expect(res.status).toBe(400);
    const refused = await spanWhere('the refused cancel span', (s) => s.traceId === badTrace && s.name === 'notifications/cancelled');
    expect(refused.attributes).toMatchObject({ 'sluice.cancel.outcome': 'refused', 'error.type': '-32602' });
  });
});
