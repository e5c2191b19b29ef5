/**
 * `sluice bench` behaviours: the open loop shows a server's 500 ms stall in p99 where the closed
 * loop hides it; --cancel-after against Sluice's spin tool (both eras) and the SDK v1 server;
 * bad input (unreachable, not MCP, garbage, mid-stream close, 401, a missing tool, a wrong flag)
 * with its exit code and no stack trace; --compare with interleaved rounds.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, serveCli } from '../cli/helpers.js';
import type { Serving } from '../cli/helpers.js';
import { benchOptions } from '../../src/cli/bench.js';
import { UsageError } from '../../src/cli/flags.js';
import { benchJson, startFixture, tally, tallyPath } from './helpers.js';

const kNoStack = /\n\s+at |Error: .*\n\s+at /;

describe('open loop against a server that stalls 500 ms once', () => {
  it('open loop: p99 shows the stall; closed loop: p99 hides it (only max sees it)', async () => {
    const open = await startFixture('bench-bad-servers.mjs', ['stall']);
    const closed = await startFixture('bench-bad-servers.mjs', ['stall']);
    try {
      const common = ['--era', '2026-07-28', '--tool', 'echo', '--duration', '2s', '--warmup', '0s', '--connections', '4'];
      const o = await benchJson([open.url, ...common, '--rate', '400/s']);
      expect(o.code, o.stderr).toBe(0);
      const c = await benchJson([closed.url, ...common]);
      expect(c.code, c.stderr).toBe(0);
      expect(o.json!.mode).toBe('open');
      expect(c.json!.mode).toBe('closed');
      // ~200 of ~800 requests were due during the stall: their latency counts from when they were due.
      expect(o.json!.latencyMs.p99).toBeGreaterThanOrEqual(350);
      // Closed loop: only the few requests in flight saw it.
      expect(c.json!.latencyMs.max).toBeGreaterThanOrEqual(400);
      expect(c.json!.latencyMs.p99).toBeLessThan(o.json!.latencyMs.p99 / 2);
    } finally {
      await open.stop();
      await closed.stop();
    }
  });
});

describe('without --tool: the era\'s lightest request', () => {
  it('against Sluice (both eras): ping runs the legacy era, server/discover the 2026-07-28 one', async () => {
    // `sluice bench URL` sent ping in 2026-07-28 (server/discover answered), which has no ping: exit 2.
    const sluice = await serveCli(['--port', '0']);
    try {
      const common = ['--duration', '0.5s', '--warmup', '0s', '--connections', '2'];
      const plain = await benchJson([sluice.url, ...common]);
      expect(plain.code, plain.stderr).toBe(0);
      expect(plain.json).toMatchObject({ era: 'legacy', method: 'ping', errors: { total: 0 } });
      expect(plain.json!.requests).toBeGreaterThan(10);
      const discover = await benchJson([sluice.url, '--method', 'server/discover', ...common]);
      expect(discover.code, discover.stderr).toBe(0);
      expect(discover.json).toMatchObject({ era: '2026-07-28', method: 'server/discover', errors: { total: 0 } });
      expect(discover.json!.requests).toBeGreaterThan(10);
    } finally {
      await sluice.stop();
    }
  });
});

describe('--cancel-after', () => {
  let sluice: Serving;
  beforeAll(async () => { sluice = await serveCli(['--port', '0']); });
  afterAll(async () => { await sluice?.stop(); });

  for (const era of ['legacy', '2026-07-28']) {
    it(`Sluice's spin tool (${era}): every cancel observed, cancel → answer stops reported`, async () => {
      const run = await benchJson([sluice.url, '--era', era, '--tool', 'spin', '--args', '{"ms":5000}', '--cancel-after', '30',
        '--connections', '2', '--duration', '1s', '--warmup', '0s']);
      expect(run.code, run.stderr).toBe(0);
      const c = run.json!.cancel;
      expect(c.afterMs).toBe(30);
      expect(c.sent).toBeGreaterThanOrEqual(4);
      expect(c.neverStopped).toBe(0);
      expect(c.finishedFirst).toBe(0);
      // Cancels sent in the last moment may be answered after the window closed.
      expect(c.answerStopped + run.json!.unfinished).toBeGreaterThanOrEqual(c.sent);
      expect(c.answerStopped).toBeGreaterThanOrEqual(3);
      expect(c.answerStopsMs.p50).toBeGreaterThan(0);
      expect(c.answerStopsMs.max).toBeLessThan(1000);
      expect(run.json!.errors.total).toBe(0);
    });
  }

  it('the SDK v1 server: cancels are counted (its answers never stop: the connection is dropped)', async () => {
    const server = await startFixture('bench-peers.mjs', ['v1-stateful', tallyPath()]);
    try {
      const run = await benchJson([server.url, '--tool', 'wait', '--args', '{"ms":5000}', '--cancel-after', '30', '--connections', '2', '--duration', '1.5s', '--warmup', '0s']);
      expect(run.code, run.stderr).toBe(0);
      const c = run.json!.cancel;
      expect(c.sent).toBeGreaterThanOrEqual(2);
      // Every cancel is accounted for: its answer stopped, never stopped, or was cut by the run's end.
      expect(c.answerStopped + c.neverStopped + run.json!.unfinished).toBeGreaterThanOrEqual(c.sent);
      expect(c.answerStopped + c.neverStopped).toBeGreaterThanOrEqual(2);
    } finally {
      await server.stop();
    }
  });
});

describe('--cancel-after against a server that answers a cancel with an error', () => {
  it('the probe takes the error as its cancel answered, and the run counts every one as an answer stopped', async () => {
    // The Python SDK answers a cancelled request with a JSON-RPC error (code 0, "Request cancelled");
    // the load loop always counted that as the answer stopping, but the probe refused the run.
    const server = await startFixture('bench-bad-servers.mjs', ['cancel-error']);
    try {
      const run = await benchJson([server.url, '--era', 'legacy', '--tool', 'echo', '--cancel-after', '20ms', '--connections', '2', '--duration', '0.5s', '--warmup', '0s']);
      expect(run.code, run.stderr).toBe(0);
      const c = run.json!.cancel;
      expect(c.sent).toBeGreaterThanOrEqual(4);
      expect(c.answerStopped).toBeGreaterThanOrEqual(3);
      expect(c.neverStopped).toBe(0);
      expect(run.json!.errors.total).toBe(0);
      // A tool the server does not have is still refused, cancelled or not.
      const missing = await runCli(['bench', server.url, '--era', 'legacy', '--tool', 'nope', '--cancel-after', '20', '--duration', '0.5s', '--warmup', '0s']);
      expect(missing.code).toBe(2);
      expect(missing.stderr).toMatch(/has no tool "nope"; its tools: echo/);
    } finally {
      await server.stop();
    }
  });
});

describe.concurrent('bad input: clear errors, exit codes, no stack trace', () => {
  it('a stdio server that cannot start, or exits at once: exit 2, says which and why', async () => {
    const missing = await runCli(['bench', '--duration', '1s', '--', '/nonexistent/sluice-server']);
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/did not start \(spawn \/nonexistent\/sluice-server ENOENT\)/);
    const exits = await runCli(['bench', '--duration', '1s', '--', process.execPath, '-e', 'console.error("Error: no config"); process.exit(3)']);
    expect(exits.code).toBe(2);
    expect(exits.stderr).toMatch(/exited \(code 3\): Error: no config/);
    for (const run of [missing, exits]) expect(run.stderr).not.toMatch(kNoStack);
  });

  it('an unreachable URL: exit 2, says nothing listens there', async () => {
    const run = await runCli(['bench', 'http://127.0.0.1:1/mcp', '--tool', 'echo', '--duration', '1s']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/could not connect to 127\.0\.0\.1:1 \(ECONNREFUSED\)/);
    expect(run.stderr).not.toMatch(kNoStack);
  });

  for (const [kind, message] of [
    ['non-mcp', /does not answer like an MCP server .*HTTP 404/],
    ['garbage', /does not answer like an MCP server .*"hello"/],
    ['unauthorized', /401 Unauthorized: it wants a bearer token \(--bearer TOKEN\); resource metadata: http:\/\/127\.0\.0\.1\/\.well-known/],
    // Not "does not answer like an MCP server": the token lacks a scope, in either era.
    // Read to the bound, then ended: not read until memory runs out.
    ['sse-endless', /^sluice: http:\/\/127\.0\.0\.1:\d+\/mcp does not answer like an MCP server \(the first tools\/call echo: an SSE event over 16 MiB\)/],
    // Says why, not "failed: " and nothing (the probe's own timeout).
    ['headers-only', /^sluice: the first tools\/call echo failed: no answer within 10 s\n/],
    ['forbidden', /^sluice: the server answered 403 Forbidden: the bearer token lacks a scope it needs \(insufficient_scope; it asks for scope mcp files:read\); resource metadata: http:\/\/127\.0\.0\.1\/\.well-known/],
  ] as const) {
    it(`a ${kind} server: exit 2 with a clear message`, async () => {
      const server = await startFixture('bench-bad-servers.mjs', [kind]);
      try {
        for (const era of kind === 'unauthorized' || kind === 'forbidden' ? ['auto', 'legacy'] : ['auto']) {
          const run = await runCli(['bench', server.url, '--tool', 'echo', '--duration', '1s', '--warmup', '0s', '--era', era]);
          expect(run.code, era).toBe(2);
          expect(run.stderr, era).toMatch(message);
          expect(run.stderr).not.toMatch(kNoStack);
          expect(run.stdout).toBe('');
        }
      } finally {
        await server.stop();
      }
    });
  }

  it('a server that closes every other answer mid-stream: the run completes, resets counted, exit 1', async () => {
    const server = await startFixture('bench-bad-servers.mjs', ['midstream']);
    try {
      const run = await benchJson([server.url, '--tool', 'echo', '--duration', '1s', '--warmup', '0s', '--connections', '2']);
      expect(run.code).toBe(1);
      const s = run.json!;
      expect(s.errors.byKind['connection reset']).toBeGreaterThan(0);
      expect(s.errors.details['connection reset']).toMatch(/closed in the middle of a response/);
      expect(s.errors.rate).toBeGreaterThan(0.3);
      expect(s.ok).toBeGreaterThan(0);
      expect(run.stderr).toMatch(/failed \(over --max-errors 1 %\)/);
      expect(run.stderr).not.toMatch(kNoStack);
      // The same run with a looser limit exits 0.
      const loose = await benchJson([server.url, '--tool', 'echo', '--duration', '0.5s', '--warmup', '0s', '--connections', '2', '--max-errors', '90']);
      expect(loose.code).toBe(0);
    } finally {
      await server.stop();
    }
  });

  it('a tool the server lacks: exit 2, the message lists its tools', async () => {
    const server = await startFixture('bench-peers.mjs', ['v1-stateless', tallyPath()]);
    try {
      const run = await runCli(['bench', server.url, '--tool', 'nope', '--duration', '1s']);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/has no tool "nope"; its tools: tally, wait/);
      expect(run.stderr).not.toMatch(kNoStack);
    } finally {
      await server.stop();
    }
  });

  it('wrong flags: usage errors (exit 2)', async () => {
    for (const args of [['--bogus'], ['--rate', 'fast'], ['--duration', 'long'], ['--era', 'modern'], ['--args', '[1]'], ['--method', 'tools/call'],
      ['--connections', '0'], ['--header', 'nocolon'], ['--max-errors', '200'], ['--era', '2026-07-28', '--session-per-call'],
      ['--cancel-after', '0'], ['--cancel-after', '0.4ms'], ['--cancel-after', '2h'], ['--cancel-after', 'soon'], ['--cancel-after', '61m']]) {
      expect(() => benchOptions(['http://127.0.0.1:1/mcp', ...args], {}), args.join(' ')).toThrow(UsageError);
    }
    expect(() => benchOptions(['--tool', 'x'], {})).toThrow(/needs a URL/);
    const run = await runCli(['bench', 'http://127.0.0.1:1/mcp', '--rate', 'fast']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--rate must be requests per second/);
    expect(run.stderr).not.toMatch(kNoStack);
  });

  it('flags: defaults, the stdio command after --, headers and the bearer token', () => {
    const { options, repeats } = benchOptions(['127.0.0.1:3000', '--tool', 'echo', '--header', 'X-Trace: 1', '--bearer', 'tok'], {});
    expect(options.target).toEqual({ kind: 'http', url: 'http://127.0.0.1:3000/mcp' });
    expect(options).toMatchObject({ method: 'tools/call', connections: 10, durationMs: 30_000, warmupMs: 5_000, threads: 1, era: 'auto', maxErrors: 0.01, rate: undefined });
    expect(options.headers).toEqual({ 'x-trace': '1', authorization: 'Bearer tok' });
    expect(repeats).toBe(1);
    const stdio = benchOptions(['--rate', '2k/s', '--duration', '500ms', '--', 'node', 'server.js', '--stdio'], {});
    expect(stdio.options.target).toEqual({ kind: 'stdio', command: 'node', args: ['server.js', '--stdio'] });
    expect(stdio.options).toMatchObject({ method: 'ping', rate: 2000, durationMs: 500 });
    expect(benchOptions(['127.0.0.1:1', '--compare', '127.0.0.1:2'], {}).repeats).toBe(3);
    // Without --tool: ping, which exists only in the legacy era; server/discover when told 2026-07-28.
    expect(benchOptions(['127.0.0.1:1', '--era', '2026-07-28'], {}).options.method).toBe('server/discover');
    expect(benchOptions(['127.0.0.1:1', '--era', 'legacy'], {}).options.method).toBe('ping');
    expect(() => benchOptions(['127.0.0.1:1', '--era', '2026-07-28', '--method', 'ping'], {})).toThrow(/ping was removed in 2026-07-28/);
    expect(() => benchOptions(['127.0.0.1:1', '--era', 'legacy', '--method', 'server/discover'], {})).toThrow(/server\/discover is a 2026-07-28 request/);
    // --cancel-after: a bare number is ms (as documented), a duration reads as --duration's does.
    const after = (t: string): number | undefined => benchOptions(['127.0.0.1:1', '--cancel-after', t], {}).options.cancelAfterMs;
    expect([after('50'), after('50ms'), after('1.5s'), after('1m')]).toEqual([50, 50, 1500, 60_000]);
    expect(benchOptions(['127.0.0.1:1'], {}).options.cancelAfterMs).toBeUndefined();
  });
});

describe('--compare', () => {
  it('two servers in interleaved rounds: each figure and its ratio with min–max', async () => {
    const a = await startFixture('bench-peers.mjs', ['v1-stateless', tallyPath()]);
    const b = await startFixture('bench-peers.mjs', ['v2', tallyPath()]);
    try {
      const run = await benchJson([a.url, '--compare', b.url, '--repeats', '2', '--tool', 'tally', '--args', '{"text":"x"}', '--duration', '0.5s', '--warmup', '0s', '--connections', '2']);
      expect(run.code, run.stderr).toBe(0);
      const c = run.json!;
      expect(c.repeats).toBe(2);
      expect(c.rounds).toHaveLength(2);
      expect(c.rounds[0].a.target).toBe(a.url);
      expect(c.rounds[0].b.target).toBe(b.url);
      const r = c.ratios.requestsPerSecond;
      expect(r.min).toBeLessThanOrEqual(r.median);
      expect(r.median).toBeLessThanOrEqual(r.max);
      const expected = c.rounds.map((x: any) => x.b.requestsPerSecond / x.a.requestsPerSecond);
      expect(r.min).toBeCloseTo(Math.min(...expected), 2);
      expect(r.max).toBeCloseTo(Math.max(...expected), 2);
      expect(c.ratios.p50Ms.median).toBeGreaterThan(0);
    } finally {
      await a.stop();
      await b.stop();
    }
  });

  it('a second server that cannot take the load is refused before the first is loaded', async () => {
    // It was found only after a whole round against the first (by default 5 s warm-up and 30 s).
    const path = tallyPath();
    const a = await startFixture('bench-peers.mjs', ['v1-stateless', path]);
    const b = await serveCli(['--port', '0']); // the demo tools: no tally
    try {
      const run = await runCli(['bench', a.url, '--compare', b.url, '--tool', 'tally', '--args', '{"text":"x"}', '--duration', '3s', '--warmup', '0s', '--connections', '2']);
      expect(run.code).toBe(2);
      expect(run.stderr).toMatch(/has no tool "tally"/);
      expect(tally(path)).toBe(1); // the probe's one call, no round
    } finally {
      await a.stop();
      await b.stop();
    }
  });
});
