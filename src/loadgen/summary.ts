/**
 * The figures of a run, merged from every thread's Snapshot: the document `--json` prints (field
 * names are stable; docs/loadgen.md lists them) and its text rendering.
 */
import type { Histogram } from 'hdr-histogram-js';
import type { BenchOptions, Negotiated } from './options.js';
import { decodeHistogram, newHistogram } from './recorder.js';
import type { Snapshot } from './recorder.js';
import type { Step } from './target.js';

/** Latency figures in milliseconds. */
export interface LatencyMs {
  count: number;
  min: number;
  mean: number;
  p50: number;
  p90: number;
  p99: number;
  p999: number;
  max: number;
}

export interface BenchSummary {
  target: string;
  era: 'legacy' | '2026-07-28';
  protocolVersion: string;
  method: string;
  name: string | null;
  mode: 'closed' | 'open';
  /** Open loop: the requests/s asked for; closed loop: null. */
  rate: number | null;
  connections: number;
  threads: number;
  sessionPerCall: boolean;
  durationS: number;
  warmupS: number;
  /** Requests finished in the measured window (answered, failed or cancelled). */
  requests: number;
  ok: number;
  requestsPerSecond: number;
  /** Answered requests (ok, tool isError, JSON-RPC error, HTTP status): from send (open loop: from when it was due) to answer. */
  latencyMs: LatencyMs;
  /** Latency at percentiles 0..99.999, for charts: [percentile, ms]. */
  latencyCurve: [number, number][];
  errors: { total: number; rate: number; byKind: Record<string, number>; details: Record<string, string> };
  progressNotifications: number;
  /** --session-per-call: each step's latency. */
  steps: Partial<Record<Step, LatencyMs>> | null;
  /** --cancel-after: cancels sent, answers that stopped, and how fast. */
  cancel: {
    afterMs: number;
    sent: number;
    /** Calls that finished before their cancel was due. */
    finishedFirst: number;
    answerStopped: number;
    neverStopped: number;
    answerStopsMs: LatencyMs;
    /** Cancelled calls whose tool still answered (so had stopped): cancel → that answer. */
    toolStopped: number;
    toolStopsMs: LatencyMs | null;
  } | null;
  bytesIn: number;
  bytesOut: number;
  /** Requests in flight when the measured window closed (not counted; the server may have counted them). */
  unfinished: number;
  /** Requests answered during the warm-up (not counted). */
  warmupRequests: number;
  /** The generator's CPU (all its threads): percent of one core over the run, and µs per request sent. */
  generator: { cpuPercent: number; cpuUsPerRequest: number; threads: number; bottleneck: boolean };
  /** Each second of the measured window. */
  timeline: { second: number; requests: number; errors: number }[];
}

export function latencyMs(h: Histogram): LatencyMs {
  const ms = (us: number): number => Math.round(us) / 1000;
  if (h.totalCount === 0) return { count: 0, min: 0, mean: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };
  return {
    count: h.totalCount, min: ms(h.minNonZeroValue), mean: ms(h.mean), p50: ms(h.getValueAtPercentile(50)), p90: ms(h.getValueAtPercentile(90)),
    p99: ms(h.getValueAtPercentile(99)), p999: ms(h.getValueAtPercentile(99.9)), max: ms(h.maxValue),
  };
}

const kCurve = [0, 10, 25, 50, 75, 90, 95, 99, 99.5, 99.9, 99.95, 99.99, 99.999, 100];

export interface RunFacts {
  options: BenchOptions;
  negotiated: Negotiated;
  threads: number;
  /** Generator CPU (all threads) over the run, µs, and the run's wall time, µs. */
  cpuUs: number;
  wallUs: number;
}

export function merge(snapshots: Snapshot[], facts: RunFacts): BenchSummary {
  const { options } = facts;
  const latency = newHistogram();
  const answerStops = newHistogram();
  const toolStops = newHistogram();
  const steps = new Map<Step, Histogram>();
  const byKind: Record<string, number> = {};
  const details: Record<string, string> = {};
  const timeline: { second: number; requests: number; errors: number }[] = [];
  const cancel = { sent: 0, finishedFirst: 0, answerStopped: 0, neverStopped: 0, toolStopped: 0 };
  let requests = 0, ok = 0, progress = 0, bytesIn = 0, bytesOut = 0, unfinished = 0, warmup = 0;
  for (const s of snapshots) {
    requests += s.requests; ok += s.ok; progress += s.progress; bytesIn += s.bytesIn; bytesOut += s.bytesOut; unfinished += s.unfinished; warmup += s.warmup;
    latency.add(decodeHistogram(s.latency));
    answerStops.add(decodeHistogram(s.cancel.answerStops));
    toolStops.add(decodeHistogram(s.cancel.toolStops));
    for (const key of Object.keys(cancel) as (keyof typeof cancel)[]) cancel[key] += s.cancel[key];
    for (const [step, text] of Object.entries(s.steps) as [Step, string][]) {
      let h = steps.get(step);
      if (h === undefined) steps.set(step, h = newHistogram());
      h.add(decodeHistogram(text));
    }
    for (const [key, n] of Object.entries(s.errors)) byKind[key] = (byKind[key] ?? 0) + n;
    for (const [key, d] of Object.entries(s.errorDetails)) details[key] ??= d;
    s.timeline.forEach(([r, e], second) => {
      while (timeline.length <= second) timeline.push({ second: timeline.length, requests: 0, errors: 0 });
      timeline[second]!.requests += r;
      timeline[second]!.errors += e;
    });
  }
  const seconds = Math.ceil(options.durationMs / 1000);
  timeline.length = Math.min(timeline.length, seconds);
  const total = Object.values(byKind).reduce((a, b) => a + b, 0);
  const cpuPercent = facts.wallUs > 0 ? Math.round((facts.cpuUs / facts.wallUs) * 1000) / 10 : 0;
  const stepFigures: Partial<Record<Step, LatencyMs>> = {};
  for (const [step, h] of steps) stepFigures[step] = latencyMs(h);
  return {
    target: options.target.kind === 'http' ? options.target.url : [options.target.command, ...options.target.args].join(' '),
    era: facts.negotiated.era === 'modern' ? '2026-07-28' : 'legacy',
    protocolVersion: facts.negotiated.version,
    method: options.method,
    name: options.name ?? null,
    mode: options.rate === undefined ? 'closed' : 'open',
    rate: options.rate ?? null,
    connections: options.connections,
    threads: facts.threads,
    sessionPerCall: options.sessionPerCall,
    durationS: options.durationMs / 1000,
    warmupS: options.warmupMs / 1000,
    requests,
    ok,
    requestsPerSecond: Math.round((requests / (options.durationMs / 1000)) * 10) / 10,
    latencyMs: latencyMs(latency),
    latencyCurve: latency.totalCount === 0 ? [] : kCurve.map((p) => [p, Math.round(p === 100 ? latency.maxValue : latency.getValueAtPercentile(p)) / 1000]),
    errors: { total, rate: requests === 0 ? 0 : total / requests, byKind, details },
    progressNotifications: progress,
    steps: steps.size === 0 ? null : stepFigures,
    cancel: options.cancelAfterMs === undefined ? null : {
      afterMs: options.cancelAfterMs, ...cancel, answerStopsMs: latencyMs(answerStops), toolStopsMs: cancel.toolStopped === 0 ? null : latencyMs(toolStops),
    },
    bytesIn, bytesOut, unfinished, warmupRequests: warmup,
    // A generator thread busy 90 % of the time or more is likely what limits the rate.
    generator: { cpuPercent, cpuUsPerRequest: Math.round((facts.cpuUs / Math.max(1, requests + warmup + unfinished)) * 10) / 10, threads: facts.threads, bottleneck: cpuPercent >= 90 * facts.threads },
    timeline,
  };
}

function fmt(ms: number): string {
  return ms >= 1000 ? `${(ms / 1000).toFixed(2)} s` : ms >= 10 ? `${ms.toFixed(1)} ms` : `${ms.toFixed(3)} ms`;
}

function bytes(n: number): string {
  return n >= 1 << 30 ? `${(n / (1 << 30)).toFixed(2)} GiB` : n >= 1 << 20 ? `${(n / (1 << 20)).toFixed(1)} MiB` : `${(n / 1024).toFixed(1)} KiB`;
}

function latencyLine(l: LatencyMs): string {
  return `p50 ${fmt(l.p50)}  p90 ${fmt(l.p90)}  p99 ${fmt(l.p99)}  p99.9 ${fmt(l.p999)}  max ${fmt(l.max)}`;
}

/** The summary for people. */
export function renderText(s: BenchSummary): string {
  const lines: string[] = [];
  const what = s.method === 'tools/call' || s.method === 'prompts/get' || s.method === 'resources/read' ? `${s.method} ${s.name}` : s.method;
  lines.push(`${s.target}  (${s.era === 'legacy' ? `legacy ${s.protocolVersion}` : '2026-07-28'}; ${what})`);
  lines.push(`  ${s.mode === 'open' ? `open loop at ${s.rate} req/s` : 'closed loop'}, ${s.connections} connection${s.connections === 1 ? '' : 's'}, ${s.threads} thread${s.threads === 1 ? '' : 's'}, ${s.durationS} s after ${s.warmupS} s warm-up${s.sessionPerCall ? ', a session per call' : ''}`);
  lines.push(`  requests      ${s.requests} (${s.requestsPerSecond.toFixed(1)}/s), ok ${s.ok}`);
  lines.push(`  latency       ${s.latencyMs.count === 0 ? '(no request was answered: cancelled or failed)' : latencyLine(s.latencyMs)}`);
  if (s.steps !== null) for (const [step, l] of Object.entries(s.steps)) lines.push(`    ${step.padEnd(12)}${latencyLine(l)}`);
  if (s.cancel !== null) {
    const c = s.cancel;
    lines.push(`  cancel after ${c.afterMs} ms: ${c.sent} sent, ${c.answerStopped} answers stopped, ${c.neverStopped} never stopped, ${c.finishedFirst} finished first`);
    if (c.answerStopped > 0) lines.push(`    cancel → answer stops  ${latencyLine(c.answerStopsMs)}`);
    if (c.toolStopsMs !== null) lines.push(`    cancel → tool stopped  ${latencyLine(c.toolStopsMs)} (${c.toolStopped} tools answered)`);
  }
  const kinds = Object.entries(s.errors.byKind).map(([k, n]) => `${k}: ${n}`).join(', ');
  lines.push(`  errors        ${s.errors.total} (${(s.errors.rate * 100).toFixed(2)} %)${kinds === '' ? '' : `  ${kinds}`}`);
  for (const [k, d] of Object.entries(s.errors.details)) lines.push(`    ${k}: ${d}`);
  if (s.progressNotifications > 0) lines.push(`  progress      ${s.progressNotifications} notifications`);
  lines.push(`  bytes         in ${bytes(s.bytesIn)}, out ${bytes(s.bytesOut)}`);
  lines.push(`  generator CPU ${s.generator.cpuPercent} % of one core, ${s.generator.cpuUsPerRequest} µs a request${s.generator.bottleneck ? '  (warning: the generator, not the server, may be the bottleneck; try --threads)' : ''}`);
  return `${lines.join('\n')}\n`;
}
