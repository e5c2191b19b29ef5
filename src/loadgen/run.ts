/**
 * One measured run over worker threads, and the interleaved rounds of `--repeats` and
 * `--compare`: probe, start the threads with their share of the connections (and of the rate),
 * start them together, print the live line on a terminal, merge what they counted.
 */
import { Worker } from 'node:worker_threads';
import type { BenchOptions } from './options.js';
import { BenchUsageError, probe } from './probe.js';
import type { Snapshot } from './recorder.js';
import { merge } from './summary.js';
import type { BenchSummary } from './summary.js';
import type { WorkerInput } from './targets.js';

export interface RunIo {
  /** Where the live line goes (a TTY only; nothing otherwise). */
  live?: NodeJS.WriteStream;
}

/**
 * Threads by default: one. A thread keeps one core busy and a load run wants the other cores for
 * the server; the summary warns when that thread was the bottleneck (then raise --threads).
 */
export function defaultThreads(): number {
  return 1;
}

type FromWorker = { type: 'ready' } | { type: 'open-failed'; message: string } | { type: 'tick'; requests: number; errors: number } | { type: 'done'; snapshot: Snapshot };

/** One run against `options.target`. */
export async function runOnce(options: BenchOptions, io: RunIo = {}): Promise<BenchSummary> {
  const negotiated = await probe(options);
  const threads = Math.max(1, Math.min(options.threads, options.connections));
  const workers: Worker[] = [];
  const url = new URL('./worker.js', import.meta.url);
  try {
    const ready: Promise<void>[] = [];
    const done: Promise<Snapshot>[] = [];
    let requests = 0;
    let errors = 0;
    for (let i = 0; i < threads; i++) {
      const connections = Math.floor(options.connections / threads) + (i < options.connections % threads ? 1 : 0);
      const input: WorkerInput = {
        options, negotiated, connections,
        rate: options.rate === undefined ? undefined : (options.rate * connections) / options.connections,
        firstId: 1 + i * 1_000_000_000,
      };
      const worker = new Worker(url, { workerData: input });
      workers.push(worker);
      let onReady: () => void = () => {};
      let onFail: (error: Error) => void = () => {};
      let onDone: (s: Snapshot) => void = () => {};
      ready.push(new Promise<void>((resolve, reject) => { onReady = resolve; onFail = reject; }));
      done.push(new Promise<Snapshot>((resolve, reject) => {
        onDone = resolve;
        worker.once('error', reject);
        worker.once('exit', (code) => reject(new Error(`a generator thread exited (${code}) before it finished`)));
      }));
      worker.on('message', (m: FromWorker) => {
        if (m.type === 'ready') onReady();
        else if (m.type === 'open-failed') onFail(new BenchUsageError(`could not open the connections: ${m.message}`));
        else if (m.type === 'tick') { requests += m.requests; errors += m.errors; }
        else onDone(m.snapshot);
      });
      worker.once('error', (error) => onFail(error));
    }
    for (const d of done) d.catch(() => {}); // awaited below; a thread that fails early rejects ready too
    await Promise.all(ready);
    const startEpochMs = performance.timeOrigin + performance.now() + 50;
    const cpu0 = process.cpuUsage();
    const wall0 = performance.now();
    for (const w of workers) w.postMessage({ startEpochMs });
    let live: ReturnType<typeof setInterval> | undefined;
    if (io.live?.isTTY === true) {
      const began = performance.now() + 50;
      let last = 0;
      live = setInterval(() => {
        const elapsed = (performance.now() - began) / 1000;
        const phase = elapsed < options.warmupMs / 1000 ? 'warm-up' : 'run';
        io.live!.write(`\r\x1b[K${phase} ${elapsed.toFixed(0)} s  requests ${requests}  rate ${requests - last}/s  errors ${errors}`);
        last = requests;
      }, 1000);
    }
    let snapshots: Snapshot[];
    try {
      snapshots = await Promise.all(done);
    } finally {
      if (live !== undefined) {
        clearInterval(live);
        io.live!.write('\r\x1b[K');
      }
    }
    const cpu = process.cpuUsage(cpu0);
    const wallUs = (performance.now() - wall0) * 1000;
    return merge(snapshots, { options, negotiated, threads, cpuUs: cpu.user + cpu.system, wallUs });
  } finally {
    await Promise.all(workers.map((w) => w.terminate()));
  }
}

/** A median with its min–max over the rounds. */
export interface Spread { median: number; min: number; max: number }

function spread(xs: number[]): Spread {
  const s = [...xs].sort((a, b) => a - b);
  const median = s.length % 2 === 1 ? s[(s.length - 1) >> 1]! : (s[s.length / 2 - 1]! + s[s.length / 2]!) / 2;
  const r = (v: number): number => Math.round(v * 1000) / 1000;
  return { median: r(median), min: r(s[0]!), max: r(s[s.length - 1]!) };
}

/** The figures compared, by name, as taken from a summary. */
export const kFigures: Record<string, (s: BenchSummary) => number> = {
  requestsPerSecond: (s) => s.requestsPerSecond,
  p50Ms: (s) => s.latencyMs.p50,
  p90Ms: (s) => s.latencyMs.p90,
  p99Ms: (s) => s.latencyMs.p99,
  p999Ms: (s) => s.latencyMs.p999,
  maxMs: (s) => s.latencyMs.max,
  errorRate: (s) => s.errors.rate,
};

export interface CompareResult {
  a: string;
  b: string;
  repeats: number;
  /** Each round's two runs (a ran first in odd rounds, b in even ones). */
  rounds: { a: BenchSummary; b: BenchSummary }[];
  /** b / a per figure, over the rounds. */
  ratios: Record<string, Spread>;
  /** Each side's figure over the rounds. */
  figures: { a: Record<string, Spread>; b: Record<string, Spread> };
}

/** Interleaved rounds of two targets; the order alternates so neither always runs on a warmer machine. */
export async function runCompare(a: BenchOptions, b: BenchOptions, repeats: number, io: RunIo = {}): Promise<CompareResult> {
  // Both probed first: a second server that cannot take the load is refused before the first is loaded.
  await probe(a);
  await probe(b);
  const rounds: { a: BenchSummary; b: BenchSummary }[] = [];
  for (let i = 0; i < repeats; i++) {
    if (i % 2 === 0) {
      const ra = await runOnce(a, io);
      rounds.push({ a: ra, b: await runOnce(b, io) });
    } else {
      const rb = await runOnce(b, io);
      rounds.push({ a: await runOnce(a, io), b: rb });
    }
  }
  const ratios: Record<string, Spread> = {};
  const figures = { a: {} as Record<string, Spread>, b: {} as Record<string, Spread> };
  for (const [name, get] of Object.entries(kFigures)) {
    figures.a[name] = spread(rounds.map((r) => get(r.a)));
    figures.b[name] = spread(rounds.map((r) => get(r.b)));
    const pairs = rounds.map((r) => get(r.b) / get(r.a)).filter((x) => Number.isFinite(x));
    if (pairs.length > 0) ratios[name] = spread(pairs);
  }
  return { a: rounds[0]!.a.target, b: rounds[0]!.b.target, repeats, rounds, ratios, figures };
}

/** `--repeats` without `--compare`: the rounds and each figure's spread. */
export async function runRepeats(options: BenchOptions, repeats: number, io: RunIo = {}): Promise<{ rounds: BenchSummary[]; figures: Record<string, Spread> }> {
  const rounds: BenchSummary[] = [];
  for (let i = 0; i < repeats; i++) rounds.push(await runOnce(options, io));
  const figures: Record<string, Spread> = {};
  for (const [name, get] of Object.entries(kFigures)) figures[name] = spread(rounds.map(get));
  return { rounds, figures };
}
