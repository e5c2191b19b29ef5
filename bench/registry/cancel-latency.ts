/**
 * Phase 6: cross-thread cancel → observed latency. A worker thread (cancel-latency-worker.ts)
 * adopts each tracked request and either spins on `h.cancelled` (polling) or waits for `h.signal`;
 * the main thread stamps the time just before `reg.cancel`. No side effects on import.
 */
import { Worker } from 'node:worker_threads';
import { createRegistry } from '../../src/index.js';
import type { Registry } from '../../src/index.js';
import { distribution, summarize } from '../lib/stats.js';
import type { Distribution, Summary } from '../lib/stats.js';
import type { FromWorker, ToWorker, WorkerInit } from './cancel-latency-worker.js';
import { kCancelWarmup, kLatencyRounds, kLatencyWarmup, kPollSamples, kScope, kSignalSamples } from './config.js';
import { Inbox, exitOf, stopWorker } from './inbox.js';

export interface LatencyMode {
  mode: 'poll' | 'signal' | 'floor';
  samplesPerRound: number;
  rounds: Distribution[];
  p50Us: Summary;
  p99Us: Summary;
  /** Per-round p99.9 (2000 or 1000 samples a round: thin); the reported figure is `pooled.p999`. */
  p999Us: Summary;
  pooled: Distribution;
  /** How long `reg.cancel` itself took in the main thread (part of every sample). */
  cancelCallUs: Distribution;
  /** From `reg.cancel` returning to the worker's stamp (negative when the worker saw it first). */
  afterReturnUs: Distribution;
  timedOut: number;
}

export interface LatencyResults {
  clock: string;
  /** The process's first polling cancels, before `reg.cancel` has been optimised. */
  coldPolling: { samples: number; seen: Distribution; cancelCall: Distribution };
  polling: LatencyMode;
  signal: LatencyMode;
  /**
   * The same rounds, interleaved with the polling ones, where the main thread only sets a word the
   * worker spins on (one Atomics.store, no registry): what "cancel → observed" costs on this machine
   * before any cancel code runs (waking from the event loop, the store, the cache line's trip).
   */
  floor: LatencyMode;
}

async function latencyRound(
  reg: Registry, worker: Worker, inbox: Inbox<FromWorker>, mode: 'poll' | 'signal' | 'floor', count: number, nextId: () => number, floorWord: Int32Array,
): Promise<{ micros: number[]; cancelMicros: number[]; afterMicros: number[]; timedOut: number }> {
  const micros: number[] = [];
  const cancelMicros: number[] = [];
  const afterMicros: number[] = [];
  let timedOut = 0;
  for (let i = 0; i < count; i++) {
    const id = nextId();
    const h = reg.track(id, kScope);
    if (!h.ok) throw new Error(`track refused: ${h.error}`);
    const message: ToWorker = mode === 'floor' ? { type: 'floor' } : { type: mode, ref: h.ref };
    Atomics.store(floorWord, 0, 0);
    worker.postMessage(message);
    await inbox.expect('ready');
    const t0 = process.hrtime.bigint();
    const result = mode === 'floor' ? (Atomics.store(floorWord, 0, 1), kFloorOk) : reg.cancel(id, 'bench', kScope);
    const t1 = process.hrtime.bigint();
    if (!result.ok) throw new Error(`cancel refused: ${result.error}`);
    const seen = await inbox.expect('seen');
    if (seen.timedOut) timedOut++;
    micros.push(Number(seen.at - t0) / 1000);
    cancelMicros.push(Number(t1 - t0) / 1000);
    afterMicros.push(Number(seen.at - t1) / 1000);
    reg.untrack(h);
    reg.clear(id, kScope);
  }
  return { micros, cancelMicros, afterMicros, timedOut };
}

const kFloorOk = { ok: true } as const;

function warmCancelPath(reg: Registry): void {
  for (let i = 0; i < kCancelWarmup; i++) {
    const id = 3_000_000 + (i & 1023);
    const h = reg.track(id, kScope);
    if (!h.ok) throw new Error(`track refused: ${h.error}`);
    if (!reg.cancel(id, 'warm-up', kScope).ok) throw new Error('warm-up cancel refused');
    reg.untrack(h);
    reg.clear(id, kScope);
  }
}

export async function benchLatency(): Promise<LatencyResults> {
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const floorWord = new Int32Array(new SharedArrayBuffer(64));
  const init: WorkerInit = { descriptor: reg.descriptor, floorWord: floorWord.buffer as SharedArrayBuffer };
  const worker = new Worker(new URL('./cancel-latency-worker.js', import.meta.url), { workerData: init });
  reg.watch(worker);
  const exited = exitOf(worker);
  const inbox = new Inbox<FromWorker>(worker);
  await new Promise<void>((resolve, reject) => {
    worker.once('online', resolve);
    worker.once('error', reject);
  });
  let id = 1_000_000;
  const nextId = (): number => id++;

  type Mode = 'poll' | 'signal' | 'floor';
  /** Rounds of each mode, interleaved (mode A round 1, mode B round 1, A round 2, ...), after a warm-up of each. */
  const run = async (modes: readonly Mode[], perRound: number): Promise<LatencyMode[]> => {
    for (const mode of modes) await latencyRound(reg, worker, inbox, mode, kLatencyWarmup, nextId, floorWord);
    const acc = modes.map(() => ({ rounds: [] as Distribution[], all: [] as number[], cancelAll: [] as number[], afterAll: [] as number[], timedOut: 0 }));
    for (let r = 0; r < kLatencyRounds; r++) {
      for (let k = 0; k < modes.length; k++) {
        const round = await latencyRound(reg, worker, inbox, modes[k]!, perRound, nextId, floorWord);
        const a = acc[k]!;
        a.rounds.push(distribution(round.micros));
        a.all.push(...round.micros);
        a.cancelAll.push(...round.cancelMicros);
        a.afterAll.push(...round.afterMicros);
        a.timedOut += round.timedOut;
      }
    }
    return modes.map((mode, k) => {
      const a = acc[k]!;
      return {
        mode,
        samplesPerRound: perRound,
        rounds: a.rounds,
        p50Us: summarize(a.rounds.map((d) => d.p50)),
        p99Us: summarize(a.rounds.map((d) => d.p99)),
        p999Us: summarize(a.rounds.map((d) => d.p999)),
        pooled: distribution(a.all),
        cancelCallUs: distribution(a.cancelAll),
        afterReturnUs: distribution(a.afterAll),
        timedOut: a.timedOut,
      };
    });
  };

  try {
    // First, as a real server meets its first cancels: nothing optimised yet.
    const cold = await latencyRound(reg, worker, inbox, 'poll', kPollSamples, nextId, floorWord);
    const coldPolling = { samples: cold.micros.length, seen: distribution(cold.micros), cancelCall: distribution(cold.cancelMicros) };
    warmCancelPath(reg);
    const [polling, floor] = await run(['poll', 'floor'], kPollSamples);
    const [signal] = await run(['signal'], kSignalSamples);
    return { clock: 'process.hrtime.bigint() in both threads (one CLOCK_MONOTONIC)', coldPolling, polling: polling!, signal: signal!, floor: floor! };
  } finally {
    await stopWorker<ToWorker>(worker, exited, { type: 'stop' });
  }
}
