/**
 * What OpenTelemetry costs S1 (the legacy echo, one HTTP worker), in one interleaved run on one
 * pinned core (server on CPU 1, wrk on CPU 0):
 * - absent: `@opentelemetry/api` not installed (the same build, run from a copy of dist/ and
 *   bench/servers/ beside a node_modules that links every package but `@opentelemetry/*`);
 * - API only: the package installed, no SDK registered (the default for most users);
 * - SDK: the trace SDK registered by the `tracing` module (bench/servers/otel-noop-setup.mjs): what
 *   NodeSDK sets up for traces (NodeTracerProvider, BatchSpanProcessor), every request a real
 *   span, the exporter dropping them; `--processor simple`: a SimpleSpanProcessor instead.
 * Each of API only and SDK runs between two absent runs and is compared with their mean (this VM's
 * speed drifts within a minute). Targets: API only ≥ 0.98 of absent, SDK ≥ 0.80.
 * The floor, beside them in the same rep: the raw node:http echo (`node-echo.mjs`) with the same SDK
 * and one SERVER span per request with Sluice's attributes, bracketed by the raw echo without it.
 * Its ratio is what the SDK leaves of a server that does nothing else, and the CPU µs per request
 * each pair adds says how much of Sluice's SDK cost is the SDK's own. Writes bench/results/otel-ab.md.
 *
 *   npm run build && node dist/bench/otel-ab.js [--reps 3] [--seconds 3] [--connections 32] [--processor batch|simple] [--out NAME]
 */
import { cpSync, mkdirSync, mkdtempSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { benchArgs } from './lib/args.js';
import { machineLine } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import type { Running } from './lib/process.js';
import { kRoot, writeResults } from './lib/report.js';
import { median } from './lib/stats.js';
import { legacyEcho } from './http/contenders.js';
import { cpuPerRequest, ensureTools, kServers, wrk } from './http/wrk.js';
import { bracketed } from './lib/bracket.js';
import type { Ratio, Sample } from './lib/bracket.js';

const { reps, seconds, connections, processor, out } = benchArgs('Usage: node dist/bench/otel-ab.js [options]\nS1\'s legacy echo with OpenTelemetry absent, the API only, and an SDK dropping its spans; the raw echo\'s floor beside it.', {
  reps: { type: 'number', integer: true, default: 3, help: 'rounds of every run' },
  seconds: { type: 'number', default: 3, help: 'seconds per wrk run' },
  connections: { type: 'number', integer: true, default: 32, help: 'wrk connections' },
  processor: { type: 'string', default: 'batch', choices: ['batch', 'simple'], help: 'the SDK\'s span processor' },
  out: { type: 'string', default: 'otel-ab', help: 'results under bench/results/NAME.{md,json,svg}' },
});
const kTargets = { api: 0.98, sdk: 0.8 } as const;

/** A tree where `@opentelemetry/api` cannot be found: dist/ and bench/servers/ copied, every other package linked. */
function treeWithoutOtel(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-otel-absent-'));
  cpSync(join(kRoot, 'dist'), join(dir, 'dist'), { recursive: true });
  cpSync(kServers, join(dir, 'bench', 'servers'), { recursive: true });
  mkdirSync(join(dir, 'node_modules'));
  for (const name of readdirSync(join(kRoot, 'node_modules'))) {
    if (name === '@opentelemetry' || name === '.bin') continue;
    symlinkSync(join(kRoot, 'node_modules', name), join(dir, 'node_modules', name));
  }
  return dir;
}

const echo = legacyEcho();
ensureTools();
const absentTree = treeWithoutOtel();
const sdkSetup = `${pathToFileURL(join(kServers, 'otel-noop-setup.mjs')).href}?processor=${processor}`;
const kRuns = [
  { key: 'absent', label: 'OpenTelemetry absent', args: [join(absentTree, 'bench', 'servers', 'sluice-echo.mjs'), 'nosessions', '1'] },
  { key: 'api', label: 'API only, no SDK', args: [join(kServers, 'sluice-echo.mjs'), 'nosessions', '1'] },
  { key: 'sdk', label: `SDK (${processor === 'batch' ? 'BatchSpanProcessor' : 'SimpleSpanProcessor'}), spans dropped`, args: [join(kServers, 'sluice-echo.mjs'), 'nosessions', '1', sdkSetup] },
  { key: 'raw', label: 'floor: raw node:http echo', args: [join(kServers, 'node-echo.mjs'), '1'] },
  { key: 'rawSdk', label: 'floor: raw node:http echo, one span per request (the same SDK)', args: [join(kServers, 'node-echo.mjs'), '1', sdkSetup] },
] as const;
type Key = (typeof kRuns)[number]['key'];
const rps: Record<Key, number[]> = { absent: [], api: [], sdk: [], raw: [], rawSdk: [] };
const cpu: Record<Key, number[]> = { absent: [], api: [], sdk: [], raw: [], rawSdk: [] };
/** Per rep: api, sdk or rawSdk ÷ the mean of the two absent (raw) runs beside it (req/s; CPU per request the other way up). */
const ratios: Record<'api' | 'sdk' | 'rawSdk', Ratio[]> = { api: [], sdk: [], rawSdk: [] };
/** Per rep: CPU µs per request that the SDK adds, Sluice (sdk − absent) and the floor (rawSdk − raw), each to its own bracket's mean. */
const added: Record<'sdk' | 'rawSdk', number[]> = { sdk: [], rawSdk: [] };
const servers = new Map<Key, Running>();
async function measure(rep: number, key: Key): Promise<Sample> {
  const r = kRuns.find((x) => x.key === key)!;
  const s = servers.get(key)!;
  const w = await wrk(s.port, echo, connections, seconds, s.pid);
  if (w.non2xx > 0) throw new Error(`${r.label}: ${w.non2xx} non-2xx responses`);
  const perRequest = cpuPerRequest(w);
  rps[key].push(w.rps);
  cpu[key].push(perRequest);
  process.stderr.write(`rep ${rep + 1} ${r.label}: ${w.rps.toFixed(0)} req/s, ${perRequest.toFixed(1)} CPU µs/req\n`);
  return { rps: w.rps, cpu: perRequest };
}
/** The CPU µs per request `key`'s latest run adds over the mean of the runs beside it (`ratio.cpu` is that mean ÷ the run). */
function cpuAdded(key: Key, ratio: Ratio): number {
  const it = cpu[key].at(-1)!;
  return it - ratio.cpu * it;
}
try {
  for (const r of kRuns) servers.set(r.key, await startServer(r.args, 1));
  for (const r of kRuns) await wrk(servers.get(r.key)!.port, echo, connections, 2, servers.get(r.key)!.pid); // warm-up (JIT)
  // absent, api, absent, sdk, absent (api and sdk swap places every other rep).
  for (let rep = 0; rep < reps; rep++) {
    const order = rep % 2 === 0 ? ['api', 'sdk'] as const : ['sdk', 'api'] as const;
    for (const [key, ratio] of await bracketed('absent' as const, order, (k) => measure(rep, k))) {
      ratios[key].push(ratio);
      if (key === 'sdk') added.sdk.push(cpuAdded(key, ratio));
    }
    const [[, floor]] = await bracketed('raw' as const, ['rawSdk'] as const, (k) => measure(rep, k));
    ratios.rawSdk.push(floor!);
    added.rawSdk.push(cpuAdded('rawSdk', floor!));
  }
} finally {
  for (const s of servers.values()) await stopServer(s);
  rmSync(absentTree, { recursive: true, force: true });
}

const f = (x: number, d = 3): string => x.toFixed(d);
/** A ratio's row: against its target ('api', 'sdk') or, for the floor, none. */
const ratioRow = (key: 'api' | 'sdk' | 'rawSdk'): string => {
  const byRps = ratios[key].map((x) => x.rps);
  const m = median(byRps);
  const target = key === 'rawSdk' ? undefined : kTargets[key];
  const status = target === undefined ? '—' : m >= target ? 'met' : 'missed';
  return `| ${kRuns.find((r) => r.key === key)!.label} ÷ ${key === 'rawSdk' ? 'raw echo' : 'absent'} | ${target === undefined ? '(the floor)' : `≥ ${target}`} | ${byRps.map((x) => f(x)).join(', ')} | ${f(Math.min(...byRps))}–${f(Math.max(...byRps))} | ${f(m)} | ${f(median(ratios[key].map((x) => x.cpu)))} | ${status} |`;
};
const addedRow = (key: 'sdk' | 'rawSdk', label: string): string => `| ${label} | ${added[key].map((x) => f(x, 1)).join(', ')} | ${f(median(added[key]), 1)} |`;
const lines = [
  '# What OpenTelemetry costs S1', '',
  `Sluice's legacy echo, one HTTP worker (\`sluice-echo.mjs nosessions 1\`), server pinned to CPU 1 and wrk -t1 to CPU 0, c = ${connections}, ${seconds} s per run, ${reps} reps; each rep runs absent, API only, absent, SDK, absent (the middle two swap every other rep), then, for the floor, raw echo, raw echo with a span, raw echo; each ratio is to the mean of the two runs without OpenTelemetry beside it. ${machineLine()}`, '',
  // NODE_OPTIONS reaches the servers too (an A/B of a Node flag, e.g. --experimental-async-context-frame).
  `Command: \`${process.env.NODE_OPTIONS ? `NODE_OPTIONS='${process.env.NODE_OPTIONS}' ` : ''}node dist/bench/otel-ab.js --reps ${reps} --seconds ${seconds} --connections ${connections} --processor ${processor}${out === 'otel-ab' ? '' : ` --out ${out}`}\``, '',
  '| server | req/s per run, in order | server CPU µs/req per run |', '|---|---|---|',
  ...kRuns.map((r) => `| ${r.label} | ${rps[r.key].map((x) => x.toFixed(0)).join(', ')} | ${cpu[r.key].map((x) => x.toFixed(1)).join(', ')} |`),
  '', '| ratio | target | req/s ratio per rep | min–max | median | CPU/req ratio median | status |', '|---|---|---|---|---:|---:|---|',
  ratioRow('api'), ratioRow('sdk'), ratioRow('rawSdk'), '',
  'CPU µs per request the SDK adds, per rep (each run ÷ the two runs without the SDK beside it):', '',
  '| server | per rep | median |', '|---|---|---:|',
  addedRow('sdk', 'Sluice (SDK − absent)'), addedRow('rawSdk', 'floor (raw echo with a span − raw echo)'), '',
];
console.log(writeResults([[`${out}.md`, lines.join('\n')]]).join('\n'));
console.log(lines.join('\n'));
