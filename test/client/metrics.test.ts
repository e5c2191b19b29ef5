/**
 * mcp.client.operation.duration: with a meter provider registered in the client's thread, each
 * request the Client sends is recorded, with its method, target and error type; without one the
 * client makes no meter (checked in test/telemetry/tracing-absent.test.ts for spans: same rule).
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { HistogramMetricData } from '@opentelemetry/sdk-metrics';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, HttpClientTransport } from '../../src/client/index.js';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
let running: TestServer;

beforeAll(async () => {
  metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
  running = await startServer({ tools: new URL('../fixtures/telemetry-tools.mjs', import.meta.url), workers: 1 });
});
afterAll(async () => {
  await running?.close();
  metrics.disable();
});

describe('client operation duration', () => {
  it('records each request: a 50 ms call, a tool error, a JSON-RPC error; both eras', async () => {
    for (const era of ['legacy', 'modern'] as const) {
      const client = new Client(new HttpClientTransport({ url: running.address.url }), { era });
      try {
        await client.callTool('nap', { ms: 50 });
        expect((await client.callTool('refuse', {})).isError).toBe(true);
        await expect(client.callTool('no_such_tool', {})).rejects.toMatchObject({ rpcCode: -32602 });
      } finally {
        await client.close();
      }
    }
    await reader.forceFlush();
    const points = exporter.getMetrics().flatMap((m) => m.scopeMetrics).flatMap((s) => s.metrics)
      .filter((m): m is HistogramMetricData => m.descriptor.name === 'mcp.client.operation.duration')
      .flatMap((m) => m.dataPoints);
    const nap = points.find((p) => p.attributes['gen_ai.tool.name'] === 'nap' && p.attributes['error.type'] === undefined)!;
    expect(nap.attributes['mcp.method.name']).toBe('tools/call');
    expect(nap.value.count).toBe(2);
    expect(nap.value.sum).toBeGreaterThanOrEqual(2 * 0.05);
    expect(points.find((p) => p.attributes['gen_ai.tool.name'] === 'refuse')?.attributes['error.type']).toBe('tool_error');
    expect(points.find((p) => p.attributes['error.type'] === '-32602')?.value.count).toBe(2);
  });
});
