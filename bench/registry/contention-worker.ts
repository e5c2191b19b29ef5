/**
 * Worker side of S5 "two contending threads", bench/registry/contention.ts.
 *
 * The main thread creates one ShmTable, fills it, and starts two of these workers. Each attaches
 * the same table through its descriptor, joins the roster, and prepares its keys (words, length,
 * hash). For every run the main thread posts `run`; the worker counts itself in at a start barrier
 * in shared memory and waits (spin, then Atomics.wait) until every thread of the run has arrived,
 * so the threads start together (the main thread records the skew), then times the kernel itself with
 * `process.hrtime.bigint()` (one CLOCK_MONOTONIC for every thread, so the main thread can also
 * compute the wall span from the first start to the last end).
 *
 * The kernels are the loops the single-thread phases time (kernels.ts).
 */
import { parentPort, workerData } from 'node:worker_threads';
import { Roster, ShmTable } from '../../native-free-shm/index.js';
import type { RosterDescriptor, TableDescriptor } from '../../native-free-shm/index.js';
import { findAll, insertDeleteAll } from './kernels.js';
import { prepareKeys } from './keys.js';

export type ContentionKernel = 'lookups' | 'insert-delete' | 'hot-insert-delete';

export interface ContentionInit {
  /** 0 or 1: thread A or B. */
  readonly index: number;
  readonly table: TableDescriptor;
  readonly roster: RosterDescriptor;
  /** Over a SharedArrayBuffer: word 0 counts every arrival at the start barrier since creation. */
  readonly barrier: Int32Array;
  readonly maxKeyBytes: number;
  /** Keys that are live in the table (the same set for both threads): read sharing. */
  readonly liveKeys: readonly string[];
  /** This thread's shuffled order over `liveKeys` (power-of-two length). */
  readonly lookupOrder: Uint32Array;
  /** This thread's own keys for insert+delete, never in the table otherwise (power-of-two count). */
  readonly pairKeys: readonly string[];
  /** This thread's own keys whose homes all lie in one small window shared with the other thread. */
  readonly hotKeys: readonly string[];
}

export type ToContention =
  | { readonly type: 'run'; readonly kernel: ContentionKernel; readonly count: number; readonly target: number }
  | { readonly type: 'stop' };

export type FromContention =
  | { readonly type: 'ready'; readonly rosterIndex: number }
  | {
    readonly type: 'done';
    readonly kernel: ContentionKernel;
    readonly ops: number;
    /** Lookups that found a row (lookups only; equals `ops` when sound). */
    readonly hits: number;
    readonly startNs: bigint;
    readonly endNs: bigint;
  }
  | { readonly type: 'error'; readonly message: string };

/** How long a thread waits at the start barrier before giving up (the other thread died). */
const kBarrierLimitMs = 10_000;

/** Spins before parking at the barrier: long enough for a partner already on its way (tens of µs). */
const kBarrierSpins = 1 << 14;

/**
 * Counts this thread in and returns once `target` arrivals have been counted. Spins first (a
 * partner already running arrives within microseconds, and both leave together); then parks in
 * Atomics.wait, so that a partner the scheduler queued on this thread's core can run (pure
 * spinning cost a whole time slice, ~4 ms, now and then). The last arrival wakes the parked.
 */
function barrier(word: Int32Array, target: number): void {
  let seen = Atomics.add(word, 0, 1) + 1;
  if (seen >= target) {
    Atomics.notify(word, 0);
    return;
  }
  const deadline = performance.now() + kBarrierLimitMs;
  for (let spins = 0; ; spins++) {
    seen = Atomics.load(word, 0);
    if (seen >= target) return;
    if (spins >= kBarrierSpins) {
      Atomics.wait(word, 0, seen, 1);
      if (performance.now() > deadline) {
        throw new Error(`start barrier: ${Atomics.load(word, 0)} of ${target} arrivals after ${kBarrierLimitMs} ms`);
      }
    }
  }
}

const port = parentPort;
if (port === null) throw new Error('contention-worker.js must run in a worker thread');
const init = workerData as ContentionInit;

function send(message: FromContention): void {
  port?.postMessage(message);
}

try {
  const roster = Roster.attach(init.roster);
  const table = ShmTable.attach(init.table, roster);
  const member = roster.join();
  const live = prepareKeys(table, init.liveKeys, init.maxKeyBytes);
  const pairs = prepareKeys(table, init.pairKeys, init.maxKeyBytes);
  const hot = prepareKeys(table, init.hotKeys, init.maxKeyBytes);
  const order = init.lookupOrder;

  port.on('message', (raw: unknown) => {
    const message = raw as ToContention;
    try {
      if (message.type === 'stop') {
        port.close();
        return;
      }
      const { kernel, count, target } = message;
      barrier(init.barrier, target);
      let hits = 0;
      const startNs = process.hrtime.bigint();
      if (kernel === 'lookups') hits = findAll(table, live, order, count);
      else if (kernel === 'insert-delete') insertDeleteAll(table, member, pairs, count);
      else insertDeleteAll(table, member, hot, count);
      const endNs = process.hrtime.bigint();
      send({ type: 'done', kernel, ops: count, hits, startNs, endNs });
    } catch (error) {
      send({ type: 'error', message: `thread ${init.index}: ${error instanceof Error ? error.message : String(error)}` });
    }
  });
  send({ type: 'ready', rosterIndex: member.index });
} catch (error) {
  send({ type: 'error', message: `thread ${init.index} setup: ${error instanceof Error ? error.message : String(error)}` });
}
