/**
 * End to end: the real OTLP/HTTP exporter (JSON) in the HTTP workers, sending to a small OTLP
 * receiver on loopback in this test; the export is decoded and the server span checked.
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { initialize, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

interface OtlpSpan { name: string; kind: number; traceId: string; parentSpanId?: string; attributes: { key: string; value: Record<string, unknown> }[] }
interface OtlpExport { resourceSpans: { resource: { attributes: { key: string; value: Record<string, unknown> }[] }; scopeSpans: { scope: { name: string }; spans: OtlpSpan[] }[] }[] }

let running: TestServer | undefined;
let receiver: ReturnType<typeof createHttpServer> | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
  await new Promise((r) => { if (receiver === undefined) r(undefined); else receiver.close(r); });
  receiver = undefined;
});

/** A small OTLP/HTTP receiver on loopback (JSON exports kept), named to the exporters by SLUICE_TEST_OTLP_URL. */
async function otlpReceiver(): Promise<OtlpExport[]> {
  const exports: OtlpExport[] = [];
  receiver = createHttpServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.url === '/v1/traces' && String(req.headers['content-type']).includes('json')) exports.push(JSON.parse(Buffer.concat(chunks).toString('utf8')) as OtlpExport);
      res.writeHead(200, { 'content-type': 'application/json' }).end('{}');
    });
  });
  await new Promise<void>((r) => receiver!.listen(0, '127.0.0.1', r));
  process.env.SLUICE_TEST_OTLP_URL = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}/v1/traces`;
  return exports;
}

const spanNames = (exports: OtlpExport[]): string[] => exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => span.name))));

describe('OTLP/HTTP export', () => {
  it('a tools/call span reaches an OTLP receiver with its MCP attributes', async () => {
    const exports = await otlpReceiver();
    running = await startServer({ tools: new URL('../fixtures/telemetry-tools.mjs', import.meta.url), workers: 1, tracing: new URL('../fixtures/otel-otlp-setup.mjs', import.meta.url) });
    const { url } = running.address;
    const session = await initialize(url);
    const traceId = '4bf92f3577b34da6a3ce929d0e0e4736';
    await post(url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: { traceparent: `00-${traceId}-00f067aa0ba902b7-01` } } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    const find = () => exports.flatMap((e) => e.resourceSpans.flatMap((r) => r.scopeSpans.flatMap((s) => s.spans.map((span) => ({ span, resource: r.resource, scope: s.scope })))))
      .find(({ span }) => span.name === 'tools/call nap');
    await until(() => find() !== undefined, 15_000, 'the exported span');
    const { span, resource, scope } = find()!;
    expect(scope.name).toBe('sluice');
    expect(span.kind).toBe(2); // SPAN_KIND_SERVER in OTLP
    expect(span.traceId).toBe(traceId);
    expect(span.parentSpanId).toBe('00f067aa0ba902b7');
    const attr = (key: string) => span.attributes.find((a) => a.key === key)?.value;
    expect(attr('mcp.method.name')).toEqual({ stringValue: 'tools/call' });
    expect(attr('gen_ai.tool.name')).toEqual({ stringValue: 'nap' });
    expect(attr('mcp.session.id')).toEqual({ stringValue: session });
    expect(resource.attributes.find((a) => a.key === 'service.name')?.value).toEqual({ stringValue: 'sluice-otlp-test' });
  });

  it('with a BatchSpanProcessor (as the docs set it up), an idle pool thread still sends its tool span', async () => {
    // piscina parked an idle pool thread in Atomics.wait, which stops its event loop: the batch's
    // timer never ran, so a pool tool's span left only with a later pool call, never on a quiet pool.
    const exports = await otlpReceiver();
    running = await startServer({ tools: new URL('../fixtures/telemetry-tools.mjs', import.meta.url), workers: 1, poolThreads: 1, tracing: new URL('../fixtures/otel-otlp-batch-setup.mjs', import.meta.url) });
    const { url } = running.address;
    const session = await initialize(url);
    await post(url, { jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'pooled_nap', arguments: { ms: 1 } } }, { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
    await until(() => spanNames(exports).includes('tools/call pooled_nap'), 10_000, 'the HTTP worker\'s span');
    await until(() => spanNames(exports).includes('execute_tool pooled_nap'), 10_000, 'the pool thread\'s span, with no pool call after it');
  });
});
