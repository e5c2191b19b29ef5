/**
 * The slow-reader soak's phases (A baseline, B reading, C stalled) on one server process: the load
 * of each, the server watched meanwhile (RSS every second and against the bound every 250 ms,
 * /metrics every second, CPU time), and what a phase reports. No side effects on import.
 */
import { cpuSeconds, rssMb } from '../lib/machine.js';
import { metricValue, metricsText } from '../lib/http-client.js';
import type { Running } from '../lib/process.js';
import { pct } from '../lib/stats.js';
import { attacker, cancelLegacyCalls, echoLoad, legacySession, sleep } from './load.js';
import type { AttackMode, AttackStats, AttackerPlan, Options } from './load.js';

/** The /metrics series this benchmark reports (added with the backpressure work; may be absent). */
export const kSeries = ['sluice_stream_buffered_bytes', 'sluice_progress_coalesced_total', 'sluice_logs_dropped_total', 'sluice_slow_readers_closed_total', 'sluice_client_limited_total', 'sluice_requests_in_flight'] as const;
export type Series = (typeof kSeries)[number];
export type Metrics = Partial<Record<Series, number>>;

/** The series of kSeries that /metrics has (a series it lacks stays undefined: "missing"). */
async function readMetrics(port: number): Promise<Metrics> {
  const text = await metricsText(port, 2000);
  const out: Metrics = {};
  for (const name of kSeries) {
    const v = metricValue(text, name);
    if (v !== undefined) out[name] = v;
  }
  return out;
}

// ---------------------------------------------------------------------------------------------
// Watching the server: RSS and /metrics every second, the RSS bound every 250 ms

interface Watch {
  /** When the phase started (Date.now()), to place it on the run's timeline. */
  startedAt: number;
  /** [seconds since the phase started, RSS MB] once a second. */
  rss: [number, number][];
  metrics: { t: number; values: Metrics }[];
  startRssMb: number;
  peakRssMb: number;
  /** Seconds into the phase when RSS growth passed the bound, if it did. */
  boundExceededAt: number | undefined;
  stop(): void;
}

function watchServer(server: Running, boundMb: number, abort: AbortController): Watch {
  const t0 = Date.now();
  const at = () => (Date.now() - t0) / 1000;
  const start = rssMb(server.pid);
  const w: Watch = { startedAt: t0, rss: [[0, start]], metrics: [], startRssMb: start, peakRssMb: start, boundExceededAt: undefined, stop: () => {} };
  const guard = setInterval(() => {
    const now = rssMb(server.pid);
    if (now > w.peakRssMb) w.peakRssMb = now;
    if (w.boundExceededAt === undefined && now - start > boundMb) {
      w.boundExceededAt = at();
      w.rss.push([w.boundExceededAt, now]);
      abort.abort(); // stop the attack now: an unbounded server would otherwise eat the machine
    }
  }, 250);
  let reading = false;
  const sampler = setInterval(() => {
    w.rss.push([at(), rssMb(server.pid)]);
    if (reading) return; // a /metrics read still waiting on a busy worker: skip, do not pile up
    reading = true;
    const t = at();
    readMetrics(server.port).then((values) => { w.metrics.push({ t, values }); }, () => undefined).finally(() => { reading = false; });
  }, 1000);
  w.stop = () => { clearInterval(guard); clearInterval(sampler); };
  return w;
}

// ---------------------------------------------------------------------------------------------
// Phases

export type PhaseName = 'baseline' | 'reading' | 'stalled';
export const kPhases: { name: PhaseName; letter: string; label: string; color: string }[] = [
  { name: 'baseline', letter: 'A', label: 'A baseline (echo only)', color: '#2f6db5' },
  { name: 'reading', letter: 'B', label: 'B reading (flood, streams drained)', color: '#27ae60' },
  { name: 'stalled', letter: 'C', label: 'C stalled (flood, readers stopped)', color: '#c0392b' },
];

export interface PhaseResult {
  name: PhaseName;
  /** Seconds from the first phase's start to this one's (the SVG's timeline). */
  offsetS: number;
  echo: { calls: number; errors: number; wrong: number; seconds: number; rps: number; p50ms: number; p99ms: number; maxMs: number };
  rss: { startMb: number; peakMb: number; endMb: number; growthMb: number; settledMb: number | undefined; samples: [number, number][] };
  /** CPU seconds per wall second over the phase (ramp included): the server (pinned to CPU 1, so 1 = saturated) and this load generator (CPU 0). */
  cpu: { wallS: number; server: number; generator: number };
  boundExceededAt: number | undefined;
  attack: (Omit<AttackStats, 'legacyCalls'> & { mode: AttackMode; legacyCalls: number }) | undefined;
  /** Peak of the gauges, change of the counters over the phase; null: the series is missing. */
  metrics: Record<Series, number | null>;
  serverDied: boolean;
}

function summarizeMetrics(before: Metrics, samples: { values: Metrics }[], after: Metrics): Record<Series, number | null> {
  const out = {} as Record<Series, number | null>;
  for (const name of kSeries) {
    const seen = [before, ...samples.map((s) => s.values), after].map((m) => m[name]).filter((v): v is number => v !== undefined);
    if (seen.length === 0) { out[name] = null; continue; }
    // Gauges: the peak seen in the phase. Counters: how much they grew over it.
    out[name] = name.endsWith('_total') ? (after[name] ?? Math.max(...seen)) - (before[name] ?? 0) : Math.max(...seen);
  }
  return out;
}

async function safeMetrics(port: number): Promise<Metrics> {
  return readMetrics(port).catch(() => ({}));
}

/**
 * Runs one phase: the echo load for `o.seconds`, with (B, C) the attackers in `mode` started 1 s
 * before it. After an attack phase the legacy floods are cancelled and the server is given a moment
 * (in-flight back to 0, then 2 s) before its RSS is read again and the next phase starts.
 */
export async function runPhase(name: PhaseName, server: Running, o: Options, firstStart: number | undefined, mode: AttackMode | undefined): Promise<PhaseResult> {
  const attackers = mode === undefined ? 0 : o.attackers;
  const abort = new AbortController();
  let serverDied = false;
  const onExit = () => { serverDied = true; abort.abort(); };
  server.child.once('exit', onExit);
  const before = await safeMetrics(server.port);
  const plans: AttackerPlan[] = [];
  for (let i = 0; i < attackers; i++) {
    plans.push(i % 2 === 0 ? { index: i, era: 'legacy', session: await legacySession(server.port) } : { index: i, era: 'modern' });
  }
  const cpuServer0 = cpuSeconds(server.pid);
  const cpuSelf0 = process.cpuUsage();
  const wall0 = performance.now();
  const watch = watchServer(server, o.rssBoundMb, abort);
  const rampMs = attackers > 0 ? 1000 : 0;
  const untilMs = Date.now() + rampMs + o.seconds * 1000;
  const stats: AttackStats = { connects: 0, streaming: 0, refused: 0, closedByServer: 0, completed: 0, bytesRead: 0, legacyCalls: [] };
  const ids = { next: 1_000_000 };
  const attack = Promise.all(plans.map((p) => attacker(server.port, p, mode!, o.floodMode, untilMs, stats, abort.signal, ids)));
  if (rampMs > 0) await sleep(rampMs); // let the attackers' streams (and in C their buffers) get going first
  const echo = abort.signal.aborted ? { latenciesMs: [], ok: 0, errors: 0, wrong: 0, seconds: 0 } : await echoLoad(server.port, o.clients, untilMs, abort.signal);
  abort.abort(); // ends the attackers (they hang up) if the echo load finished first
  await attack;
  const endRss = rssMb(server.pid);
  const wallS = (performance.now() - wall0) / 1000;
  const cpuServer = (cpuSeconds(server.pid) - cpuServer0) / wallS;
  const self = process.cpuUsage(cpuSelf0);
  const after = serverDied ? {} : await safeMetrics(server.port);
  watch.stop();
  // After the attack: stop the legacy floods, then give the server a moment and see what RSS it keeps.
  let settledMb: number | undefined;
  if (attackers > 0 && !serverDied) {
    await cancelLegacyCalls(server.port, stats.legacyCalls);
    for (let i = 0; i < 20 && (await safeMetrics(server.port)).sluice_requests_in_flight !== 0; i++) await sleep(250);
    await sleep(2000);
    settledMb = rssMb(server.pid);
  }
  server.child.off('exit', onExit);
  const l = echo.latenciesMs;
  return {
    name,
    offsetS: (watch.startedAt - (firstStart ?? watch.startedAt)) / 1000,
    echo: { calls: echo.ok, errors: echo.errors, wrong: echo.wrong, seconds: echo.seconds, rps: echo.ok / Math.max(1e-9, echo.seconds), p50ms: pct(l, 50), p99ms: pct(l, 99), maxMs: l.reduce((x, y) => Math.max(x, y), -Infinity) },
    rss: { startMb: watch.startRssMb, peakMb: Math.max(watch.peakRssMb, endRss || 0), endMb: endRss, growthMb: Math.max(watch.peakRssMb, endRss || 0) - watch.startRssMb, settledMb, samples: watch.rss },
    cpu: { wallS, server: cpuServer, generator: (self.user + self.system) / 1e6 / wallS },
    boundExceededAt: watch.boundExceededAt,
    attack: mode !== undefined ? { ...stats, mode, legacyCalls: stats.legacyCalls.length } : undefined,
    metrics: summarizeMetrics(before, watch.metrics, after),
    serverDied,
  };
}

/** A phase that did not run because the server died in an earlier one. */
export function notRun(name: PhaseName): PhaseResult {
  return {
    name, offsetS: NaN,
    echo: { calls: 0, errors: 0, wrong: 0, seconds: 0, rps: NaN, p50ms: NaN, p99ms: NaN, maxMs: NaN },
    rss: { startMb: NaN, peakMb: NaN, endMb: NaN, growthMb: NaN, settledMb: undefined, samples: [] },
    cpu: { wallS: 0, server: NaN, generator: NaN },
    boundExceededAt: undefined, attack: undefined,
    metrics: Object.fromEntries(kSeries.map((s) => [s, null])) as Record<Series, number | null>,
    serverDied: true,
  };
}
