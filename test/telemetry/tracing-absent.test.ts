/**
 * OpenTelemetry absent: `@opentelemetry/api` not installed (a loader that cannot find it), or
 * installed with no SDK registered (then Sluice does not load it). Either way no tracer is made
 * (requests make no span) and a server serves as before.
 */
import { execFileSync } from 'node:child_process';
import { describe, expect, it } from 'vitest';
import * as api from '@opentelemetry/api';
import { loadOtelApi } from '../../src/otel-api.js';
import { activeTracer, parseTraceparent } from '../../src/telemetry/tracing/otel.js';
import { ServerTracer } from '../../src/telemetry/tracing/server.js';
import { stdioServer } from '../helpers/stdio.js';
import { until } from '../helpers/server.js';

const kTools = new URL('../fixtures/telemetry-tools.mjs', import.meta.url);

describe('tracing when OpenTelemetry is absent', () => {
  it('the package missing: the loader answers undefined, and no tracer is made', () => {
    const missing = (id: string): never => {
      throw Object.assign(new Error(`Cannot find module '${id}'`), { code: 'MODULE_NOT_FOUND' });
    };
    expect(loadOtelApi(missing)).toBeUndefined();
    expect(ServerTracer.create('tcp', loadOtelApi(missing))).toBeUndefined();
    // Another failure while loading it is not hidden.
    expect(() => loadOtelApi(() => { throw new SyntaxError('broken'); })).toThrow('broken');
  });

  it('the API installed, nothing registered in a thread: Sluice (server and client) does not even load it, and makes no tracer or meter', () => {
    // A fresh process (this file's imports load the API themselves): the engine's three checks, then
    // whether any module of the API's package was required.
    const dist = new URL('../../dist/src/telemetry/', import.meta.url).href;
    const client = new URL('../../dist/src/client/tracing.js', import.meta.url).href;
    const script = `
      import { createRequire } from 'node:module';
      const { ServerTracer } = await import('${dist}tracing/server.js');
      const { ToolSpans } = await import('${dist}tracing/tool-spans.js');
      const { MeterHistograms } = await import('${dist}meters.js');
      const { activeTrace } = await import('${dist}tracing/otel.js');
      const { ClientTracer, ClientMeter } = await import('${client}');
      const made = [ServerTracer.create('tcp'), ToolSpans.create(), MeterHistograms.create(), activeTrace(), ClientTracer.create(), ClientMeter.create()];
      const loaded = Object.keys(createRequire(import.meta.url).cache).filter((k) => k.includes('@opentelemetry')).length;
      process.stdout.write(JSON.stringify({ made: made.map((m) => m === undefined), loaded }));`;
    const out = JSON.parse(execFileSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' })) as { made: boolean[]; loaded: number };
    expect(out).toEqual({ made: [true, true, true, true, true, true], loaded: 0 });
  });

  it('the API installed, something registered but no tracer provider: loaded then, still no tracer (the proxy has no delegate)', () => {
    expect(loadOtelApi()).toBeUndefined(); // nothing registered in this thread yet
    api.diag.setLogger(new api.DiagConsoleLogger(), api.DiagLogLevel.ERROR);
    try {
      const loaded = loadOtelApi();
      expect(loaded).toBeDefined();
      expect(activeTracer(loaded, 'sluice')).toBeUndefined();
      expect(ServerTracer.create('tcp')).toBeUndefined();
      expect(api.trace.getTracerProvider()).toBeInstanceOf(api.ProxyTracerProvider);
    } finally {
      api.diag.disable();
    }
  });

  it('a stdio server without the API serves tools/call (a request with traceparent too)', async () => {
    const server = stdioServer({ tools: kTools });
    try {
      server.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
      server.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: { traceparent: `00-${'a'.repeat(32)}-${'b'.repeat(16)}-01` } } });
      await until(() => server.lines.some((l) => l.id === 2), 10_000, 'the answer');
      expect(server.lines.find((l) => l.id === 2)).toHaveProperty('result');
    } finally {
      server.input.end();
      await server.done;
    }
  });

  it('traceparent parsing refuses malformed and all-zero ids', () => {
    expect(parseTraceparent(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01`)).toEqual({ traceId: 'a'.repeat(32), spanId: 'b'.repeat(16), traceFlags: 1 });
    expect(parseTraceparent(`00-${'0'.repeat(32)}-${'b'.repeat(16)}-01`)).toBeUndefined();
    expect(parseTraceparent(`ff-${'a'.repeat(32)}-${'b'.repeat(16)}-01`)).toBeUndefined();
    expect(parseTraceparent('00-xyz')).toBeUndefined();
    expect(parseTraceparent(`00-${'a'.repeat(32)}-${'b'.repeat(16)}-01-extra`)).toBeUndefined();
  });
});
