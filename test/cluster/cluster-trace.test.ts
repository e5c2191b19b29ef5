/**
 * One trace across two nodes: two Sluice node processes on one real redis-server, each exporting
 * its spans with the real OTLP/HTTP exporter to a receiver in this test (each names itself in
 * `service.instance.id`). A tools/call runs on node A; its cancel, carrying the caller's trace
 * context in `_meta` (as the Sluice client sends it), lands on node B, which forwards it over the
 * bus. The trace then holds A's request span (with the cancel it received), B's span of the
 * notification (forwarded) and A's span of the relayed cancel (applied), a child of B's. And a
 * tool on A asking the client, answered through B: the question carries A's span context in `_meta`,
 * the answer is an event on A's request span naming node B. And a task created on A, read on B:
 * B's tasks/get span links to the span that created it on A (the Redis task record keeps it).
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { startRedis } from '../helpers/redis.js';
import type { RedisInstance } from '../helpers/redis.js';
import { legacyHeaders, openStream, startNodeProcess, until } from './cross-node-helpers.js';
import type { NodeProcess } from './cross-node-helpers.js';

interface Attribute { key: string; value: { stringValue?: string; intValue?: string } }
interface OtlpSpan { name: string; kind: number; traceId: string; spanId: string; parentSpanId?: string; attributes: Attribute[]; events?: { name: string; attributes: Attribute[] }[]; links?: { traceId: string; spanId: string; attributes?: Attribute[] }[] }
interface OtlpExport { resourceSpans: { resource: { attributes: Attribute[] }; scopeSpans: { spans: OtlpSpan[] }[] }[] }
interface Seen { node: string; span: OtlpSpan }

const kTools = fileURLToPath(new URL('./trace-tools.mjs', import.meta.url));
const kTracing = fileURLToPath(new URL('../fixtures/otel-otlp-node-setup.mjs', import.meta.url));
const kSpanKind = { server: 2, consumer: 5 } as const;

let redis: RedisInstance;
let receiver: ReturnType<typeof createHttpServer>;
let a: NodeProcess;
let b: NodeProcess;
const seen: Seen[] = [];

const text = (attributes: Attribute[], key: string) => attributes.find((x) => x.key === key)?.value.stringValue;

beforeAll(async () => {
  redis = await startRedis();
  receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) {
        const body = JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport;
        for (const r of body.resourceSpans) {
          const node = text(r.resource.attributes, 'service.instance.id') ?? '?';
          for (const s of r.scopeSpans) for (const span of s.spans) seen.push({ node, span });
        }
      }
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver.listen(0, '127.0.0.1', r));
  process.env.SLUICE_TEST_OTLP_URL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`;
  // Each child takes the environment as it is when it is spawned.
  const options = { tools: kTools, tracing: kTracing, sessions: false };
  process.env.SLUICE_TEST_NODE_NAME = 'node-a';
  a = await startNodeProcess(redis.url, 'trace:', 'A', options);
  process.env.SLUICE_TEST_NODE_NAME = 'node-b';
  b = await startNodeProcess(redis.url, 'trace:', 'B', options);
}, 60_000);

afterAll(async () => {
  await Promise.all([a?.stop(), b?.stop()]);
  await redis?.stop();
  await new Promise((r) => receiver?.close(r));
  delete process.env.SLUICE_TEST_NODE_NAME;
});

describe('one trace across two nodes', () => {
  it('a cancel sent to node B for a call on node A: A\'s request span, B\'s forwarding span and A\'s relayed-cancel span share the caller\'s trace', async () => {
    const traceId = '0af7651916cd43dd8448eb211c80319c';
    const caller = 'b7ad6b7169203331';
    const traceparent = `00-${traceId}-${caller}-01`;
    const call = openStream(a.url, { jsonrpc: '2.0', id: 'traced-1', method: 'tools/call', params: { name: 'block', arguments: { ms: 20_000 }, _meta: { progressToken: 'p', traceparent } } }, legacyHeaders('key-a'));
    await until(() => call.events.length > 0, 10_000, 'the call to stream');
    const res = await post(b.url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 'traced-1', reason: 'from B', _meta: { traceparent } } }, legacyHeaders('key-a'));
    expect(res.status).toBe(202);
    await until(() => call.ended, 10_000, 'the call to end');

    const inTrace = () => seen.filter((s) => s.span.traceId === traceId);
    const find = (node: string, name: string, kind: number) => inTrace().find((s) => s.node === node && s.span.name === name && s.span.kind === kind)?.span;
    await until(() => find('node-a', 'tools/call block', kSpanKind.server) !== undefined && find('node-b', 'notifications/cancelled', kSpanKind.server) !== undefined
      && find('node-a', 'notifications/cancelled', kSpanKind.consumer) !== undefined, 15_000, 'the three spans to be exported');

    const request = find('node-a', 'tools/call block', kSpanKind.server)!;
    expect(request.parentSpanId).toBe(caller);
    expect(request.events?.some((e) => e.name === 'mcp.cancel.received' && text(e.attributes, 'mcp.cancel.reason') === 'from B')).toBe(true);

    const forwarded = find('node-b', 'notifications/cancelled', kSpanKind.server)!;
    expect(forwarded.parentSpanId).toBe(caller);
    expect(text(forwarded.attributes, 'sluice.cancel.outcome')).toBe('forwarded');
    expect(text(forwarded.attributes, 'sluice.cancel.request_id')).toBe('traced-1');

    const relayed = find('node-a', 'notifications/cancelled', kSpanKind.consumer)!;
    expect(relayed.parentSpanId).toBe(forwarded.spanId);
    expect(text(relayed.attributes, 'sluice.cancel.outcome')).toBe('applied');
    expect(text(relayed.attributes, 'sluice.cluster.from_node')).toBe('B');
    expect(text(relayed.attributes, 'sluice.cluster.node_id')).toBe('A');
    // Spans from both processes, one trace.
    expect(new Set(inTrace().map((s) => s.node))).toEqual(new Set(['node-a', 'node-b']));
  });

  it('a question from a tool on node A, answered through node B: the ping carries A\'s span context, the answer is an event on A\'s span naming B', async () => {
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    const call = openStream(a.url, { jsonrpc: '2.0', id: 'asks-1', method: 'tools/call', params: { name: 'ask_ping', arguments: {}, _meta: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } } }, legacyHeaders('key-a'));
    await until(() => call.events.some((e) => e.method === 'ping'), 10_000, 'the ping on the stream');
    const ping = call.events.find((e) => e.method === 'ping') as { id: string; params: { _meta: { traceparent: string } } };
    expect(ping.params._meta.traceparent.split('-')[1]).toBe(traceId);
    const res = await post(b.url, { jsonrpc: '2.0', id: ping.id, result: {} }, legacyHeaders('key-a'));
    expect(res.status).toBe(202);
    await until(() => call.events.some((e) => e.id === 'asks-1'), 10_000, 'the call to answer');
    const span = () => seen.find((s) => s.node === 'node-a' && s.span.traceId === traceId && s.span.name === 'tools/call ask_ping')?.span;
    await until(() => span() !== undefined, 15_000, 'the request span');
    expect(span()!.spanId).toBe(ping.params._meta.traceparent.split('-')[2]);
    const received = span()!.events?.find((e) => e.name === 'mcp.client_response.received');
    expect(received).toBeDefined();
    expect(text(received!.attributes, 'mcp.method.name')).toBe('ping');
    expect(text(received!.attributes, 'jsonrpc.request.id')).toBe(ping.id);
    expect(text(received!.attributes, 'sluice.relayed_by')).toBe('node B');
  });

  it('a task created on node A and read on node B: B\'s tasks/get span links to A\'s creating span', async () => {
    const created = '5b8efff798038103d269b633813fc60c';
    const reader = '2c9f8e7d6c5b4a3928171615f4e3d2c1';
    const res = await post(a.url, { jsonrpc: '2.0', id: 'task-1', method: 'tools/call', params: { name: 'task_nap', arguments: { ms: 200 }, task: { ttl: 60_000 }, _meta: { traceparent: `00-${created}-eee19b7ec3c1b174-01` } } }, legacyHeaders('key-a'));
    expect(res.status).toBe(200);
    const body = res.body.startsWith('{') ? res.body : res.body.split('\n').find((l) => l.startsWith('data: '))!.slice(6);
    const taskId = (JSON.parse(body) as { result: { task: { taskId: string } } }).result.task.taskId;
    const got = await post(b.url, { jsonrpc: '2.0', id: 'get-1', method: 'tasks/get', params: { taskId, _meta: { traceparent: `00-${reader}-faf19b7ec3c1b174-01` } } }, legacyHeaders('key-a'));
    expect(got.status).toBe(200);
    const find = (node: string, trace: string, name: string) => seen.find((s) => s.node === node && s.span.traceId === trace && s.span.name === name)?.span;
    await until(() => find('node-a', created, 'tools/call task_nap') !== undefined && find('node-b', reader, 'tasks/get') !== undefined, 15_000, 'the create and read spans');
    const creating = find('node-a', created, 'tools/call task_nap')!;
    const read = find('node-b', reader, 'tasks/get')!;
    expect(read.links?.map((l) => ({ traceId: l.traceId, spanId: l.spanId }))).toEqual([{ traceId: created, spanId: creating.spanId }]);
    expect(text(read.links![0]!.attributes ?? [], 'mcp.task.id')).toBe(taskId);
  });
});
