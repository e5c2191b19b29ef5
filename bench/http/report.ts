/**
 * The HTTP benchmark's report: ratios and performance targets (docs/benchmarks.md) from the measured scenarios, then
 * bench/results/<name>-latest.{json,md} and an SVG per scenario (the full run's report is
 * latest.{md,json} with http-s*.svg). No side effects on import.
 */
import { existsSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { machineLine, pin } from '../lib/machine.js';
import { fixed as f, kResults, targetTable, toJson, writeResults } from '../lib/report.js';
import type { Target } from '../lib/report.js';
import { median, pct, range } from '../lib/stats.js';
import type { Range } from '../lib/stats.js';
import { svgBars } from '../lib/svg.js';
import type { Latency } from './cancel.js';
import { contenders, kAsyncLabel, kCeilingModernLabel, kFloorLabel, kModernAsyncLabel, kModernLabel, kNode22Label, kSluiceLabel } from './contenders.js';
import type { CpuRow } from './cpu-tools.js';
import { kLifecycleLoops } from './lifecycle.js';
import type { Lifecycle } from './lifecycle.js';
import type { Soak } from './open-loop.js';
import type { Row, TwoWorkersRun } from './throughput.js';
import type { ValidationRow } from './validation.js';

export interface Options {
  /** `--smoke`: S1 and S4 briefly, for CI. */
  smoke: boolean;
  /** `--quick`: a short full run to check the harness itself (not for figures). */
  quick: boolean;
  /** `--only S1[,S4…]`: just these scenarios. */
  only: Set<string> | undefined;
}

export function runs(o: Options, scenario: string): boolean {
  return o.only === undefined || o.only.has(scenario);
}

/** What the scenarios measured. */
export interface Measured {
  seconds: number;
  reps: number;
  started: number;
  rows: Row[];
  latency: Latency[];
  lifecycle: Lifecycle[];
  cpu: CpuRow[];
  peak: number;
  soak: Soak[];
  twoWorkers: TwoWorkersRun[];
  validation: ValidationRow[];
}

/** Ratios, targets and the report object; writes the files and returns the report and its Markdown. */
export function writeReport(o: Options, m: Measured) {
  const { smoke, quick, only } = o;
  const { seconds, reps, started, rows, latency, lifecycle, cpu, peak, soak, twoWorkers, validation } = m;
  const byName = (label: string) => contenders.find((x) => x.label === label)!.label;
  const ceiling = contenders[0].label;
  const sluice = kSluiceLabel;
  const ratios: Record<string, Range> = {};
  const ratio = (name: string, num: string, den: string, c: number) => {
    const a = rows.find((r) => r.scenario === 'S1' && r.label === num && r.connections === c);
    const b = rows.find((r) => r.scenario === 'S1' && r.label === den && r.connections === c);
    if (a === undefined || b === undefined) return;
    const each = a.runs.map((r, i) => r.rps / (b.runs[i]?.rps ?? NaN));
    ratios[name] = range(each);
  };
  for (const c of smoke ? [32] : [1, 32, 64]) {
    ratio(`Sluice / raw uWS ceiling, c=${c}`, sluice, ceiling, c);
    ratio(`Sluice / SDK v1 stateful, c=${c}`, sluice, byName('official SDK v1, stateful'), c);
    ratio(`Sluice / SDK v1 stateless, c=${c}`, sluice, byName('official SDK v1, stateless'), c);
    ratio(`hardened uWS floor / raw uWS ceiling, c=${c}`, kFloorLabel, ceiling, c);
    ratio(`Sluice / hardened uWS floor, c=${c}`, sluice, kFloorLabel, c);
    ratio(`raw uWS ceiling: 2026-07-28 request / legacy request, c=${c}`, kCeilingModernLabel, ceiling, c);
    ratio(`Sluice 2026-07-28 / raw uWS ceiling on the 2026-07-28 request, c=${c}`, kModernLabel, kCeilingModernLabel, c);
    // What any server on uWS could reach against the SDK on this machine: the raw echo itself.
    ratio(`raw uWS ceiling / SDK v1 stateful, c=${c}`, ceiling, byName('official SDK v1, stateful'), c);
    ratio(`raw uWS ceiling / SDK v1 stateless, c=${c}`, ceiling, byName('official SDK v1, stateless'), c);
    ratio(`Sluice 2026-07-28 / SDK v2 handler 2026-07-28, c=${c}`, kModernLabel, byName('official SDK v2 handler, 2026-07-28'), c);
    ratio(`Sluice 2026-07-28 / Sluice 2025-11-25, c=${c}`, kModernLabel, sluice, c);
    ratio(`Sluice async echo / sync echo, 2025-11-25, c=${c}`, kAsyncLabel, sluice, c);
    ratio(`Sluice async echo / sync echo, 2026-07-28, c=${c}`, kModernAsyncLabel, kModernLabel, c);
    // Node 22 over node:http (2 workers, one core) against the Node 20 raw uWS ceiling and SDK v1, same run.
    ratio(`Sluice Node 22 node:http ×2 / raw uWS ceiling (Node 20), c=${c}`, kNode22Label, ceiling, c);
    ratio(`Sluice Node 22 node:http ×2 / SDK v1 stateful, c=${c}`, kNode22Label, byName('official SDK v1, stateful'), c);
    ratio(`Sluice Node 22 node:http ×2 / Sluice Node 20 uWS ×1, c=${c}`, kNode22Label, sluice, c);
  }
  const registry = existsSync(join(kResults, 'registry-latest.json'))
    ? JSON.parse(readFileSync(join(kResults, 'registry-latest.json'), 'utf8')) as { timestamp: string; targets: Target[] }
    : undefined;
  const cancel = latency.map((l) => ({ mode: l.mode, n: l.samples.length, p50ms: pct(l.samples, 50), p99ms: pct(l.samples, 99), p999ms: pct(l.samples, 99.9), roundP50ms: range(l.rounds.filter((r) => r.length > 0).map((r) => pct(r, 50))) }));
  const cpuTools = cpu.map((c) => ({ us: c.us, mode: c.mode, p50ms: median(c.p50ms), p99ms: median(c.p99ms), rps: range(c.rps), loopDelayP50ms: median(c.loopP50ms), loopDelayP99ms: median(c.loopP99ms), loopDelayMaxMs: Math.max(...c.loopMaxMs) }));
  const dispatch = range(cpu.find((c) => c.us === 50 && c.mode === 'pool')?.p50ms.map((p, i) => (p - (cpu.find((x) => x.us === 50 && x.mode === 'inline')?.p50ms[i] ?? NaN)) * 1000) ?? [NaN]);
  // Issue 17's targets (performance round 2), from this run's ratios; the registry's come from bench:registry.
  const round2: Target[] = [];
  // The performance targets (docs/benchmarks.md) measured by this script (the registry ones come from bench:registry).
  const targets: Target[] = [];
  const ratioTarget = (name: string, key: string, floor: number, into: Target[] = targets) => {
    const r = ratios[key];
    if (r !== undefined) into.push({ name, target: `≥ ${floor}`, actual: `${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`, met: r.median >= floor });
  };
  // Beside a target, the same ratio for what bounds it (a raw server measured in this run): a target
  // above that bound cannot be met by any server doing the same work here.
  const limit = (name: string, key: string, floor: number) => {
    const r = ratios[key];
    if (r !== undefined) round2.push({ name, target: `the most ≥ ${floor} can be`, actual: `${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`, met: r.median >= floor, status: r.median >= floor ? 'reachable' : '**out of reach**' });
  };
  for (const c of smoke ? [32] : [32, 64]) {
    ratioTarget(`S1 echo ÷ raw uWS ceiling, legacy, c=${c}`, `Sluice / raw uWS ceiling, c=${c}`, 0.75, round2);
    limit(`info: hardened uWS floor ÷ raw uWS ceiling, c=${c}`, `hardened uWS floor / raw uWS ceiling, c=${c}`, 0.75);
  }
  for (const c of smoke ? [32] : [32, 64]) {
    ratioTarget(`S1 echo, 2026-07-28 ÷ legacy, c=${c}`, `Sluice 2026-07-28 / Sluice 2025-11-25, c=${c}`, 0.97, round2);
    limit(`info: raw uWS echo, 2026-07-28 request ÷ legacy request, c=${c}`, `raw uWS ceiling: 2026-07-28 request / legacy request, c=${c}`, 0.97);
  }
  for (const c of smoke ? [32] : [32, 64]) {
    ratioTarget(`S1 async echo ÷ sync echo, 2025-11-25, c=${c}`, `Sluice async echo / sync echo, 2025-11-25, c=${c}`, 0.95, round2);
    ratioTarget(`S1 async echo ÷ sync echo, 2026-07-28, c=${c}`, `Sluice async echo / sync echo, 2026-07-28, c=${c}`, 0.95, round2);
  }
  if (!smoke) {
    ratioTarget('S1 echo ÷ SDK v1 stateful, c=64', 'Sluice / SDK v1 stateful, c=64', 20, round2);
    ratioTarget('S1 echo ÷ SDK v1 stateless, c=64', 'Sluice / SDK v1 stateless, c=64', 50, round2);
    limit('info: raw uWS ceiling ÷ SDK v1 stateful, c=64', 'raw uWS ceiling / SDK v1 stateful, c=64', 20);
    limit('info: raw uWS ceiling ÷ SDK v1 stateless, c=64', 'raw uWS ceiling / SDK v1 stateless, c=64', 50);
  }
  for (const c of smoke ? [32] : [32, 64]) {
    ratioTarget(`tools/call echo ÷ raw uWS ceiling, c=${c}`, `Sluice / raw uWS ceiling, c=${c}`, 0.6);
    ratioTarget(`tools/call echo ÷ SDK v1 stateful, c=${c}`, `Sluice / SDK v1 stateful, c=${c}`, 10);
    ratioTarget(`tools/call echo ÷ SDK v1 stateless, c=${c}`, `Sluice / SDK v1 stateless, c=${c}`, 20);
  }
  if (cancel[0] !== undefined) targets.push({ name: 'HTTP cancel POST → tool observed, p50', target: '≤ 1 ms', actual: `${cancel[0].p50ms.toFixed(3)} ms`, met: cancel[0].p50ms <= 1 });
  if (cancel[1] !== undefined) targets.push({ name: 'modern disconnect → tool observed, p50', target: '≤ 2 ms', actual: `${cancel[1].p50ms.toFixed(3)} ms`, met: cancel[1].p50ms <= 2 });
  if (cpu.length > 0) targets.push({ name: 'pool dispatch overhead, p50', target: '≤ 80 µs', actual: `${dispatch.median.toFixed(0)} µs (${dispatch.min.toFixed(0)}–${dispatch.max.toFixed(0)})`, met: dispatch.median <= 80 });
  // "Flat" read as: no growth. A falling RSS (the heap settling after the warm-up) is flat enough.
  const soakSlope = soak.length === 0 ? NaN : Math.max(...soak.map((x) => x.rssSlopeMbPerMin));
  if (soak.length > 0) targets.push({ name: 'RSS flat in 60 s soaks at 50 % and 80 % (largest RSS slope; no failed requests)', target: '≤ +1 MB/min', actual: `${soakSlope.toFixed(2)} MB/min, ${soak.reduce((a, x) => a + x.failed, 0)} failed`, met: soakSlope <= 1 && soak.every((x) => x.failed === 0) });
  const registryTargets = smoke || registry === undefined ? [] : registry.targets.map((t) => ({ ...t, name: `${t.name} (bench:registry)` }));
  const report = {
    date: new Date().toISOString(),
    mode: `${smoke ? 'smoke' : quick ? 'quick' : 'full'}${only === undefined ? '' : `, only ${[...only].join(',')}`}`,
    machine: machineLine(),
    pinned: pin,
    command: smoke ? 'npm run bench:smoke' : only !== undefined ? `npm run build && node dist/bench/http.js${quick ? ' --quick' : ''} --only ${[...only].join(',')}` : 'npm run bench',
    seconds, reps,
    round2,
    targets,
    registryTargets,
    ratios,
    rows: rows.map((r) => ({
      scenario: r.scenario, label: r.label, connections: r.connections,
      rps: median(r.runs.map((x) => x.rps)), rpsMin: Math.min(...r.runs.map((x) => x.rps)), rpsMax: Math.max(...r.runs.map((x) => x.rps)),
      p50ms: median(r.runs.map((x) => x.p50ms)), p99ms: median(r.runs.map((x) => x.p99ms)),
      requestsPerServerCpuSecond: median(r.runs.map((x) => x.requests / Math.max(1e-9, x.serverCpu))),
      generatorBusy: Math.max(...r.runs.map((x) => x.generatorBusy)),
    })),
    cancel,
    lifecycle: lifecycle.map((l) => ({ label: l.label, lifecyclesPerSecond: median(l.lifecyclesPerSecond), min: Math.min(...l.lifecyclesPerSecond), max: Math.max(...l.lifecyclesPerSecond), p50ms: median(l.p50ms), p99ms: median(l.p99ms), errors: l.errors, generatorCpuPercent: Math.max(...l.generatorCpuPercent) })),
    cpuTools,
    poolDispatchUs: cpu.length === 0 ? undefined : dispatch,
    soak,
    twoWorkers: twoWorkers.length === 0 ? undefined : {
      rps: range(twoWorkers.map((r) => r.run.rps)), p99ms: median(twoWorkers.map((r) => r.run.p99ms)),
      perThread: twoWorkers.map((r) => r.perThread),
      // Share of the busier thread per run (0.5 = even).
      busierShare: range(twoWorkers.map((r) => (r.perThread[0] ?? 0) / Math.max(1, r.perThread.reduce((a, b) => a + b, 0)))),
    },
    validation: validation.map((v) => ({ properties: v.properties, checkedRps: range(v.checked), openRps: range(v.open), ratio: v.ratio, costUs: v.costUs, checkNs: v.checkNs })),
    registry,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  // SVGs are <base>-s<n>.svg; the full run's report is latest.{md,json}, the others' <base>-latest.{md,json}.
  const base = smoke ? 'smoke' : only !== undefined ? `only-${[...only].join('-')}${quick ? '-quick' : ''}` : quick ? 'quick' : 'http';
  const name = smoke || quick || only !== undefined ? `${base}-latest` : 'latest';
  const lines = [
    `# HTTP benchmark (${report.mode})`, '',
    `- Date: ${report.date}`, `- Machine: ${report.machine}; server pinned to CPU 1, load generator to CPU 0: ${pin}`,
    `- Command: \`${report.command}\` (${seconds} s per run after a 1 s warm-up, ${reps} interleaved repeat(s)); run time ${report.durationSeconds} s`,
    ...(!smoke && registry !== undefined ? [`- S5 and the in-process cancel latencies: \`npm run bench:registry\` (${registry.timestamp}, run just before by \`npm run bench\`), see [registry-latest.md](registry-latest.md)`] : []),
    ...(round2.length === 0 ? [] : ['', '## Issue 17 targets (performance round 2)', '', ...targetTable(round2)]),
    ...(registryTargets.length === 0 ? [] : ['', `## Registry targets (\`npm run bench:registry\`, ${registry!.timestamp})`, '', ...targetTable(registryTargets)]),
    '', '## performance targets (docs/benchmarks.md)', '',
    ...targetTable(targets),
    '', '## Ratios (same run; median, min–max over repeats)', '',
    '| ratio | median | min–max |', '|---|---:|---:|',
    ...Object.entries(ratios).map(([k, v]) => `| ${k} | ${f(v.median, 2)} | ${f(v.min, 2)}–${f(v.max, 2)} |`),
    '', '## Throughput (S0 calibration, S1 tools/call echo)', '',
    '| scenario | server | c | req/s (median) | min–max | p50 ms | p99 ms | req per server CPU-s | generator CPU |', '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.rows.map((r) => `| ${r.scenario} | ${r.label} | ${r.connections} | ${f(r.rps, 0)} | ${f(r.rpsMin, 0)}–${f(r.rpsMax, 0)} | ${f(r.p50ms, 2)} | ${f(r.p99ms, 2)} | ${f(r.requestsPerServerCpuSecond, 0)} | ${(r.generatorBusy * 100).toFixed(0)}%${r.generatorBusy > 0.9 ? ' (lower bound)' : ''} |`),
    '', '"req per server CPU-s" counts the server process\'s user + system time (all its threads). A run whose generator core was above 90 % busy is marked a lower bound: the server may have had more to give.',
    ...(cancel.length === 0 ? [] : [
      '', '## Cancel → observed over HTTP (S4)', '',
      `| mode | n | p50 ms | p99 ms | p99.9 ms | p50 per round (${reps}), min–max |`, '|---|---:|---:|---:|---:|---:|',
      ...cancel.map((c) => `| ${c.mode} | ${c.n} | ${f(c.p50ms, 3)} | ${f(c.p99ms, 3)} | ${f(c.p999ms, 3)} | ${f(c.roundP50ms.min, 3)}–${f(c.roundP50ms.max, 3)} |`),
      '', 'Percentiles pool every round. With a few hundred samples, p99.9 is close to the maximum. Polling and `ctx.signal` latencies inside one process are measured by `npm run bench:registry` (S5 section of registry-latest.md).',
    ]),
    ...(report.validation.length === 0 ? [] : [
      '', '## Argument validation on the tool path (S8): full schema vs `{ type: \'object\' }`, same arguments, c=32', '',
      '| properties | checked tool req/s | open tool req/s | checked ÷ open | cost µs/request (1/checked − 1/open) | the check alone, ns/call |', '|---:|---:|---:|---:|---:|---:|',
      ...report.validation.map((v) => `| ${v.properties} | ${f(v.checkedRps.median, 0)} (${f(v.checkedRps.min, 0)}–${f(v.checkedRps.max, 0)}) | ${f(v.openRps.median, 0)} (${f(v.openRps.min, 0)}–${f(v.openRps.max, 0)}) | ${f(v.ratio.median, 3)} (${f(v.ratio.min, 3)}–${f(v.ratio.max, 3)}) | ${f(v.costUs.median, 2)} (${f(v.costUs.min, 2)}–${f(v.costUs.max, 2)}) | ${f(v.checkNs, 0)} |`),
      '', 'One server (1 HTTP worker, CPU 1) serves both tools of each pair; their requests carry the very same arguments and get the same answer, so the bodies, JSON parsing and replies are equal and only the argument check differs (Ajv, compiled once by defineTool). The pairs are interleaved and their order alternates per repeat. The last column is `checkArguments` alone, timed in the benchmark process (median of 7 × 200 000 calls): the floor of the per-request cost. A negative cost is noise.',
    ]),
    ...(lifecycle.length === 0 ? [] : [
      '', `## Session per call (S2): initialize → initialized → tools/call → DELETE, ${kLifecycleLoops} loops`, '',
      '| server | lifecycles/s (median) | min–max | p50 ms | p99 ms | errors | generator CPU |', '|---|---:|---:|---:|---:|---:|---:|',
      ...report.lifecycle.map((l) => `| ${l.label} | ${f(l.lifecyclesPerSecond, 0)} | ${f(l.min, 0)}–${f(l.max, 0)} | ${f(l.p50ms, 2)} | ${f(l.p99ms, 2)} | ${l.errors} | ${f(l.generatorCpuPercent, 0)}%${l.generatorCpuPercent >= 90 ? ' (lower bound)' : ''} |`),
      '', `Generated by \`sluice bench --era legacy --session-per-call --connections ${kLifecycleLoops}\` pinned to CPU 0, after a 1 s warm-up: each lifecycle is timed from its initialize to its DELETE's answer; a lifecycle with a failed step counts as one error. "generator CPU" is the largest of the repeats (percent of one core); at 90 % or more the generator may be what limits the rate.`,
    ]),
    ...(cpuTools.length === 0 ? [] : [
      '', '## CPU tools inline vs pool (S3): latency at c=1, throughput and HTTP-worker loop delay at c=8 (one pool thread)', '',
      '| tool CPU | mode | p50 ms (c=1) | p99 ms (c=1) | req/s (c=8), min–max | loop delay p50 / p99 / max ms (c=8) |', '|---:|---|---:|---:|---:|---:|',
      ...cpuTools.map((c) => `| ${c.us} µs | ${c.mode} | ${f(c.p50ms, 3)} | ${f(c.p99ms, 3)} | ${f(c.rps.median, 0)} (${f(c.rps.min, 0)}–${f(c.rps.max, 0)}) | ${f(c.loopDelayP50ms, 2)} / ${f(c.loopDelayP99ms, 2)} / ${f(c.loopDelayMaxMs, 2)} |`),
      '', `Latency at c=1 is generated by \`sluice bench --connections 1\` (after a 1 s warm-up; from each request's send to its answer), req/s and loop delay at c=8 by wrk. Pool dispatch overhead at 50 µs (p50 at c=1, pool − inline, per repeat): ${f(dispatch.median, 0)} µs (${f(dispatch.min, 0)}–${f(dispatch.max, 0)}). Loop delay is the HTTP worker's \`monitorEventLoopDelay\` (1 ms resolution, so about 1 ms is its floor) during the c=8 run: the wait every other request on that worker would see. The server process is pinned to one core, so the pool thread shares it with the HTTP worker: the pool buys responsiveness here, not throughput.`,
    ]),
    ...(soak.length === 0 ? [] : [
      '', `## Open-loop soak (S6): h2load --rps at 50 % and 80 % of the S1 peak (${f(peak, 0)} req/s), ${quick ? 5 : 60} s each`, '',
      '| load | req/s offered | mean ms | max ms | failed | RSS start → end MB | RSS slope MB/min |', '|---:|---:|---:|---:|---:|---:|---:|',
      ...soak.map((x) => `| ${x.share * 100} % | ${x.rate} | ${f(x.meanMs, 2)} | ${f(x.maxMs, 2)} | ${x.failed} | ${f(x.rssStartMb, 1)} → ${f(x.rssEndMb, 1)} | ${f(x.rssSlopeMbPerMin, 2)} |`),
      '', 'One 60 s run per load (a soak, not repeated). The slope is a least-squares fit over one RSS sample per second.',
    ]),
    ...(report.twoWorkers === undefined ? [] : [
      '', '## Two HTTP workers on both cores (S7): wrk -t2 -c64, nothing pinned', '',
      `Throughput ${f(report.twoWorkers.rps.median, 0)} req/s (${f(report.twoWorkers.rps.min, 0)}–${f(report.twoWorkers.rps.max, 0)}), p99 ${f(report.twoWorkers.p99ms, 2)} ms. Requests per worker thread, per run (from \`sluice_thread_requests_total\` on /metrics; wrk counted ${twoWorkers.map((r) => r.run.requests).join('; ')}): ${report.twoWorkers.perThread.map((p) => p.join(' / ')).join('; ')}; the busier thread served ${f(report.twoWorkers.busierShare.median * 100, 1)} % (${f(report.twoWorkers.busierShare.min * 100, 1)}–${f(report.twoWorkers.busierShare.max * 100, 1)} %). The kernel spreads connections by SO_REUSEPORT hash, so the split follows the 64 connections, not the load.`,
    ]),
    '', '## Charts', '',
    ...(smoke || !runs(o, 'S0') ? [] : [`![S0 calibration](${base}-s0.svg)`, '']),
    `![S1 req/s at c=${smoke ? 32 : 64}](${base}-s1.svg)`, '',
    ...(lifecycle.length === 0 ? [] : [`![S2 lifecycles](${base}-s2.svg)`, '', `![S3 CPU tools](${base}-s3.svg)`, '']),
    ...(cancel.length === 0 ? [] : [`![S4 cancel latency](${base}-s4.svg)`, '']),
    ...(!smoke && registry !== undefined ? ['![S5 table and registry (bench:registry)](registry-latest.svg)', ''] : []),
    ...(soak.length === 0 ? [] : [`![S6 soak](${base}-s6.svg)`, '', `![S7 two workers](${base}-s7.svg)`, '']),
  ];
  const md = `${lines.join('\n')}\n`;
  const files: [string, string][] = [[`${name}.json`, toJson(report)], [`${name}.md`, md]];
  const c = smoke ? 32 : 64;
  if (!smoke && runs(o, 'S0')) files.push([`${base}-s0.svg`, svgBars('S0 calibration: hello world, req/s at c=50 (one server core)', report.rows.filter((r) => r.scenario === 'S0').map((r) => ({ label: r.label, value: r.rps })), 'req/s')]);
  files.push([`${base}-s1.svg`, svgBars(`S1 tools/call echo, req/s at c=${c} (one server core)`, report.rows.filter((r) => r.scenario === 'S1' && r.connections === c).map((r) => ({ label: r.label, value: r.rps })), 'req/s')]);
  if (report.lifecycle.length > 0) {
    files.push([`${base}-s2.svg`, svgBars('S2 session per call, lifecycles/s (one server core)', report.lifecycle.map((l) => ({ label: l.label, value: l.lifecyclesPerSecond })), '/s')]);
  }
  if (cancel.length > 0) files.push([`${base}-s4.svg`, svgBars('S4 cancel → tool observed over HTTP, p50 ms', cancel.map((x) => ({ label: x.mode, value: x.p50ms })), 'ms')]);
  if (cpuTools.length > 0) {
    files.push([`${base}-s3.svg`, svgBars('S3 CPU tools: HTTP-worker loop delay p99 at c=8, ms', cpuTools.map((x) => ({ label: `${x.us} µs ${x.mode}`, value: x.loopDelayP99ms })), 'ms')]);
  }
  if (soak.length > 0) {
    files.push([`${base}-s6.svg`, svgBars('S6 open-loop soak: mean and max latency, ms', soak.flatMap((x) => [{ label: `${x.share * 100} % of peak, mean`, value: x.meanMs }, { label: `${x.share * 100} % of peak, max`, value: x.maxMs }]), 'ms')]);
  }
  if (report.twoWorkers !== undefined) {
    files.push([`${base}-s7.svg`, svgBars('S7 two HTTP workers: requests per thread (first run)', (report.twoWorkers.perThread[0] ?? []).map((n, i) => ({ label: `worker thread ${i + 1}`, value: n })), 'requests')]);
  }
  writeResults(files);
  return { report, ratios, cancel, md, ceiling };
}
