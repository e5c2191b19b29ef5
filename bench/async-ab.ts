/**
 * Async-tool A/B: the S1 echo (sluice-echo.mjs, 1 HTTP worker, server on CPU 1, wrk on CPU 0) from a
 * sync handler (`echo`) and from an async one (`echo_async`), interleaved on one server process,
 * c = 32, at both eras. Writes bench/results/async-ab.md (or `--out NAME`) with async ÷ sync per rep.
 *
 *   npm run build && node dist/bench/async-ab.js [--reps 5] [--seconds 5] [--label text]
 */
import { send } from './lib/http-client.js';
import { machineLine } from './lib/machine.js';
import { stopServer } from './lib/process.js';
import { writeResults } from './lib/report.js';
import { checkEcho, legacyEcho, modernEcho } from './http/contenders.js';
import type { Endpoint } from './http/wrk.js';
import { ensureTools, start, wrk } from './http/wrk.js';

const argv = process.argv.slice(2);
const opt = (name: string, fallback: string): string => {
  const i = argv.indexOf(`--${name}`);
  return i >= 0 && i + 1 < argv.length ? argv[i + 1]! : fallback;
};
const reps = Number(opt('reps', '5'));
const seconds = Number(opt('seconds', '5'));
const label = opt('label', '');
const out = opt('out', 'async-ab.md');
const kConnections = 32;

/** The same request naming `echo_async` instead of `echo`. */
function asyncOf(e: Endpoint): Endpoint {
  const headers = { ...e.headers };
  if (headers['mcp-name'] !== undefined) headers['mcp-name'] = 'echo_async';
  return { ...e, headers, body: e.body!.replace('"name":"echo"', '"name":"echo_async"') };
}

interface EraResult { era: string; sync: number[]; async: number[]; ratios: number[]; cpuRatios: number[] }

ensureTools();
const results: EraResult[] = [];
for (const [era, endpoint] of [['2025-11-25 (legacy)', legacyEcho()], ['2026-07-28', modernEcho()]] as const) {
  const s = await start('sluice-echo.mjs', ['nosessions', '1']);
  try {
    const pair = [endpoint, asyncOf(endpoint)] as const;
    for (const e of pair) checkEcho(era, await send(s.port, e));
    for (const e of pair) await wrk(s.port, e, kConnections, 2, s.pid); // warm-up (JIT)
    const r: EraResult = { era, sync: [], async: [], ratios: [], cpuRatios: [] };
    for (let rep = 0; rep < reps; rep++) {
      // Alternate which goes first, so drift (thermal, background) does not favour one side.
      const order = rep % 2 === 0 ? [0, 1] : [1, 0];
      const rps: number[] = [0, 0];
      /** Server CPU µs per request: less at the mercy of other load on the machine than req/s. */
      const cpu: number[] = [0, 0];
      for (const i of order) {
        const w = await wrk(s.port, pair[i]!, kConnections, seconds, s.pid);
        if (w.non2xx > 0) throw new Error(`${era}: ${w.non2xx} non-2xx responses`);
        rps[i] = w.rps;
        cpu[i] = (w.serverCpu * 1e6) / Math.max(1, w.requests);
      }
      r.sync.push(rps[0]!);
      r.async.push(rps[1]!);
      r.ratios.push(rps[1]! / rps[0]!);
      r.cpuRatios.push(cpu[0]! / cpu[1]!);
      process.stderr.write(`${era} rep ${rep + 1}: sync ${rps[0]!.toFixed(0)} async ${rps[1]!.toFixed(0)} ratio ${(rps[1]! / rps[0]!).toFixed(3)} cpu µs/req sync ${cpu[0]!.toFixed(1)} async ${cpu[1]!.toFixed(1)} ratio ${(cpu[0]! / cpu[1]!).toFixed(3)}\n`);
    }
    results.push(r);
  } finally {
    await stopServer(s);
  }
}

const f = (x: number, d = 0): string => x.toFixed(d);
const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]!; };
const lines = [
  `# Async tool A/B${label === '' ? '' : `: ${label}`}`, '',
  `S1 echo, one HTTP worker, server pinned to CPU 1 and wrk to CPU 0, c = ${kConnections}, ${seconds} s per run, ${reps} interleaved reps (order alternates). ${machineLine()}`, '',
  'Ratios are async ÷ sync throughput (req/s), and sync ÷ async server CPU per request (so 1 = free, < 1 = the async echo costs more).', '',
  '| era | rep | sync req/s | async req/s | req/s async ÷ sync | CPU/req sync ÷ async |', '|---|---:|---:|---:|---:|---:|',
];
for (const r of results) r.ratios.forEach((x, i) => lines.push(`| ${r.era} | ${i + 1} | ${f(r.sync[i]!)} | ${f(r.async[i]!)} | ${f(x, 3)} | ${f(r.cpuRatios[i]!, 3)} |`));
lines.push('', '| era | req/s ratio min–max | median | CPU/req ratio min–max | median |', '|---|---|---:|---|---:|');
for (const r of results) lines.push(`| ${r.era} | ${f(Math.min(...r.ratios), 3)}–${f(Math.max(...r.ratios), 3)} | ${f(median(r.ratios), 3)} | ${f(Math.min(...r.cpuRatios), 3)}–${f(Math.max(...r.cpuRatios), 3)} | ${f(median(r.cpuRatios), 3)} |`);
lines.push('');
console.log(writeResults([[out, lines.join('\n')]]).join('\n'));
console.log(lines.join('\n'));
