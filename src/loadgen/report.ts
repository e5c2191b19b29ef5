/**
 * The `--report out.html` page: one self-contained file (inline SVG and CSS, no script, no CDN)
 * with the summary, the latency distribution, the rate over time and, when comparing, the table
 * of ratios with their min–max.
 */
import type { CompareResult, Spread } from './run.js';
import type { BenchSummary } from './summary.js';

function esc(s: string): string {
  return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
}

const kColors = ['#2f6db5', '#d9822b', '#3a9d5d', '#a64ca6'];

/** Latency by percentile, x on a "nines" scale (0, 90, 99, 99.9, …), one line per run. */
export function latencySvg(runs: { label: string; summary: BenchSummary }[]): string {
  const w = 720, h = 320, left = 70, right = 20, top = 30, bottom = 50;
  const nines = (p: number): number => (p >= 100 ? 5 : -Math.log10(1 - p / 100));
  const maxX = 5;
  const maxY = Math.max(0.001, ...runs.flatMap((r) => r.summary.latencyCurve.map(([, ms]) => ms)));
  const x = (p: number): number => left + (Math.min(nines(p), maxX) / maxX) * (w - left - right);
  const y = (ms: number): number => top + (1 - ms / maxY) * (h - top - bottom);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif" font-size="12" role="img" aria-label="latency distribution">`,
    `<rect width="${w}" height="${h}" fill="#fff"/>`,
    `<text x="${w / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">Latency by percentile (ms)</text>`];
  for (let i = 0; i <= 4; i++) {
    const v = (maxY * i) / 4;
    parts.push(`<line x1="${left}" x2="${w - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e3e6ea"/>`, `<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${v.toFixed(v < 10 ? 2 : 0)}</text>`);
  }
  for (const [p, label] of [[0, '0'], [90, '90'], [99, '99'], [99.9, '99.9'], [99.99, '99.99'], [100, 'max']] as const) {
    parts.push(`<text x="${x(p).toFixed(1)}" y="${h - bottom + 18}" text-anchor="middle" fill="#555">${label}</text>`);
  }
  parts.push(`<text x="${w / 2}" y="${h - 12}" text-anchor="middle" fill="#333">percentile</text>`);
  runs.forEach((r, i) => {
    const pts = r.summary.latencyCurve.map(([p, ms]) => `${x(p).toFixed(1)},${y(ms).toFixed(1)}`).join(' ');
    const color = kColors[i % kColors.length]!;
    if (pts !== '') parts.push(`<polyline class="latency-line" fill="none" stroke="${color}" stroke-width="2" points="${pts}"><title>${esc(r.label)}</title></polyline>`);
    parts.push(`<rect x="${left + 10}" y="${top + 8 + i * 16}" width="10" height="10" fill="${color}"/><text x="${left + 26}" y="${top + 17 + i * 16}">${esc(r.label)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

/** Requests finished in each second, one line per run. */
export function rateSvg(runs: { label: string; summary: BenchSummary }[]): string {
  const w = 720, h = 260, left = 70, right = 20, top = 30, bottom = 44;
  const seconds = Math.max(1, ...runs.map((r) => r.summary.timeline.length));
  const maxY = Math.max(1, ...runs.flatMap((r) => r.summary.timeline.map((t) => t.requests)));
  const x = (s: number): number => left + (seconds === 1 ? 0.5 : s / (seconds - 1)) * (w - left - right);
  const y = (v: number): number => top + (1 - v / maxY) * (h - top - bottom);
  const parts = [`<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif" font-size="12" role="img" aria-label="rate over time">`,
    `<rect width="${w}" height="${h}" fill="#fff"/>`,
    `<text x="${w / 2}" y="18" text-anchor="middle" font-size="14" font-weight="bold">Requests per second over the run</text>`];
  for (let i = 0; i <= 4; i++) {
    const v = (maxY * i) / 4;
    parts.push(`<line x1="${left}" x2="${w - right}" y1="${y(v).toFixed(1)}" y2="${y(v).toFixed(1)}" stroke="#e3e6ea"/>`, `<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${Math.round(v)}</text>`);
  }
  parts.push(`<text x="${w / 2}" y="${h - 10}" text-anchor="middle" fill="#333">second of the measured window</text>`);
  runs.forEach((r, i) => {
    const color = kColors[i % kColors.length]!;
    const pts = r.summary.timeline.map((t) => `${x(t.second).toFixed(1)},${y(t.requests).toFixed(1)}`).join(' ');
    if (pts !== '') parts.push(`<polyline class="rate-line" fill="none" stroke="${color}" stroke-width="2" points="${pts}"><title>${esc(r.label)}</title></polyline>`);
    for (const t of r.summary.timeline) parts.push(`<circle cx="${x(t.second).toFixed(1)}" cy="${y(t.requests).toFixed(1)}" r="2.5" fill="${color}"/>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

function summaryTable(s: BenchSummary, label: string): string {
  const l = s.latencyMs;
  const rows: [string, string][] = [
    ['target', s.target], ['era', s.era === 'legacy' ? `legacy (${s.protocolVersion})` : s.era], ['request', `${s.method}${s.name === null ? '' : ` ${s.name}`}`],
    ['load', `${s.mode === 'open' ? `open loop, ${s.rate} req/s` : 'closed loop'}; ${s.connections} connection${s.connections === 1 ? '' : 's'}; ${s.threads} thread${s.threads === 1 ? '' : 's'}; ${s.durationS} s`],
    ['requests', `${s.requests} (${s.requestsPerSecond}/s)`],
    ['latency ms', `p50 ${l.p50} · p90 ${l.p90} · p99 ${l.p99} · p99.9 ${l.p999} · max ${l.max}`],
    ['errors', `${s.errors.total} (${(s.errors.rate * 100).toFixed(2)} %) ${Object.entries(s.errors.byKind).map(([k, n]) => `${k}: ${n}`).join(', ')}`],
    ['generator CPU', `${s.generator.cpuPercent} %${s.generator.bottleneck ? ' (may be the bottleneck)' : ''}`],
  ];
  if (s.cancel !== null) rows.push(['cancel', `${s.cancel.sent} sent; answer stops p50 ${s.cancel.answerStopsMs.p50} ms, p99 ${s.cancel.answerStopsMs.p99} ms; never stopped ${s.cancel.neverStopped}`]);
  return `<h2>${esc(label)}</h2>\n<table class="summary">${rows.map(([k, v]) => `<tr><th>${esc(k)}</th><td>${esc(v)}</td></tr>`).join('')}</table>`;
}

function spreadText(s: Spread, digits = 2): string {
  return `${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

function compareTable(c: CompareResult): string {
  const rows = Object.keys(c.ratios).map((name) => `<tr><th>${esc(name)}</th><td>${spreadText(c.figures.a[name]!)}</td><td>${spreadText(c.figures.b[name]!)}</td><td class="ratio">${spreadText(c.ratios[name]!)}</td></tr>`);
  return `<h2>Comparison over ${c.repeats} interleaved rounds</h2>\n<p>A: ${esc(c.a)}<br>B: ${esc(c.b)}</p>\n<table class="compare"><tr><th>figure</th><th>A median (min–max)</th><th>B median (min–max)</th><th>B / A median (min–max)</th></tr>${rows.join('')}</table>`;
}

const kStyle = 'body{font-family:Helvetica,Arial,sans-serif;margin:24px;color:#222}table{border-collapse:collapse;margin:8px 0 20px}th,td{border:1px solid #ccc;padding:4px 8px;text-align:left;font-size:13px}th{background:#f3f5f7}svg{display:block;margin:12px 0}';

/** The page for one run, or for a comparison (its last round's runs charted). */
export function renderHtml(input: { summary: BenchSummary } | { compare: CompareResult }): string {
  let body: string;
  let runs: { label: string; summary: BenchSummary }[];
  if ('summary' in input) {
    runs = [{ label: input.summary.target, summary: input.summary }];
    body = summaryTable(input.summary, 'Summary');
  } else {
    const last = input.compare.rounds[input.compare.rounds.length - 1]!;
    runs = [{ label: `A: ${last.a.target}`, summary: last.a }, { label: `B: ${last.b.target}`, summary: last.b }];
    body = `${compareTable(input.compare)}\n${summaryTable(last.a, 'A (last round)')}\n${summaryTable(last.b, 'B (last round)')}`;
  }
  return `<!doctype html>\n<html lang="en"><head><meta charset="utf-8"><title>sluice bench report</title><style>${kStyle}</style></head>\n<body>\n<h1>sluice bench</h1>\n${body}\n<h2>Latency distribution</h2>\n${latencySvg(runs)}\n<h2>Rate over time</h2>\n${rateSvg(runs)}\n</body></html>\n`;
}
