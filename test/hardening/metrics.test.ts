// /metrics cost and exposure (issue 31, finding 8): a scrape flood renders a bounded number of
// times per serving thread, and `metricsPort`/`metricsHost` (`--metrics-port/--metrics-host`) move
// /metrics to a listener of its own so the MCP port never serves it.
import { afterEach, describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import type { Server, ServerOptions } from '../../src/index.js';
import { MetricsScrape, kRendersPerSecond } from '../../src/telemetry/scrape.js';
import { ServerCounters, Counter } from '../../src/telemetry/counters.js';
import type { RegistryCounters } from '../../src/registry/index.js';
import { serveOptions } from '../../src/cli/serve.js';
import { post } from '../helpers/http.js';
import { kToolsModule } from '../helpers/server.js';
import { adapters } from '../helpers/adapters.js';

const echo = defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object' }, handler: () => 'ok' });
const ping = { jsonrpc: '2.0', id: 1, method: 'ping' };
const legacy = { 'mcp-protocol-version': '2025-11-25' };
const requestsTotal = (text: string) => Number(/^sluice_requests_total (\d+)$/m.exec(text)?.[1]);

let server: Server | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function start(options: Partial<ServerOptions>) {
  server = createServer({ tools: [echo], port: 0, janitor: false, sessions: false, ...options }, { log: () => {} });
  return server.listen();
}

describe('MetricsScrape', () => {
  it(`renders at most ${kRendersPerSecond} times in a burst and ${kRendersPerSecond} a second after it, whatever the scrape rate`, () => {
    const counters = ServerCounters.create(2);
    let scans = 0;
    const registry = { counters: (): RegistryCounters => { scans++; return { inFlight: 0, cancellationRows: 0, tracked: 0, untracked: 0, trackRefused: 0, cancellations: 0, cancellationsRefused: 0, evictions: 0, expired: 0, inFlightSwept: 0 }; } };
    const scrape = new MetricsScrape(registry, counters, false, 0);
    // 10 000 scrapes in one millisecond: the burst budget, then the last text.
    let last = '';
    for (let i = 0; i < 10_000; i++) {
      counters.add(Counter.Requests);
      last = scrape.text(i / 10_000);
    }
    expect(scrape.renders).toBe(kRendersPerSecond);
    expect(scans).toBe(kRendersPerSecond);
    expect(requestsTotal(last)).toBe(kRendersPerSecond);
    // Ten seconds of 1 000 scrapes a second: about kRendersPerSecond renders a second.
    for (let t = 1; t <= 10_000; t++) scrape.text(t);
    expect(scrape.renders).toBeLessThanOrEqual(kRendersPerSecond + 10 * kRendersPerSecond + 1);
    // Asked now and then, it is always fresh.
    counters.add(Counter.Requests, 7);
    expect(requestsTotal(scrape.text(20_000))).toBe(10_007);
  });
});

describe.each(adapters('/metrics'))('/metrics over %s', (http) => {
  it('a scrape flood is answered from a bounded number of renders (each scrape rendered anew before)', async () => {
    const { url } = await start({ http, metrics: true });
    const metrics = url.replace('/mcp', '/metrics');
    // Each scrape follows a request that moved sluice_requests_total: rendered every time, every
    // scrape would show a new value.
    const seen = new Set<number>();
    const started = performance.now();
    const n = 60;
    for (let i = 0; i < n; i++) {
      expect((await post(url, ping, legacy)).status).toBe(200);
      const res = await fetch(metrics);
      expect(res.status).toBe(200);
      seen.add(requestsTotal(await res.text()));
    }
    const seconds = (performance.now() - started) / 1000;
    expect(seen.size).toBeLessThanOrEqual(kRendersPerSecond + Math.ceil(seconds * kRendersPerSecond) + 1);
    expect(seen.size).toBeLessThan(n);
  });

  it('metricsPort: /metrics on its own listener (metricsUrl), 404 on the MCP port', async () => {
    const address = await start({ http, metricsPort: 0 });
    expect(address.metricsUrl).toMatch(/^http:\/\/127\.0\.0\.1:\d+\/metrics$/);
    expect(new URL(address.metricsUrl!).port).not.toBe(String(address.port));
    expect((await post(address.url, ping, legacy)).status).toBe(200);
    const own = await fetch(address.metricsUrl!);
    expect(own.status).toBe(200);
    expect(own.headers.get('content-type')).toContain('text/plain');
    expect(requestsTotal(await own.text())).toBeGreaterThanOrEqual(1);
    expect((await fetch(address.url.replace('/mcp', '/metrics'))).status).toBe(404);
    // The metrics listener serves nothing else.
    expect((await fetch(address.metricsUrl!.replace('/metrics', '/mcp'), { method: 'POST', body: '{}' })).status).toBe(404);
    await server!.close();
    server = undefined;
    // Closed with the server.
    await expect(fetch(address.metricsUrl!)).rejects.toThrow();
  });
});

it('metricsPort with HTTP workers: the supervisor serves /metrics, counting every worker; the workers answer 404', async () => {
  server = createServer({ tools: kToolsModule, workers: 2, port: 0, janitor: false, sessions: false, metricsPort: 0, metricsHost: '127.0.0.1' }, { log: () => {} });
  const address = await server.listen();
  for (let i = 0; i < 6; i++) expect((await post(address.url, ping, legacy)).status).toBe(200);
  expect(requestsTotal(await (await fetch(address.metricsUrl!)).text())).toBeGreaterThanOrEqual(6);
  for (let i = 0; i < 4; i++) expect((await fetch(address.url.replace('/mcp', '/metrics'))).status).toBe(404);
}, 30_000);

it('--metrics-port/--metrics-host: the serve flags', () => {
  expect(serveOptions({ 'metrics-port': '9464', 'metrics-host': '10.0.0.5' })).toMatchObject({ metricsPort: 9464, metricsHost: '10.0.0.5' });
  expect(serveOptions({ 'metrics-port': '0' })).toMatchObject({ metricsPort: 0 });
  expect(() => serveOptions({ 'metrics-host': '10.0.0.5' })).toThrow(/--metrics-host needs --metrics-port/);
  expect(() => serveOptions({ 'metrics-port': 'x' })).toThrow();
  expect(() => createServer({ tools: [echo], metricsHost: '0.0.0.0' })).toThrow(/metricsHost needs metricsPort/);
});
