/**
 * Is `sluice bench` the bottleneck? The raw uWS JSON-RPC echo (bench/servers/uws-echo.mjs) pinned
 * to CPU 1; wrk, `sluice bench` and a minimal undici Pool closed loop (the other HTTP client
 * considered for the generator) each pinned to CPU 0 in turn, in interleaved rounds (the order
 * rotates every round), same body, same headers, same connections. Target: `sluice bench` ≥ 0.7×
 * wrk's requests/s and its p50 within 20 % of wrk's --latency p50, per round, min–max reported.
 *
 *   node dist/bench/loadgen.js [--rounds 5] [--seconds 5] [--connections 32]
 * Writes bench/results/loadgen.{md,json,svg}. No side effects on import except when run.
 */
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { requestBody, mcpHeaders, requestParams } from '../src/loadgen/wire.js';
import { benchArgs } from './lib/args.js';
import { collect, ensureTools, start, wrk } from './http/wrk.js';
import { cpuTimes, machineLine, pin, pinned } from './lib/machine.js';
import { stopServer } from './lib/process.js';
import { fixed, mdTable, toJson, writeResults } from './lib/report.js';
import { sluiceBench as runSluiceBench } from './lib/sluice-bench.js';
import { range } from './lib/stats.js';
import type { Range } from './lib/stats.js';
import { svgBars } from './lib/svg.js';

/** The load request: a 2026-07-28 tools/call echo, exactly what `sluice bench --era 2026-07-28` sends (id aside). */
function endpoint(): { body: string; headers: Record<string, string> } {
  const params = requestParams('tools/call', 'echo', { text: 'hello' });
  const negotiated = { era: 'modern' as const, version: '2026-07-28' };
  return {
    body: requestBody(1, 'tools/call', params, 'modern'),
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...mcpHeaders('tools/call', params, negotiated) },
  };
}

interface Figures { rps: number; p50ms: number; generatorBusy: number; errors: number; cpuUsPerRequest?: number }

/** `sluice bench` pinned to CPU 0, its JSON summary. */
async function sluiceBench(port: number, connections: number, seconds: number): Promise<Figures> {
  const cpu0 = pin ? cpuTimes(0) : [0, 1];
  const s = await runSluiceBench(0, `http://127.0.0.1:${port}/mcp`, ['--era', '2026-07-28', '--tool', 'echo', '--args', '{"text":"hello"}',
    '--connections', String(connections), '--duration', `${seconds}s`, '--warmup', '1s', '--threads', '1']);
  const cpu1 = pin ? cpuTimes(0) : [1, 1];
  return { rps: s.requestsPerSecond, p50ms: s.latencyMs.p50, generatorBusy: (cpu1[0]! - cpu0[0]!) / Math.max(1, cpu1[1]! - cpu0[1]!), errors: s.errors.total, cpuUsPerRequest: s.generator.cpuUsPerRequest };
}

/** The undici Pool contender, run in a child process pinned to CPU 0 (this file with --undici). */
async function undiciPool(port: number, connections: number, seconds: number): Promise<Figures> {
  const out = await collect(pinned(0, process.execPath, [fileURLToPath(import.meta.url), '--undici', String(port), '--connections', String(connections), '--seconds', String(seconds)]), 'undici pool');
  return JSON.parse(out) as Figures;
}

/** The undici Pool closed loop itself: `connections` loops, one request each at a time, 1 s warm-up. */
async function undiciLoop(port: number, connections: number, seconds: number): Promise<void> {
  const { body, headers } = endpoint();
  const pool = new Pool(`http://127.0.0.1:${port}`, { connections, pipelining: 1 });
  const latencies: number[] = [];
  let errors = 0;
  const warmEnd = performance.now() + 1000;
  const end = warmEnd + seconds * 1000;
  let measured = 0;
  await Promise.all(Array.from({ length: connections }, async () => {
    for (;;) {
      const t0 = performance.now();
      if (t0 >= end) return;
      const res = await pool.request({ path: '/mcp', method: 'POST', headers, body });
      const text = await res.body.text();
      const t1 = performance.now();
      const ok = res.statusCode === 200 && (JSON.parse(text) as { result?: unknown }).result !== undefined;
      if (t0 >= warmEnd && t1 <= end) {
        measured++;
        latencies.push(t1 - t0);
        if (!ok) errors++;
      }
    }
  }));
  await pool.close();
  latencies.sort((a, b) => a - b);
  process.stdout.write(JSON.stringify({ rps: measured / seconds, p50ms: latencies[Math.floor(latencies.length / 2)] ?? NaN, generatorBusy: NaN, errors }));
}

interface Round { order: string[]; wrk: Figures; sluice: Figures; undici: Figures }

async function main(): Promise<void> {
  const { rounds, seconds, connections, undici } = benchArgs('Usage: node dist/bench/loadgen.js [options]\n`sluice bench` against wrk and an undici Pool, each in turn on CPU 0, against the raw uWS echo on CPU 1.', {
    rounds: { type: 'number', integer: true, default: 5, help: 'interleaved rounds' },
    seconds: { type: 'number', default: 5, help: 'seconds per generator per round' },
    connections: { type: 'number', integer: true, default: 32, help: 'connections of every generator' },
    undici: { type: 'number', integer: true, help: 'internal: be the undici contender against this port' },
  });
  if (undici !== undefined) return undiciLoop(undici, connections, seconds);
  ensureTools();
  const { body, headers } = endpoint();
  const server = await start('uws-echo.mjs');
  const results: Round[] = [];
  try {
    const contenders: Record<string, () => Promise<Figures>> = {
      // wrk is the reference here: this file measures `sluice bench` against it.
      wrk: async () => {
        const r = await wrk(server.port, { path: '/mcp', method: 'POST', body, headers }, connections, seconds, server.pid);
        return { rps: r.rps, p50ms: r.p50ms, generatorBusy: r.generatorBusy, errors: r.non2xx };
      },
      sluice: () => sluiceBench(server.port, connections, seconds),
      undici: () => undiciPool(server.port, connections, seconds),
    };
    const names = Object.keys(contenders);
    for (let i = 0; i < rounds; i++) {
      const order = names.map((_, k) => names[(k + i) % names.length]!);
      const round = { order } as Round;
      for (const name of order) {
        (round as unknown as Record<string, Figures>)[name] = await contenders[name]!();
        process.stderr.write(`round ${i + 1}/${rounds} ${name}: ${fixed((round as unknown as Record<string, Figures>)[name]!.rps, 0)} req/s\n`);
      }
      results.push(round);
    }
  } finally {
    await stopServer(server);
  }
  const rpsRatio = range(results.map((r) => r.sluice.rps / r.wrk.rps));
  const p50Ratio = range(results.map((r) => r.sluice.p50ms / r.wrk.p50ms));
  const undiciRatio = range(results.map((r) => r.undici.rps / r.wrk.rps));
  const fig = (name: 'wrk' | 'sluice' | 'undici', key: keyof Figures): Range => range(results.map((r) => r[name][key] ?? Number.NaN));
  const span = (r: Range, d: number): string => `${fixed(r.median, d)} (${fixed(r.min, d)}–${fixed(r.max, d)})`;
  const rpsMet = rpsRatio.min >= 0.7;
  const p50Met = Math.abs(p50Ratio.min - 1) <= 0.2 && Math.abs(p50Ratio.max - 1) <= 0.2;
  const md = [
    '# sluice bench vs wrk against the raw uWS echo',
    '',
    `${machineLine()}`,
    '',
    `Server: bench/servers/uws-echo.mjs pinned to CPU 1. Each generator pinned to CPU 0 in turn: wrk (\`-t1 -c${connections} --latency\`), \`sluice bench --era 2026-07-28 --threads 1 --connections ${connections} --warmup 1s\`, and an undici Pool closed loop (${connections} connections, pipelining 1, 1 s warm-up). Same body and headers (a 2026-07-28 tools/call echo). ${rounds} interleaved rounds of ${seconds} s, order rotating each round; median (min–max) over the rounds.`,
    '',
    `sluice bench's own CPU per request (all its threads, start-up included): ${span(range(results.map((r) => r.sluice.cpuUsPerRequest ?? NaN)), 1)} µs. "CPU 0 busy" is the whole core's busy share (other processes on the box included).`,
    '',
    ...mdTable(['generator', 'req/s', 'p50 ms', 'CPU 0 busy'], 'lrrr', [
      ['wrk', span(fig('wrk', 'rps'), 0), span(fig('wrk', 'p50ms'), 3), span(fig('wrk', 'generatorBusy'), 2)],
      ['sluice bench (raw sockets)', span(fig('sluice', 'rps'), 0), span(fig('sluice', 'p50ms'), 3), span(fig('sluice', 'generatorBusy'), 2)],
      ['undici Pool', span(fig('undici', 'rps'), 0), span(fig('undici', 'p50ms'), 3), '–'],
    ]),
    '',
    ...mdTable(['target', 'wanted', 'measured: median (min–max) of the per-round ratios', 'met?'], 'llll', [
      ['sluice bench req/s ÷ wrk req/s', '≥ 0.70 every round', span(rpsRatio, 2), rpsMet ? 'met' : '**missed**'],
      ['sluice bench p50 ÷ wrk p50', '0.80–1.20 every round', span(p50Ratio, 2), p50Met ? 'met' : '**missed**'],
      ['undici Pool req/s ÷ wrk req/s (why raw sockets)', 'info', span(undiciRatio, 2), 'info'],
    ]),
    '',
    'Run: `npm run build && node dist/bench/loadgen.js` (options: `--rounds`, `--seconds`, `--connections`).',
    '',
  ].join('\n');
  const svg = svgBars(`Against the raw uWS echo, ${connections} connections, generator on one core (median req/s)`, [
    { label: 'wrk', value: fig('wrk', 'rps').median },
    { label: 'sluice bench (raw sockets)', value: fig('sluice', 'rps').median },
    { label: 'undici Pool', value: fig('undici', 'rps').median },
  ], 'req/s');
  const json = { connections, seconds, rounds: results, ratios: { rps: rpsRatio, p50: p50Ratio, undiciRps: undiciRatio }, met: { rps: rpsMet, p50: p50Met } };
  const written = writeResults([['loadgen.md', md], ['loadgen.json', toJson(json)], ['loadgen.svg', svg]]);
  process.stdout.write(`${md}\nwrote ${written.join(', ')}\n`);
}

if (process.argv[1] === fileURLToPath(import.meta.url)) await main();
