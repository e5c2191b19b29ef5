/**
 * The latency histograms on /metrics (mcp.server.operation.duration, the pool queue wait, the
 * legacy session duration): per-thread blocks summed at scrape, checked against known tool sleeps
 * on real servers; and the same observations through the OpenTelemetry metrics API.
 */
import { afterEach, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { initialize, modernMeta, recordPath, recordedJson, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { OperationHistograms, kDurationBounds } from '../../src/telemetry/histograms.js';

const kTools = new URL('../fixtures/telemetry-tools.mjs', import.meta.url);
const kName = 'mcp_server_operation_duration_seconds';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const modern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };
function call(id: number, name: string, args: Record<string, unknown>) {
  return { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } };
}

/** The value of one sample line, or undefined. */
function sample(text: string, line: string): number | undefined {
  const found = text.split('\n').find((l) => l.startsWith(`${line} `));
  return found === undefined ? undefined : Number(found.slice(line.length + 1));
}

describe('operation duration histograms', () => {
  it('a 50 ms tool lands in the (0.05, 0.1] bucket, counted once per call, summed across 2 workers', async () => {
    running = await startServer({ tools: kTools, workers: 2, metricsPort: 0 });
    const metricsUrl = running.address.metricsUrl!;
    const { url } = running.address;
    const threads = new Map<string, number>();
    let calls = 0;
    // New connection per call: the kernel spreads them over both workers (bounded attempts).
    while (calls < 200 && (threads.size < 2 || calls < 12)) {
      const res = await post(url, call(calls, 'nap', { ms: 55 }), { ...modern, 'mcp-name': 'nap' });
      expect(res.status).toBe(200);
      const worker = String(res.headers['sluice-worker']);
      threads.set(worker, (threads.get(worker) ?? 0) + 1);
      calls++;
    }
    expect(threads.size).toBe(2);
    const tool = await post(url, call(999, 'refuse', {}), { ...modern, 'mcp-name': 'refuse' });
    expect(tool.body).toContain('"isError":true');

    // A request is counted as it is released, just after its response is written: poll (bounded).
    const labels = 'mcp_method_name="tools/call",gen_ai_tool_name="nap"';
    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(metricsUrl)).text();
      if (sample(text, `${kName}_count{${labels}}`) === calls && text.includes('"refuse"')) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(text).toContain(`# TYPE ${kName} histogram`);
    expect(sample(text, `${kName}_count{${labels}}`)).toBe(calls);
    expect(sample(text, `${kName}_bucket{${labels},le="+Inf"}`)).toBe(calls);
    // Cumulative buckets: nothing at or below 50 ms, every call by 100 ms (a loaded machine may
    // stretch a few calls past it, never below the sleep).
    expect(sample(text, `${kName}_bucket{${labels},le="0.05"}`)).toBe(0);
    expect(sample(text, `${kName}_bucket{${labels},le="0.2"}`)).toBe(calls);
    const sum = sample(text, `${kName}_sum{${labels}}`)!;
    expect(sum).toBeGreaterThanOrEqual(calls * 0.054);
    expect(sample(text, `${kName}_count{mcp_method_name="tools/call",gen_ai_tool_name="refuse",error_type="tool_error"}`)).toBe(1);

    // An unknown tool's name is not a label (the error code is).
    await post(url, call(1000, 'no_such_tool', {}), { ...modern, 'mcp-name': 'no_such_tool' });
    let after = '';
    for (let i = 0; i < 50 && !after.includes('-32602'); i++) {
      await new Promise((r) => setTimeout(r, 250));
      after = await (await fetch(metricsUrl)).text();
    }
    expect(after).not.toContain('no_such_tool');
    expect(sample(after, `${kName}_count{mcp_method_name="tools/call",error_type="-32602"}`)).toBe(1);
  });

  it('blocks: a thread continuing a dead thread block keeps its series, a full block folds new names into _other', () => {
    const shared = OperationHistograms.create(4);
    const a = new OperationHistograms(shared.descriptor);
    a.observe('tools/call', 'x', '', 0.03);
    a.observe('tools/call', 'x', '', 0.5);
    for (let i = 0; i < 100; i++) a.observe('tools/call', `t${i}`, '', 0.001);
    const snap = shared.snapshot();
    const x = snap.find((s) => s.target === 'x')!;
    expect(x.count).toBe(2);
    expect(x.buckets[kDurationBounds.indexOf(0.05)]).toBe(1);
    expect(x.buckets[kDurationBounds.indexOf(0.5)]).toBe(1);
    const other = snap.find((s) => s.method === '_other')!;
    expect(snap.length).toBe(64);
    expect(snap.reduce((n, s) => n + s.count, 0)).toBe(102);
    expect(other.count).toBeGreaterThan(0);
  });
});

describe('pool queue wait and session duration histograms', () => {
  it('pool tool calls queued behind one pool thread: each waits, counted per tool; a legacy session is timed from initialize to DELETE', async () => {
    running = await startServer({ tools: kTools, workers: 1, poolThreads: 1, metricsPort: 0 });
    const metricsUrl = running.address.metricsUrl!;
    const { url } = running.address;
    // Four 150 ms calls at once on one pool thread: three wait for the one before them (≥ 0.1 s each, the last ≥ 0.4 s).
    const answers = await Promise.all([0, 1, 2, 3].map((i) => post(url, call(i, 'pooled_nap', { ms: 150 }), { ...modern, 'mcp-name': 'pooled_nap' })));
    for (const a of answers) expect(a.status).toBe(200);
    const wait = 'sluice_pool_queue_wait_seconds';
    const labels = 'gen_ai_tool_name="pooled_nap"';
    // A legacy session that lives at least 120 ms, then ends with DELETE.
    const session = await initialize(url);
    await new Promise((r) => setTimeout(r, 120));
    const gone = await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
    expect(gone.status).toBeLessThan(300);
    const sessions = 'mcp_server_session_duration_seconds';
    let text = '';
    for (let i = 0; i < 50; i++) {
      text = await (await fetch(metricsUrl)).text();
      if (sample(text, `${wait}_count{${labels}}`) === 4 && sample(text, `${sessions}_count`) === 1) break;
      await new Promise((r) => setTimeout(r, 250));
    }
    expect(text).toContain(`# TYPE ${wait} histogram`);
    expect(sample(text, `${wait}_count{${labels}}`)).toBe(4);
    // At least three calls waited 0.1 s or more (the queue), so at most one is in the lowest buckets.
    expect(sample(text, `${wait}_bucket{${labels},le="0.05"}`)).toBeLessThanOrEqual(1);
    expect(sample(text, `${wait}_sum{${labels}}`)).toBeGreaterThanOrEqual(0.14 + 0.29 + 0.44);
    // Inline calls never enter the pool queue histogram.
    expect(text).not.toContain(`${wait}_count{gen_ai_tool_name="nap"}`);
    expect(text).toContain(`# TYPE ${sessions} histogram`);
    expect(sample(text, `${sessions}_count`)).toBe(1);
    expect(sample(text, `${sessions}_sum`)).toBeGreaterThanOrEqual(0.12);
    expect(sample(text, `${sessions}_bucket{le="0.1"}`)).toBe(0);
  });
});

describe('the histograms through the OpenTelemetry metrics API', () => {
  it('with a meter provider registered in the workers (the tracing module), each call is recorded on mcp.server.operation.duration', async () => {
    const file = recordPath();
    process.env.SLUICE_TEST_METRICS = file; // before the workers start: they copy the environment
    try {
      running = await startServer({ tools: kTools, workers: 2, tracing: new URL('../fixtures/otel-metrics-setup.mjs', import.meta.url) });
      const { url } = running.address;
      for (let i = 0; i < 6; i++) expect((await post(url, call(i, 'nap', { ms: 55 }), { ...modern, 'mcp-name': 'nap' })).status).toBe(200);
      await post(url, call(99, 'refuse', {}), { ...modern, 'mcp-name': 'refuse' });
      interface Point { name: string; unit: string; attributes: Record<string, unknown>; count: number; sum: number; boundaries?: number[] }
      const points = (): Point[] => recordedJson<Point>(file);
      const naps = () => points().filter((p) => p.name === 'mcp.server.operation.duration' && p.attributes['gen_ai.tool.name'] === 'nap');
      await until(() => naps().reduce((n, p) => n + p.count, 0) >= 6 && points().some((p) => p.attributes['gen_ai.tool.name'] === 'refuse'), 10_000, 'the OTel points');
      const nap = naps();
      expect(nap.reduce((n, p) => n + p.count, 0)).toBe(6); // delta temporality: the points add up to the calls
      expect(nap.reduce((n, p) => n + p.sum, 0)).toBeGreaterThanOrEqual(6 * 0.054);
      expect(nap[0]).toMatchObject({ unit: 's', attributes: { 'mcp.method.name': 'tools/call', 'gen_ai.tool.name': 'nap' } });
      expect(nap[0]!.boundaries).toEqual(kDurationBounds);
      const refused = points().find((p) => p.attributes['gen_ai.tool.name'] === 'refuse')!;
      expect(refused.attributes['error.type']).toBe('tool_error');
    } finally {
      delete process.env.SLUICE_TEST_METRICS;
    }
  });
});
