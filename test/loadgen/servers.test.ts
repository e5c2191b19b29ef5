/**
 * `sluice bench` end to end against real MCP servers on loopback: Sluice (both eras, a session per
 * call, stdio), the official SDK v1 (stateful with SSE answers, stateless with JSON), the SDK v2
 * handler and fastmcp. Each short run completes (exit 0), the requests it counted agree with the
 * server's own count of calls, and the percentiles are positive and ordered.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { defineTool } from '../../src/index.js';
import { kBin } from '../cli/helpers.js';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { benchJson, kFixtures, ordered, startFixture, tally, tallyPath } from './helpers.js';

async function requestsTotal(url: string): Promise<number> {
  const text = await (await fetch(url.replace(/\/mcp$/, '/metrics'))).text();
  const m = /^sluice_requests_total (\d+)$/m.exec(text);
  if (m === null) throw new Error('no sluice_requests_total');
  return Number(m[1]);
}

const kShort = ['--duration', '1s', '--warmup', '0s', '--connections', '3'];

describe('sluice bench against Sluice', () => {
  let sluice: TestServer;
  let url: string;
  beforeAll(async () => {
    sluice = await startServer({ metrics: true });
    url = sluice.address.url;
  });
  afterAll(async () => { await sluice?.close(); });

  it('2026-07-28 (auto): the requests counted are the server\'s own count less the probe', async () => {
    const before = await requestsTotal(url);
    const run = await benchJson([url, '--tool', 'echo', '--args', '{"text":"hi"}', ...kShort]);
    expect(run.code, run.stderr).toBe(0);
    const s = run.json!;
    expect(s.era).toBe('2026-07-28');
    expect(s.requests).toBeGreaterThan(10);
    expect(s.ok).toBe(s.requests);
    expect(s.errors.total).toBe(0);
    expect(ordered(s.latencyMs)).toBe(true);
    // The probe: server/discover and one tools/call; requests in flight at the end may have reached it.
    const delta = (await requestsTotal(url)) - before;
    expect(delta).toBeGreaterThanOrEqual(s.requests + s.warmupRequests + 2);
    expect(delta).toBeLessThanOrEqual(s.requests + s.warmupRequests + 2 + s.unfinished);
  });

  it('legacy over two generator threads: one session per connection (initialize each), the counts agree', async () => {
    const before = await requestsTotal(url);
    const run = await benchJson([url, '--era', 'legacy', '--tool', 'echo', '--args', '{"text":"hi"}', ...kShort, '--threads', '2']);
    expect(run.code, run.stderr).toBe(0);
    const s = run.json!;
    expect(s.era).toBe('legacy');
    expect(s.protocolVersion).toBe('2025-11-25');
    expect(s.threads).toBe(2);
    expect(s.timeline.reduce((n: number, t: { requests: number }) => n + t.requests, 0)).toBe(s.requests);
    expect(s.ok).toBe(s.requests);
    expect(ordered(s.latencyMs)).toBe(true);
    // The probe: initialize (era check), initialize + tools/call; then one initialize per connection.
    const delta = (await requestsTotal(url)) - before;
    expect(delta).toBeGreaterThanOrEqual(s.requests + 3 + 3);
    expect(delta).toBeLessThanOrEqual(s.requests + 3 + 3 + s.unfinished);
  });

  it('--session-per-call without --era speaks the legacy era to a server that offers 2026-07-28, and DELETEs every session', async () => {
    const run = await benchJson([url, '--session-per-call', '--tool', 'echo', '--args', '{"text":"hi"}', ...kShort]);
    expect(run.code, run.stderr).toBe(0);
    const s = run.json!;
    expect(s.era).toBe('legacy');
    for (const step of ['initialize', 'initialized', 'call', 'delete']) expect(s.steps[step].count, step).toBeGreaterThan(0);
  });

  it('--session-per-call: every iteration is initialize, initialized, call, DELETE, each step timed', async () => {
    const before = await requestsTotal(url);
    const run = await benchJson([url, '--era', 'legacy', '--session-per-call', '--tool', 'echo', '--args', '{"text":"hi"}', ...kShort]);
    expect(run.code, run.stderr).toBe(0);
    const s = run.json!;
    expect(s.sessionPerCall).toBe(true);
    expect(s.requests).toBeGreaterThan(5);
    for (const step of ['initialize', 'initialized', 'call', 'delete']) expect(s.steps[step].count, step).toBeGreaterThan(0);
    expect(ordered(s.steps.call)).toBe(true);
    // Two JSON-RPC requests per iteration (initialize, tools/call), plus the probe's three.
    const delta = (await requestsTotal(url)) - before;
    expect(delta).toBeGreaterThanOrEqual(2 * s.requests + 3);
    expect(delta).toBeLessThanOrEqual(2 * (s.requests + s.unfinished) + 3);
  });
});

describe('sluice bench: methods other than tools/call', () => {
  let sluice: TestServer;
  beforeAll(async () => { sluice = await startServer({ metrics: true }); });
  afterAll(async () => { await sluice?.close(); });

  it('tools/list (2026-07-28) and ping (legacy) load like a call', async () => {
    for (const args of [['--method', 'tools/list'], ['--method', 'ping', '--era', 'legacy']]) {
      const run = await benchJson([sluice.address.url, ...args, '--duration', '0.5s', '--warmup', '0s', '--connections', '2']);
      expect(run.code, `${args.join(' ')}: ${run.stderr}`).toBe(0);
      expect(run.json!.method).toBe(args[1]);
      expect(run.json!.name).toBeNull();
      expect(run.json!.requests).toBeGreaterThan(5);
      expect(run.json!.ok).toBe(run.json!.requests);
    }
  });

  it('2026-07-28: a tool with x-mcp-header annotations is loaded with its Mcp-Param-* headers (the server refuses calls without them)', async () => {
    const regional = defineTool({
      name: 'regional', description: 'Echoes the region.', inputSchema: { type: 'object', properties: { region: { type: 'string', 'x-mcp-header': 'Region' } }, required: ['region'] },
      handler: ({ region }) => `region: ${String(region)}`,
    });
    const server = await startServer({ tools: [regional], workers: 1 });
    try {
      const run = await benchJson([server.address.url, '--tool', 'regional', '--args', '{"region":"eu-west"}', ...kShort]);
      expect(run.code, run.stderr).toBe(0);
      expect(run.json!.era).toBe('2026-07-28');
      expect(run.json!.requests).toBeGreaterThan(10);
      expect(run.json!.ok).toBe(run.json!.requests);
      expect(run.json!.errors.total).toBe(0);
    } finally {
      await server.close();
    }
  });
});

describe('sluice bench against a Sluice stdio server', () => {
  for (const era of ['auto', 'legacy'] as const) {
    it(`era ${era}: one process per connection; the tool's own count agrees`, async () => {
      const file = tallyPath();
      const run = await benchJson(['--era', era, '--tool', 'tally', '--args', JSON.stringify({ file }), '--duration', '1s', '--warmup', '0s', '--connections', '2',
        '--', process.execPath, kBin, 'serve', '--stdio', '--tools', `${kFixtures}bench-tally-tools.mjs`]);
      expect(run.code, run.stderr).toBe(0);
      const s = run.json!;
      expect(s.era).toBe(era === 'auto' ? '2026-07-28' : 'legacy');
      expect(s.requests).toBeGreaterThan(10);
      expect(s.ok).toBe(s.requests);
      expect(ordered(s.latencyMs)).toBe(true);
      const counted = tally(file) - 1; // the probe's call
      expect(counted).toBeGreaterThanOrEqual(s.requests);
      expect(counted).toBeLessThanOrEqual(s.requests + s.unfinished);
    });
  }
});

describe.concurrent('sluice bench against other MCP servers', () => {
  const peers = [
    { kind: 'v1-stateful', era: 'legacy', what: 'official SDK v1, sessions, SSE answers' },
    { kind: 'v1-stateless', era: 'legacy', what: 'official SDK v1, stateless, JSON answers' },
    { kind: 'v2', era: '2026-07-28', what: 'official SDK v2 createMcpHandler' },
    { kind: 'fastmcp', era: 'legacy', what: 'fastmcp httpStream' },
  ];
  for (const peer of peers) {
    it(`${peer.what}: completes, counts agree with the server's tally`, async () => {
      const file = tallyPath();
      const server = await startFixture('bench-peers.mjs', [peer.kind, file]);
      try {
        const run = await benchJson([server.url, '--tool', 'tally', '--args', '{"text":"x"}', ...kShort]);
        expect(run.code, run.stderr).toBe(0);
        const s = run.json!;
        expect(s.era).toBe(peer.era);
        expect(s.requests).toBeGreaterThan(5);
        expect(s.ok).toBe(s.requests);
        expect(ordered(s.latencyMs)).toBe(true);
        const counted = tally(file) - 1; // the probe's call
        expect(counted).toBeGreaterThanOrEqual(s.requests);
        expect(counted).toBeLessThanOrEqual(s.requests + s.unfinished);
      } finally {
        await server.stop();
      }
    });
  }
});
