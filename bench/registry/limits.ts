/**
 * Floors measured beside the targets (info rows and bench/results/registry-limits.md): minimal
 * kernels that touch the same cache lines, or issue the same Atomics operations, as the table and
 * the registry do, with nothing else. Where a floor alone is near or above the budget a target
 * leaves, the target cannot be met by tuning the code around it. No side effects on import.
 */
import { summarize } from '../lib/stats.js';
import { kLookupsPerRep, kPairsPerRep, kReps } from './config.js';
import { findAll } from './kernels.js';
import * as keys from './keys.js';
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
  /**
   * `find`'s whole probe (limit, state, hash, length, every key word, re-validation) as a free function
   * over the same table: with its two control-word reads as Atomics.load (what `find` does), and with
   * plain reads instead (not safe across threads: a measurement of what the two acquire loads cost).
   */
  lookupProbeAtomicNs: number;
  lookupProbePlainNs: number;
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

// Module-local constants (an imported binding is read through its cell at every use in optimised code).
const { kPackedHash, kPackedKey, kPackedLen, kPackedStride } = keys;
const kHeaderWords = 16;
const kRowHash = 1;
const kRowLen = 2;
const kRowDist = 3;
/** Not the flag bits: the identity of an incarnation (sequence and state). */
const kIdentity = ~0b1100;
/** An in-flight row of the registry: 2 value words, 520 key bytes, padded to whole lines. */
const kInFlightStride = 144;

function homeOf(hash: number, scale: number): number {
  return ((hash >>> 0) * scale) | 0;
}

/** The table geometry a probe kernel needs. */
interface Geometry {
  w: Int32Array;
  slots: number;
  stride: number;
  keyOffset: number;
  scale: number;
}

/** `find`'s probe, control words read with Atomics.load (as the table does). Returns the hits. */
function probeAtomic(g: Geometry, packed: Int32Array, order: Uint32Array, total: number): number {
  const { w, slots, stride, keyOffset, scale } = g;
  const mask = order.length - 1;
  let hits = 0;
  for (let n = 0; n < total; n++) {
    const at = order[n & mask] * kPackedStride;
    const hash = packed[at + kPackedHash];
    const len = packed[at + kPackedLen];
    const home = homeOf(hash, scale);
    const limit = w[kHeaderWords + home * stride + kRowDist];
    const words = (len + 3) >>> 2;
    let i = home;
    for (let d = 0; d < limit;) {
      const m = kHeaderWords + i * stride;
      const c1 = Atomics.load(w, m);
      if ((c1 & 3) === 0) break;
      if ((c1 & 3) === 2 && w[m + kRowHash] === hash && w[m + kRowLen] === len) {
        const k = m + keyOffset;
        let j = 0;
        while (j < words && w[k + j] === packed[at + kPackedKey + j]) j++;
        if (j === words) {
          if (((c1 ^ Atomics.load(w, m)) & kIdentity) === 0) { hits++; break; }
          continue;
        }
      }
      d++;
      if (++i === slots) i = 0;
    }
  }
  return hits;
}

/** The same probe with plain reads of the control word (a measurement only: not safe across threads). */
function probePlain(g: Geometry, packed: Int32Array, order: Uint32Array, total: number): number {
  const { w, slots, stride, keyOffset, scale } = g;
  const mask = order.length - 1;
  let hits = 0;
  for (let n = 0; n < total; n++) {
    const at = order[n & mask] * kPackedStride;
    const hash = packed[at + kPackedHash];
    const len = packed[at + kPackedLen];
    const home = homeOf(hash, scale);
    const limit = w[kHeaderWords + home * stride + kRowDist];
    const words = (len + 3) >>> 2;
    let i = home;
    for (let d = 0; d < limit;) {
      const m = kHeaderWords + i * stride;
      const c1 = w[m];
      if ((c1 & 3) === 0) break;
      if ((c1 & 3) === 2 && w[m + kRowHash] === hash && w[m + kRowLen] === len) {
        const k = m + keyOffset;
        let j = 0;
        while (j < words && w[k + j] === packed[at + kPackedKey + j]) j++;
        if (j === words) {
          if (((c1 ^ w[m]) & kIdentity) === 0) { hits++; break; }
          continue;
        }
      }
      d++;
      if (++i === slots) i = 0;
    }
  }
  return hits;
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
  const geometry: Geometry = { w: t.i32, slots: t.slots, stride, keyOffset: t.keyIndex(0) - t.ctlIndex(0), scale };
  const runs = { map: [] as number[], find: [] as number[], touch: [] as number[], atomic: [] as number[], probeAtomic: [] as number[], probePlain: [] as number[] };
  const expectAll = (hits: number): number => {
    if (hits !== lookups) throw new Error(`a probe kernel missed ${lookups - hits} lookups`);
    return hits;
  };
  for (let r = 0; r <= kReps; r++) {
    const map = timeNs(lookups, () => mapGets(m, live.strings, order, lookups));
    const find = timeNs(lookups, () => findAll(t, live, order, lookups));
    const plain = timeNs(lookups, () => touch(scratch, stride, scale, live.packed, order, lookups));
    const atomic = timeNs(lookups, () => touchAtomic(scratch, stride, scale, live.packed, order, lookups));
    const pa = timeNs(lookups, () => expectAll(probeAtomic(geometry, live.packed, order, lookups)));
    const pp = timeNs(lookups, () => expectAll(probePlain(geometry, live.packed, order, lookups)));
    if (r === 0) continue; // warm-up
    runs.map.push(map);
    runs.find.push(find);
    runs.touch.push(plain);
    runs.atomic.push(atomic);
    runs.probeAtomic.push(pa);
    runs.probePlain.push(pp);
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
    lookupProbeAtomicNs: summarize(runs.probeAtomic).median,
    lookupProbePlainNs: summarize(runs.probePlain).median,
    pairMapNs: 1e9 / insertDelete.map.median,
    pairTableNs: 1e9 / insertDelete.table.median,
    pairAtomicsNs: summarize(pairRuns).median,
    bookkeepingFloorNs: summarize(bookRuns).median,
    atomicLoadNs: op(0),
    atomicStoreNs: op(1),
    atomicCasNs: op(2),
  };
}
