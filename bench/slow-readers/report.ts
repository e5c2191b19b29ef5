/**
 * The slow-reader soak's report: bench/results/slow-readers-latest.{json,md,svg}. No side effects on import.
 */
import { fixed as f, toJson, writeResults } from '../lib/report.js';
import { svgHead, xmlEscape as esc } from '../lib/svg.js';
import type { Options } from './load.js';
import { kPhases, kSeries } from './phases.js';
import type { PhaseName, PhaseResult } from './phases.js';


/**
 * Top: server RSS over the run, the three phases on one timeline (each phase's RSS bound dashed
 * over its own span; the gaps are the settling between phases). Bottom: echo p99 per phase and
 * the ratios.
 */
export function svgChart(report: Report): string {
  const phases = kPhases.map((k) => ({ ...k, r: report.phases[k.name] }));
  const boundMb = report.options.rssBoundMb;
  const w = 760;
  const h = 470;
  const plot = { x: 60, y: 56, w: 660, h: 220 };
  const timeline = phases.flatMap((p) => p.r.rss.samples.map(([t, v]): [number, number] => [p.r.offsetS + t, v]));
  const tMax = Math.max(1, ...timeline.map(([t]) => t).filter(Number.isFinite));
  const yMax = Math.max(1, ...timeline.map(([, v]) => v).filter(Number.isFinite)) * 1.15;
  const px = (t: number) => plot.x + (t / tMax) * plot.w;
  const py = (v: number) => plot.y + plot.h - (Math.min(v, yMax) / yMax) * plot.h;
  const lines = phases.map((p) => {
    const s = p.r.rss.samples.filter(([, v]) => Number.isFinite(v)).map(([t, v]) => `${px(p.r.offsetS + t).toFixed(1)},${py(v).toFixed(1)}`);
    if (s.length === 0) return '';
    const t0 = p.r.offsetS;
    const t1 = t0 + Math.max(...p.r.rss.samples.map(([t]) => t));
    const bound = p.r.rss.startMb + boundMb;
    const boundLine = bound <= yMax
      ? `<line x1="${px(t0).toFixed(1)}" y1="${py(bound).toFixed(1)}" x2="${px(t1).toFixed(1)}" y2="${py(bound).toFixed(1)}" stroke="${p.color}" stroke-dasharray="4 4"/>`
      : '';
    return [
      `<polyline fill="none" stroke="${p.color}" stroke-width="2" points="${s.join(' ')}"/>`, boundLine,
      `<text x="${px(t0).toFixed(1)}" y="${(plot.y + plot.h + 16).toFixed(1)}" font-size="11" fill="${p.color}">${p.letter} +${f(p.r.rss.growthMb, 1)} MB</text>`,
    ].join('');
  }).join('\n');
  const boundNote = phases.every((p) => !(p.r.rss.startMb + boundMb <= yMax))
    ? `RSS bound (phase start + ${boundMb} MB) is above the plot`
    : `dashed: phase start + ${boundMb} MB bound`;
  const bars = phases.map((p) => ({ label: `${p.letter} ${p.name}`, value: p.r.echo.p99ms, p50: p.r.echo.p50ms, color: p.color }));
  const barMax = Math.max(1e-9, ...bars.map((x) => (Number.isFinite(x.value) ? x.value : 0)));
  const barRows = bars.map((x, i) => {
    const y = 312 + i * 28;
    const len = Math.max(1, ((Number.isFinite(x.value) ? x.value : 0) / barMax) * 420);
    return `<text x="10" y="${y + 14}" font-size="12">${esc(`p99 ${x.label}`)}</text><rect x="130" y="${y + 2}" width="${len.toFixed(1)}" height="18" fill="${x.color}"/><text x="${(136 + len).toFixed(1)}" y="${y + 15}" font-size="12">${f(x.value, 2)} ms (p50 ${f(x.p50, 2)})</text>`;
  }).join('\n');
  const r = report.ratios;
  return [
    ...svgHead(w, h),
    `<text x="10" y="22" font-size="14" font-weight="bold">${esc(`Slow readers (flood mode ${report.options.floodMode}, ${report.options.attackers} attackers): server RSS (MB) over the run; echo p99 per phase`)}</text>`,
    `<text x="10" y="40" font-size="11" fill="#555">${esc(`${phases.map((p) => p.label).join(' · ')}; ${boundNote}`)}</text>`,
    `<line x1="${plot.x}" y1="${plot.y + plot.h}" x2="${plot.x + plot.w}" y2="${plot.y + plot.h}" stroke="#888"/><line x1="${plot.x}" y1="${plot.y}" x2="${plot.x}" y2="${plot.y + plot.h}" stroke="#888"/>`,
    `<text x="${plot.x - 6}" y="${plot.y + 4}" font-size="11" text-anchor="end">${f(yMax, 0)}</text><text x="${plot.x - 6}" y="${plot.y + plot.h}" font-size="11" text-anchor="end">0</text>`,
    `<text x="${plot.x + plot.w}" y="${plot.y + plot.h + 16}" font-size="11" text-anchor="end">${f(tMax, 0)} s</text>`,
    lines,
    barRows,
    `<text x="10" y="${312 + 3 * 28 + 16}" font-size="12">${esc(`p99 C/B = ${f(r.p99StalledOverReading, 2)} (the slow readers' own effect; target ≤ 2)   ·   C/A = ${f(r.p99StalledOverBaseline, 2)}   ·   B/A = ${f(r.p99ReadingOverBaseline, 2)} (informational)`)}</text>`,
    '</svg>', '',
  ].join('\n');
}

export function markdown(report: Report): string {
  const P = report.phases;
  const ph = kPhases.map((k) => P[k.name]);
  const o = report.options;
  const m = (x: number | null) => (x === null ? 'missing' : `${x}`);
  const row = (label: string, cell: (p: PhaseResult) => string) => `| ${label} | ${ph.map(cell).join(' | ')} |`;
  const bound = (p: PhaseResult) => (p.boundExceededAt === undefined ? '' : ` (**bound exceeded at t=${f(p.boundExceededAt, 1)} s**; phase aborted)`);
  const attackLine = (p: PhaseResult) => {
    const a = p.attack;
    if (a === undefined) return `- ${p.name}: did not run`;
    return `- ${p.name === 'reading' ? 'B reading' : 'C stalled'}: ${a.connects} flood calls opened, ${a.streaming} answered with a stream, ${a.refused} answered otherwise, ${a.closedByServer} closed by the server, ${a.completed} ended normally before the phase did; ${(a.bytesRead / 1048576).toFixed(1)} MiB read by the attackers; ${a.legacyCalls} legacy calls cancelled afterwards.`;
  };
  const floodText = o.floodMode === 'burst'
    ? '`burst` (a chatty tool: 10 progress + 10 log messages of 1 kB, then `await setTimeout(1 ms)`, polling ctx.cancelled)'
    : '**`tight`** (the old CPU burner: one progress + one log per iteration as fast as it can, setImmediate every 50 iterations; its own CPU cost on the HTTP workers dominates)';
  return [
    `# Slow-reader soak (${o.seconds} s per phase, ${o.clients} echo clients, ${o.attackers} attackers, flood mode ${o.floodMode})`, '',
    `- Date: ${report.date}; machine: ${report.machine}; server pinned to CPU 1, this load generator to CPU 0: ${report.pinned}`,
    `- Load average (1/5/15 min) at start: ${report.loadAvg.start.map((x) => x.toFixed(2)).join(' / ')}; at end: ${report.loadAvg.end.map((x) => x.toFixed(2)).join(' / ')} (other work on the machine shows here)`,
    `- Command: \`${report.command}\``,
    '- Server: bench/servers/sluice-slow-readers.mjs, two HTTP workers, the same process for the three phases (not restarted), run in the fixed order A, B, C after a 2 s echo warm-up',
    `- \`flood\` mode: ${floodText}`,
    `- Phases: A baseline = echo only. B reading = the echo load plus ${o.attackers} attackers' \`flood\` calls whose clients read (drain and discard) their streams. C stalled = the same calls, but each client reads the response head and then stops reading (the attack). B and C start the attackers 1 s before the echo load; the echo load runs ${o.seconds} s in each phase. After B and C the legacy floods are cancelled and the server settles (in-flight 0, then 2 s).`,
    `- Attackers: ${Math.ceil(o.attackers / 2)} legacy (session, every log level) + ${Math.floor(o.attackers / 2)} 2026-07-28 (_meta logLevel debug), each a \`flood\` call with a progress token on a raw socket; in C a server close is seen through the kernel's TCP states of both ends (/proc/net/tcp); a closed or finished call is followed by a new one 250 ms later`,
    `- **Judged figure: echo p99 C/B** (target ≤ 2). B is the same tool load without the attack, so C/B is the slow readers' own effect: the issue's "within 2x of the no-attack run" is judged on it. C/A and B/A are informational (B/A is what the flood tool itself costs the echo clients on a 2-core box).`,
    `- Verdict: ${report.verdict}`, '',
    `| | ${kPhases.map((k) => k.label).join(' | ')} |`, '|---|---:|---:|---:|',
    row('echo calls (errors, wrong)', (p) => `${p.echo.calls} (${p.echo.errors}, ${p.echo.wrong})`),
    row('echo seconds measured', (p) => f(p.echo.seconds, 1)),
    row('echo req/s', (p) => f(p.echo.rps, 0)),
    row('echo p50 / p99 / max ms', (p) => `${f(p.echo.p50ms, 2)} / **${f(p.echo.p99ms, 2)}** / ${f(p.echo.maxMs, 1)}`),
    row('RSS start / peak / end MB', (p) => `${f(p.rss.startMb, 1)} / ${f(p.rss.peakMb, 1)} / ${f(p.rss.endMb, 1)}`),
    row('RSS growth MB', (p) => `${f(p.rss.growthMb, 1)}${bound(p)}`),
    row('RSS after the attackers left (+2 s) MB', (p) => f(p.rss.settledMb, 1)),
    row('server CPU s per s (CPU 1; 1 = saturated)', (p) => f(p.cpu.server, 2)),
    row('load generator CPU s per s (CPU 0)', (p) => f(p.cpu.generator, 2)),
    ...kSeries.map((s) => row(`${s} (${s.endsWith('_total') ? 'increase' : 'peak'})`, (p) => m(p.metrics[s]))),
    '', '| ratio (same run, same server process) | value | target |', '|---|---:|---:|',
    `| **echo p99 C/B (stalled / reading): the slow readers' own effect** | **${f(report.ratios.p99StalledOverReading, 2)}** | ≤ 2 |`,
    `| echo p99 C/A (stalled / baseline) | ${f(report.ratios.p99StalledOverBaseline, 2)} | informational |`,
    `| echo p99 B/A (reading / baseline): the flood tool's own cost | ${f(report.ratios.p99ReadingOverBaseline, 2)} | informational |`,
    `| echo p50 C/B, C/A, B/A | ${f(P.stalled.echo.p50ms / P.reading.echo.p50ms, 2)}, ${f(P.stalled.echo.p50ms / P.baseline.echo.p50ms, 2)}, ${f(P.reading.echo.p50ms / P.baseline.echo.p50ms, 2)} | |`,
    `| echo req/s C/B, C/A, B/A | ${f(P.stalled.echo.rps / P.reading.echo.rps, 2)}, ${f(P.stalled.echo.rps / P.baseline.echo.rps, 2)}, ${f(P.reading.echo.rps / P.baseline.echo.rps, 2)} | |`, '',
    'Attackers:', attackLine(P.reading), attackLine(P.stalled), '',
    `The echo load is closed-loop (${o.clients} keep-alive loops), so its latencies understate queueing under overload (coordinated omission); compare the phases, not absolute values. In B the load generator also drains the attackers' streams on CPU 0, next to the echo loops, so B pays that too (see the generator CPU row). Metrics: gauges show the peak of the once-a-second /metrics reads, counters their increase over the phase; "missing" means the server does not export the series. CPU rows: CPU seconds (user + system) per wall second over the phase including the attackers' 1 s ramp.`, '',
    '![RSS over time and p99 per phase](slow-readers-latest.svg)', '',
  ].join('\n');
}

export interface Report {
  date: string; machine: string; pinned: boolean; loadAvg: { start: number[]; end: number[] }; command: string; options: Options;
  phases: Record<PhaseName, PhaseResult>;
  ratios: { p99StalledOverReading: number; p99StalledOverBaseline: number; p99ReadingOverBaseline: number; rpsStalledOverReading: number };
  /** Whether p99 C/B is within 2 (the judged figure). */
  p99Met: boolean; grossFailure: string | undefined; verdict: string;
}

export function writeReport(report: Report): string {
  const md = markdown(report);
  writeResults([['slow-readers-latest.json', toJson(report)], ['slow-readers-latest.md', md], ['slow-readers-latest.svg', svgChart(report)]]);
  return md;
}
