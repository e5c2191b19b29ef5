/**
 * The in-flight gauges' blocks on their own (real worker threads writing them, the release of a
 * dead thread's block, the `_other` gauge of a full directory), and the gauge through the
 * OpenTelemetry metrics API with an in-memory reader in the serving thread.
 */
import { metrics } from '@opentelemetry/api';
import { AggregationTemporality, InMemoryMetricExporter, MeterProvider, PeriodicExportingMetricReader } from '@opentelemetry/sdk-metrics';
import type { SumMetricData } from '@opentelemetry/sdk-metrics';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { defineTool } from '../../src/index.js';
import { OperationHistograms, kGaugesPerThread } from '../../src/telemetry/histograms.js';
import type { HistogramsDescriptor } from '../../src/telemetry/histograms.js';
import { post } from '../helpers/http.js';
import { modernMeta, startServer } from '../helpers/server.js';

const kBuilt = new URL('../../dist/src/telemetry/histograms.js', import.meta.url).href;

/** A worker thread that enters the gauges named, ends `ended` of them, then waits to be terminated. */
function writer(descriptor: HistogramsDescriptor, enter: Array<[string, string]>, ended: number): Promise<Worker> {
  const code = `
    const { workerData, parentPort } = require('node:worker_threads');
    import(workerData.url).then(({ OperationHistograms }) => {
      const h = new OperationHistograms(workerData.descriptor);
      const slots = workerData.enter.map(([method, target]) => h.enter(method, target));
      for (let i = 0; i < workerData.ended; i++) h.end(slots[i], workerData.enter[i][0], workerData.enter[i][1], '', 0.03);
      setInterval(() => {}, 1000);
      parentPort.postMessage('ready');
    });`;
  const worker = new Worker(code, { eval: true, workerData: { url: kBuilt, descriptor, enter, ended } });
  return new Promise((resolve, reject) => {
    worker.once('message', () => resolve(worker));
    worker.once('error', reject);
  });
}

const gauge = (h: OperationHistograms, target: string) => h.inFlight().find((s) => s.method === 'tools/call' && s.target === target)?.value;

describe('in-flight gauge blocks', () => {
  it('summed over real threads; a dead thread\'s block is zeroed on release (its histogram counts stay); a thread continuing it counts from 0', async () => {
    const shared = OperationHistograms.create(4);
    const one = await writer(shared.descriptor, [['tools/call', 'x'], ['tools/call', 'x'], ['tools/call', 'x'], ['tools/call', 'y']], 1);
    const two = await writer(shared.descriptor, [['tools/call', 'x'], ['prompts/get', 'secret']], 0);
    expect(gauge(shared, 'x')).toBe(3); // 2 held in one, 1 in two
    expect(gauge(shared, 'y')).toBe(1);
    expect(shared.inFlight().find((s) => s.method === 'prompts/get')).toEqual({ method: 'prompts/get', target: '', value: 1 });
    const id = one.threadId;
    await one.terminate();
    shared.threadExited(id);
    expect(gauge(shared, 'x')).toBe(1);
    expect(gauge(shared, 'y')).toBe(0);
    expect(shared.snapshot().find((s) => s.target === 'x')?.count).toBe(1);
    // The freed block is the first free one: the next thread takes it and reads its directory.
    const three = await writer(shared.descriptor, [['tools/call', 'x']], 0);
    expect(gauge(shared, 'x')).toBe(2);
    expect(shared.inFlight().filter((s) => s.target === 'x')).toHaveLength(1);
    await Promise.all([two.terminate(), three.terminate()]);
  });

  it('a full gauge directory folds new label sets into _other; every end gives back what its enter took', () => {
    const shared = OperationHistograms.create(2);
    const h = new OperationHistograms(shared.descriptor);
    const entered = Array.from({ length: 100 }, (_, i) => [`t${i}`, h.enter('tools/call', `t${i}`)] as const);
    const series = shared.inFlight();
    expect(series).toHaveLength(kGaugesPerThread);
    expect(series.find((s) => s.method === '_other')?.value).toBe(100 - (kGaugesPerThread - 1));
    expect(series.reduce((n, s) => n + s.value, 0)).toBe(100);
    for (const [target, slots] of entered) h.end(slots, 'tools/call', target, '', 0.001);
    expect(shared.inFlight().every((s) => s.value === 0)).toBe(true);
    // The histogram took each end, through the entered slots where the labels matched.
    expect(shared.snapshot().reduce((n, s) => n + s.count, 0)).toBe(100);
  });
});

describe('the in-flight gauge through the OpenTelemetry metrics API', () => {
  it('with a meter provider in the serving thread: sluice.server.requests.in_flight goes +1/−1 per call, by method and tool', async () => {
    const exporter = new InMemoryMetricExporter(AggregationTemporality.CUMULATIVE);
    const reader = new PeriodicExportingMetricReader({ exporter, exportIntervalMillis: 60_000 });
    metrics.setGlobalMeterProvider(new MeterProvider({ readers: [reader] }));
    let open!: () => void;
    const gate = new Promise<void>((resolve) => { open = resolve; });
    const schema = { type: 'object' as const, properties: {} };
    const holdA = defineTool({ name: 'hold_a', description: 'Holds.', inputSchema: schema, handler: async () => { await gate; return 'a'; } });
    const holdB = defineTool({ name: 'hold_b', description: 'Holds, then fails.', inputSchema: schema, handler: async () => { await gate; throw new Error('no'); } });
    const running = await startServer({ tools: [holdA, holdB], workers: 1 });
    const values = async (): Promise<Map<string, number>> => {
      exporter.reset();
      await reader.forceFlush();
      const out = new Map<string, number>();
      const sums = exporter.getMetrics().flatMap((m) => m.scopeMetrics).flatMap((s) => s.metrics)
        .filter((m): m is SumMetricData => m.descriptor.name === 'sluice.server.requests.in_flight');
      for (const m of sums) {
        expect(m.isMonotonic).toBe(false);
        for (const p of m.dataPoints) {
          expect(p.attributes['mcp.method.name']).toBe('tools/call');
          out.set(String(p.attributes['gen_ai.tool.name']), p.value);
        }
      }
      return out;
    };
    try {
      const { url } = running.address;
      const headers = (name: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name });
      const call = (id: number, name: string) => post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {}, _meta: modernMeta() } }, headers(name));
      const answers = [call(1, 'hold_a'), call(2, 'hold_a'), call(3, 'hold_b')];
      let during = new Map<string, number>();
      for (let i = 0; i < 100 && !(during.get('hold_a') === 2 && during.get('hold_b') === 1); i++) {
        await new Promise((r) => setTimeout(r, 20));
        during = await values();
      }
      expect(Object.fromEntries(during)).toEqual({ hold_a: 2, hold_b: 1 });
      open();
      for (const res of await Promise.all(answers)) expect(res.status).toBe(200);
      expect(Object.fromEntries(await values())).toEqual({ hold_a: 0, hold_b: 0 });
    } finally {
      open();
      await running.close();
      metrics.disable();
    }
  });
});
