/**
 * Floors measured beside the targets (info rows and bench/results/registry-limits.md): minimal
 * kernels that touch the same cache lines, or issue the same Atomics operations, as the table and
 * the registry do, with nothing else. Where a floor alone is near or above the budget a target
 * leaves, the target cannot be met by tuning the code around it. No side effects on import.
 */
import { summarize } from '../lib/stats.js';
import { kLookupsPerRep, kPairsPerRep, kReps } from './config.js';
import { findAll } from './kernels.js';
import { kPackedHash, kPackedStride } from './keys.js';
import { now } from './table.js';
import type { LookupPair, TableBench } from './table.js';

export interface LimitResults {
  /** ns per lookup, same keys, same shuffled order, reps interleaved. */
  lookupMapNs: number;
  lookupFindNs: number;
  /** Read the key's packed record and its home row's control word: the lines a hit must touch. */
  lookupTouchNs: number;
  /** The same plus the two Atomics.load a lookup needs (first read, re-validation). */
  lookupTouchAtomicNs: number;
  /** ns per insert+delete pair: the Map, the table (from the insert+delete phase), and CAS + store + CAS alone on the same rows. */
  pairMapNs: number;
  pairTableNs: number;
  pairAtomicsNs: number;
  /** CAS + store + CAS on 1024 rows of the registry's in-flight geometry, plus one 8-field object per request. */
  bookkeepingFloorNs: number;
  /** One Atomics op on a word in L1, in a loop. */
  atomicLoadNs: number;
  atomicStoreNs: number;
  atomicCasNs: number;
}

const kHeaderWords = 16;
/** An in-flight row of the registry: 2 value words, 520 key bytes, padded to whole lines. */
const kInFlightStride = 144;

function homeOf(hash: number, scale: number): number {
  return Math.floor((hash >>> 0) * scale);
}

function touch(w: Int32Array, stride: number, scale: number, packed: Int32Array, order: Uint32Array, total: number): number {
  const mask = order.length - 1;
  let sum = 0;
  for (let i = 0; i < total; i++) {
    const at = order[i & mask] * kPackedStride;
    sum += w[kHeaderWords + homeOf(packed[at + kPackedHash], scale) * stride];
  }
  return sum;
}

function touchAtomic(w: Int32Array, stride: number, scale: number, packed: Int32Array, order: Uint32Array, total: number): number {
  const mask = order.length - 1;
  let sum = 0;
  for (let i = 0; i < total; i++) {
    const at = order[i & mask] * kPackedStride;
    const m = kHeaderWords + homeOf(packed[at + kPackedHash], scale) * stride;
    sum += Atomics.load(w, m) + Atomics.load(w, m);
  }
  return sum;
}

function mapGets(m: Map<string, number>, strings: readonly string[], order: Uint32Array, total: number): number {
  const mask = order.length - 1;
  let hits = 0;
  for (let i = 0; i < total; i++) if (m.get(strings[order[i & mask]]) !== undefined) hits++;
  return hits;
}

/** CAS (claim) + store (publish) + CAS (remove) on the control word of each key's home row. */
function pairAtomics(w: Int32Array, stride: number, scale: number, packed: Int32Array, keys: number, total: number): number {
  const mask = keys - 1;
  for (let i = 0; i < total; i++) {
    const m = kHeaderWords + homeOf(packed[(i & mask) * kPackedStride + kPackedHash], scale) * stride;
    const c = w[m];
    Atomics.compareExchange(w, m, c, c + 1);
    Atomics.store(w, m, c + 2);
    Atomics.compareExchange(w, m, c + 2, c + 3);
  }
  return w[kHeaderWords];
}

class Slim {
  constructor(readonly a: object, readonly b: number, readonly c: number, readonly d: number, readonly e: string, public f: number, public g: unknown, public h: unknown) {}
}
let sink: Slim | undefined;

function bookkeepingFloor(w: Int32Array, total: number): number {
  for (let i = 0; i < total; i++) {
    const m = kHeaderWords + (i & 1023) * kInFlightStride;
    const c = w[m];
    Atomics.compareExchange(w, m, c, c + 1);
    Atomics.store(w, m, c + 2);
    sink = new Slim(w, i, c, m, 'scope', 0, undefined, undefined);
    Atomics.compareExchange(w, m, c + 2, c + 3);
  }
  return sink?.b ?? 0;
}

function opLoop(w: Int32Array, op: 0 | 1 | 2, total: number): number {
  let s = 0;
  if (op === 0) for (let i = 0; i < total; i++) s += Atomics.load(w, i & 15);
  else if (op === 1) for (let i = 0; i < total; i++) Atomics.store(w, i & 15, i);
  else for (let i = 0; i < total; i++) s += Atomics.compareExchange(w, i & 15, w[i & 15], i);
  return s;
}

function timeNs(total: number, run: () => number): number {
  const start = now();
  run();
  return ((now() - start) * 1e6) / total;
}

export function benchLimits(s: TableBench, insertDelete: LookupPair): LimitResults {
  const { t, m, live, order } = s;
  // A scratch buffer of the table's geometry: the kernels write control words, never the table's own.
  const stride = (t.ctlIndex(1) - t.ctlIndex(0));
  const scratch = new Int32Array(new SharedArrayBuffer((kHeaderWords + t.slots * stride) * 4));
  const scale = t.slots / 4294967296;
  const lookups = kLookupsPerRep / 2;
  const runs = { map: [] as number[], find: [] as number[], touch: [] as number[], atomic: [] as number[] };
  for (let r = 0; r <= kReps; r++) {
    const map = timeNs(lookups, () => mapGets(m, live.strings, order, lookups));
    const find = timeNs(lookups, () => findAll(t, live, order, lookups));
    const plain = timeNs(lookups, () => touch(scratch, stride, scale, live.packed, order, lookups));
    const atomic = timeNs(lookups, () => touchAtomic(scratch, stride, scale, live.packed, order, lookups));
    if (r === 0) continue; // warm-up
    runs.map.push(map);
    runs.find.push(find);
    runs.touch.push(plain);
    runs.atomic.push(atomic);
  }
  const pairKeys = 4096;
  const pairPacked = live.packed.subarray(0, pairKeys * kPackedStride);
  const pairs = kPairsPerRep / 4;
  const pairRuns: number[] = [];
  const bookRuns: number[] = [];
  const inFlight = new Int32Array(new SharedArrayBuffer((kHeaderWords + 1024 * kInFlightStride) * 4));
  for (let r = 0; r <= kReps; r++) {
    const pair = timeNs(pairs, () => pairAtomics(scratch, stride, scale, pairPacked, pairKeys, pairs));
    const book = timeNs(pairs, () => bookkeepingFloor(inFlight, pairs));
    if (r === 0) continue;
    pairRuns.push(pair);
    bookRuns.push(book);
  }
  const word = new Int32Array(new SharedArrayBuffer(64));
  const ops = 1 << 22;
  const op = (k: 0 | 1 | 2): number => {
    timeNs(ops, () => opLoop(word, k, ops));
    return summarize([0, 1, 2].map(() => timeNs(ops, () => opLoop(word, k, ops)))).median;
  };
  return {
    lookupMapNs: summarize(runs.map).median,
    lookupFindNs: summarize(runs.find).median,
    lookupTouchNs: summarize(runs.touch).median,
    lookupTouchAtomicNs: summarize(runs.atomic).median,
    pairMapNs: 1e9 / insertDelete.map.median,
    pairTableNs: 1e9 / insertDelete.table.median,
    pairAtomicsNs: summarize(pairRuns).median,
    bookkeepingFloorNs: summarize(bookRuns).median,
    atomicLoadNs: op(0),
    atomicStoreNs: op(1),
    atomicCasNs: op(2),
  };
}
