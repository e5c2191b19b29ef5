/**
 * `sluice serve --tracing <module>`: the OpenTelemetry setup module every serving thread imports
 * (the `tracing` option). Served for real: a call carrying a traceparent gets its SERVER span,
 * exported by the module's SDK in the HTTP worker; a module that does not exist is a usage error.
 */
import { existsSync, readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { modernMeta, recordPath, until } from '../helpers/server.js';
import { runCli, serveCli } from './helpers.js';
import type { Serving } from './helpers.js';

const kTools = fileURLToPath(new URL('../fixtures/telemetry-tools.mjs', import.meta.url));
const kSetup = fileURLToPath(new URL('../fixtures/otel-setup.mjs', import.meta.url));

describe('sluice serve --tracing', () => {
  let serving: Serving | undefined;
  afterAll(async () => {
    await serving?.stop();
  });

  it('every request gets a span from the module\'s SDK', async () => {
    const spans = recordPath();
    process.env.SLUICE_TEST_SPANS = spans; // the child copies the environment
    try {
      serving = await serveCli(['--tools', kTools, '--tracing', kSetup, '--port', '0', '--workers', '1']);
    } finally {
      delete process.env.SLUICE_TEST_SPANS;
    }
    const traceId = '9'.repeat(32);
    const res = await post(serving.url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'nap', arguments: { ms: 1 }, _meta: modernMeta({ traceparent: `00-${traceId}-${'a'.repeat(16)}-01` }) } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'nap' });
    expect(res.status).toBe(200);
    const read = () => (existsSync(spans) ? readFileSync(spans, 'utf8') : '');
    await until(() => read().includes(traceId), 10_000, 'the span');
    const span = read().trim().split('\n').map((l) => JSON.parse(l) as { name: string; traceId: string; parentSpanId?: string }).find((s) => s.traceId === traceId)!;
    expect(span.name).toBe('tools/call nap');
    expect(span.parentSpanId).toBe('a'.repeat(16));
  });

  it('a module that does not exist is a usage error (exit 2) naming it', async () => {
    const run = await runCli(['serve', '--tracing', './no-such-otel-setup.mjs', '--port', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--tracing: the module .*no-such-otel-setup\.mjs does not exist/);
  });
});
