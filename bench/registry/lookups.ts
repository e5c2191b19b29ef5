/**
 * Phases 1, 2 and 4 (table vs Map, one thread): lookups that hit (and, as info, the same keys in a
 * table sized for them), one hot key (informational), and insert+delete pairs at 50% load. No side effects on import.
 */
import type { RosterMember, ShmTable } from '../../native-free-shm/index.js';
import { summarize } from '../lib/stats.js';
import { kFill, kLookupsPerRep, kMaxKeyBytes, kPairKeys, kPairsPerRep, kReps } from './config.js';
import { insertDeleteAll } from './kernels.js';
import { keyString, prepareKeys } from './keys.js';
import type { PreparedKeys } from './keys.js';
import { createTable, insertKeys, measureLookups, now, verifyTable } from './table.js';
import type { LookupPair, TableBench } from './table.js';

/** The same key over and over: every access hits L1, so this is the cost of `find` itself. */
function tableLookupsHot(t: ShmTable, words: Int32Array, length: number, hash: number, total: number): number {
  let hits = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    if (t.find(words, length, hash) >= 0) hits++;
  }
  const elapsed = (now() - start) / 1000;
  if (hits !== total) throw new Error('hot-key lookups missed');
  return elapsed;
}

function mapLookupsHot(m: Map<string, number>, key: string, total: number): number {
  let hits = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    if (m.get(key) !== undefined) hits++;
  }
  const elapsed = (now() - start) / 1000;
  if (hits !== total) throw new Error('hot-key map lookups missed');
  return elapsed;
}

function tableInsertDelete(t: ShmTable, member: RosterMember, keys: PreparedKeys, total: number): number {
  const start = now();
  insertDeleteAll(t, member, keys, total);
  return (now() - start) / 1000;
}

function mapInsertDelete(m: Map<string, number>, strings: string[], total: number): number {
  const mask = strings.length - 1;
  const start = now();
  for (let i = 0; i < total; i++) {
    const k = strings[i & mask];
    m.set(k, i);
    m.delete(k);
  }
  return (now() - start) / 1000;
}

/** 1 + 4: lookups (hit), shuffled order over the live keys. */
export function lookupsPhase(s: TableBench): LookupPair {
  return measureLookups(s.t, s.m, s.live, s.order);
}

/**
 * Informational: the same keys and order in a table sized for them (capacity = the 32 k keys: 75 %
 * of its slots in use, half the memory of the 50 %-of-capacity table), beside the same Map. The
 * gap between the two tables is what the larger one's footprint costs (cache and TLB misses).
 */
export function fullCapacityLookupsPhase(s: TableBench): LookupPair & { byteLength: number; slots: number } {
  const { member, t } = createTable(2, kFill, s.t.seed);
  insertKeys(t, member, s.live, kFill);
  verifyTable(t, 'after filling the full-capacity table');
  return { ...measureLookups(t, s.m, s.live, s.order), byteLength: t.byteLength, slots: t.slots };
}

/** Informational: the same single key, so nothing misses the cache. */
export function hotKeyPhase(s: TableBench): LookupPair {
  const { t, m, live, liveStrings } = s;
  const hot = s.order[0];
  tableLookupsHot(t, live.words[hot], live.lengths[hot], live.hashes[hot], kLookupsPerRep / 4);
  mapLookupsHot(m, liveStrings[hot], kLookupsPerRep / 4);
  const hotTable: number[] = [];
  const hotMap: number[] = [];
  for (let r = 0; r < kReps; r++) {
    hotTable.push(kLookupsPerRep / tableLookupsHot(t, live.words[hot], live.lengths[hot], live.hashes[hot], kLookupsPerRep));
    hotMap.push(kLookupsPerRep / mapLookupsHot(m, liveStrings[hot], kLookupsPerRep));
  }
  return { table: summarize(hotTable), map: summarize(hotMap) };
}

/** 2 + 4: insert+delete pairs of keys not in the table, at 50% load. `scale`: the share of the full run's pairs per repeat. */
export function insertDeletePhase(s: TableBench, scale = 1): LookupPair {
  const perRep = Math.round(kPairsPerRep * scale);
  const { t, m, member } = s;
  const pairStrings: string[] = [];
  for (let i = 0; i < kPairKeys; i++) pairStrings.push(keyString(s.nextCounter++));
  const pairKeys = prepareKeys(t, pairStrings, kMaxKeyBytes);
  tableInsertDelete(t, member, pairKeys, perRep / 4); // warm-up
  mapInsertDelete(m, pairStrings, perRep / 4);
  const tablePairs: number[] = [];
  const mapPairs: number[] = [];
  for (let r = 0; r < kReps; r++) {
    tablePairs.push(perRep / tableInsertDelete(t, member, pairKeys, perRep));
    mapPairs.push(perRep / mapInsertDelete(m, pairStrings, perRep));
  }
  return { table: summarize(tablePairs), map: summarize(mapPairs) };
}
