/**
 * Phase 7 (S5): two worker threads (contention-worker.ts) on one table, against one thread alone:
 * shared lookups, insert+delete of disjoint keys, and a hot window of neighbouring homes. After
 * every run the main thread checks the table. No side effects on import.
 */
import { Worker } from 'node:worker_threads';
import { KeyScratch } from '../../native-free-shm/index.js';
import type { ShmTable } from '../../native-free-shm/index.js';
import { otherCpu } from '../lib/machine.js';
import { summarize } from '../lib/stats.js';
import type { Summary } from '../lib/stats.js';
import {
  kContentionHotPairs, kContentionLookups, kContentionPairs, kContentionReps, kFill, kHotHomes, kHotKeysPerThread, kKeyBytes, kMaxKeyBytes, kPairKeys,
} from './config.js';
import type { ContentionInit, ContentionKernel, FromContention, ToContention } from './contention-worker.js';
import { Inbox, exitOf, stopWorker } from './inbox.js';
import { keyString, makeRng, shuffledOrder, writeKey } from './keys.js';
import type { PreparedKeys } from './keys.js';
import { createTable, fillTable, now } from './table.js';

export interface ContentionKernelResult {
  kernel: ContentionKernel;
  label: string;
  opsPerThreadPerRep: number;
  /** Thread A alone, ops/s of its own timed loop (same run, reps interleaved with the 2-thread reps). */
  oneThread: Summary;
  /** Each thread's ops/s over its own timed loop while both ran: [A, B]. */
  perThread: [Summary, Summary];
  /** Both threads' ops ÷ the wall span from the first start to the last end. */
  total: Summary;
  /** total.median ÷ oneThread.median. */
  totalVsOneThread: number;
  /** Share of the wall span during which both threads were running (1 = fully overlapped). */
  overlap: Summary;
  /** |start A - start B| after the barrier, µs. */
  startSkewUs: Summary;
  /**
   * CPU that other processes (and the hypervisor, as steal) used meanwhile, in cores, averaged over
   * this kernel's runs (warm-up and checks included); null where /proc/stat is missing. On a
   * 2-core machine anything near 1 leaves the two threads one core between them.
   */
  otherCpuCores: number | null;
}

export interface ContentionResults {
  threads: 2;
  reps: number;
  slots: number;
  rows: number;
  /** Keys of the hot-window run: all their homes lie in [firstHome, firstHome + homes). */
  hotWindow: { firstHome: number; homes: number; keysPerThread: number; candidatesHashed: number };
  lookups: ContentionKernelResult;
  insertDelete: ContentionKernelResult;
  hotInsertDelete: ContentionKernelResult;
  /** Table checks passed (verify + live count + every live key found with its value), one per run. */
  checks: number;
  seconds: number;
}

type Done = Extract<FromContention, { type: 'done' }>;

/**
 * After every run, from the main thread with both workers idle: no structural problem, exactly
 * the fill rows live, and each of them found once with its own value.
 */
function checkContendedTable(t: ShmTable, live: PreparedKeys, where: string): void {
  const problems = t.verify();
  if (problems.length > 0) {
    throw new Error(`S5 contention: table.verify() after ${where}: ${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`);
  }
  const count = t.countLive();
  if (count !== kFill) throw new Error(`S5 contention: ${count} live rows after ${where}, expected ${kFill}`);
  for (let i = 0; i < kFill; i++) {
    const slot = t.find(live.words[i], live.lengths[i], live.hashes[i]);
    if (slot < 0) throw new Error(`S5 contention: live key ${i} not found after ${where}`);
    const value = t.i32[t.valueIndex(slot)];
    if (value !== i) throw new Error(`S5 contention: live key ${i} (slot ${slot}) holds value ${value} after ${where}`);
    if (t.next() >= 0) throw new Error(`S5 contention: live key ${i} found twice after ${where}`);
  }
}

export async function benchContention(): Promise<ContentionResults> {
  const began = now();
  const { roster, member, t } = createTable(8);

  // The same fill as the single-thread phases: keys 0..kFill-1, value = key number.
  const { liveStrings, live } = fillTable(t, member);

  // Disjoint insert+delete keys: A takes kFill.., B the next kPairKeys.
  let nextCounter = kFill;
  const pairStrings: string[][] = [[], []];
  for (const keys of pairStrings) for (let i = 0; i < kPairKeys; i++) keys.push(keyString(nextCounter++));

  // Hot window: fresh keys whose homes all lie in kHotHomes neighbouring slots, dealt alternately
  // to A and B, so the two writers keep claiming (and racing for) the same few cache lines.
  const home = (hash: number): number => Math.floor(((hash >>> 0) * t.slots) / 4294967296);
  const firstHome = t.slots >>> 1;
  const hotStrings: string[][] = [[], []];
  const scratch = new KeyScratch(kMaxKeyBytes);
  let candidates = 0;
  while (hotStrings[1].length < kHotKeysPerThread) {
    const c = nextCounter++;
    candidates++;
    writeKey(scratch, c);
    const h = home(t.hash(scratch.words, kKeyBytes));
    if (h >= firstHome && h < firstHome + kHotHomes) hotStrings[hotStrings[0].length > hotStrings[1].length ? 1 : 0].push(keyString(c));
  }

  const barrier = new Int32Array(new SharedArrayBuffer(64));
  const workers: Worker[] = [];
  const exits: Array<Promise<void>> = [];
  const inboxes: Array<Inbox<FromContention>> = [];
  try {
    for (let index = 0; index < 2; index++) {
      const init: ContentionInit = {
        index,
        table: t.descriptor,
        roster: roster.descriptor,
        barrier,
        maxKeyBytes: kMaxKeyBytes,
        liveKeys: liveStrings,
        lookupOrder: shuffledOrder(kFill, makeRng(0x5c0a7e00 + index)),
        pairKeys: pairStrings[index],
        hotKeys: hotStrings[index],
      };
      const worker = new Worker(new URL('./contention-worker.js', import.meta.url), { workerData: init });
      roster.watch(worker);
      workers.push(worker);
      exits.push(exitOf(worker));
      inboxes.push(new Inbox<FromContention>(worker));
    }
    const ready = await Promise.all(inboxes.map((inbox) => inbox.expect('ready')));
    if (ready[0].rosterIndex === ready[1].rosterIndex || ready.some((r) => r.rosterIndex === member.index)) {
      throw new Error(`S5 contention: roster indices not distinct (main ${member.index}, workers ${ready.map((r) => r.rosterIndex).join(', ')})`);
    }
    checkContendedTable(t, live, 'the fill');

    let arrivals = 0;
    let checks = 0;
    const run = async (kernel: ContentionKernel, count: number, threads: 1 | 2): Promise<Done[]> => {
      arrivals += threads;
      const message: ToContention = { type: 'run', kernel, count, target: arrivals };
      for (let w = 0; w < threads; w++) workers[w].postMessage(message);
      const done = await Promise.all(inboxes.slice(0, threads).map((inbox) => inbox.expect('done')));
      for (const d of done) {
        if (d.kernel !== kernel || d.ops !== count) throw new Error(`S5 contention: unexpected answer ${d.kernel}/${d.ops}`);
        if (kernel === 'lookups' && d.hits !== count) {
          throw new Error(`S5 contention: ${count - d.hits} of ${count} lookups missed (${threads} thread(s))`);
        }
      }
      checkContendedTable(t, live, `${kernel} on ${threads} thread(s)`);
      checks++;
      return done;
    };

    const measure = async (kernel: ContentionKernel, label: string, count: number): Promise<ContentionKernelResult> => {
      const others = otherCpu();
      // Warm-up: both threads at full length (so the kernels are optimized in both), then A alone.
      await run(kernel, count, 2);
      await run(kernel, count / 4, 1);
      const one: number[] = [];
      const each: [number[], number[]] = [[], []];
      const total: number[] = [];
      const overlap: number[] = [];
      const skew: number[] = [];
      const single = async (): Promise<void> => {
        const [a] = await run(kernel, count, 1);
        one.push(count / (Number(a.endNs - a.startNs) / 1e9));
      };
      const pair = async (): Promise<void> => {
        const [a, b] = await run(kernel, count, 2);
        each[0].push(count / (Number(a.endNs - a.startNs) / 1e9));
        each[1].push(count / (Number(b.endNs - b.startNs) / 1e9));
        const first = a.startNs < b.startNs ? a.startNs : b.startNs;
        const last = a.endNs > b.endNs ? a.endNs : b.endNs;
        const lateStart = a.startNs > b.startNs ? a.startNs : b.startNs;
        const earlyEnd = a.endNs < b.endNs ? a.endNs : b.endNs;
        const span = Number(last - first);
        total.push((2 * count) / (span / 1e9));
        overlap.push(Math.max(0, Number(earlyEnd - lateStart)) / span);
        skew.push(Number(lateStart - first) / 1000);
      };
      for (let r = 0; r < kContentionReps; r++) {
        // Alternate which comes first, so a drift in machine conditions hits both alike.
        if (r % 2 === 0) {
          await single();
          await pair();
        } else {
          await pair();
          await single();
        }
      }
      const oneThread = summarize(one);
      const totalSummary = summarize(total);
      return {
        kernel,
        label,
        opsPerThreadPerRep: count,
        oneThread,
        perThread: [summarize(each[0]), summarize(each[1])],
        total: totalSummary,
        totalVsOneThread: totalSummary.median / oneThread.median,
        overlap: summarize(overlap),
        startSkewUs: summarize(skew),
        otherCpuCores: others(),
      };
    };

    const lookups = await measure('lookups', 'lookups (hit, same keys)', kContentionLookups);
    const insertDelete = await measure('insert-delete', 'insert+delete pairs (own keys)', kContentionPairs);
    const hotInsertDelete = await measure('hot-insert-delete', `insert+delete pairs, ${kHotHomes}-slot hot window`, kContentionHotPairs);

    return {
      threads: 2,
      reps: kContentionReps,
      slots: t.slots,
      rows: kFill,
      hotWindow: { firstHome, homes: kHotHomes, keysPerThread: kHotKeysPerThread, candidatesHashed: candidates },
      lookups,
      insertDelete,
      hotInsertDelete,
      checks,
      seconds: (now() - began) / 1000,
    };
  } finally {
    // A worker still spinning at the barrier (its partner failed) cannot read 'stop': stopWorker terminates it.
    await Promise.all(workers.map((worker, w) => stopWorker<ToContention>(worker, exits[w], { type: 'stop' })));
  }
}
