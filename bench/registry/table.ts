/**
 * The table the single-thread phases share: filled to 50% with keys 0..kFill-1, the same strings in
 * a Map, the slot census, verify, and the interleaved table-vs-Map lookup measurement. No side
 * effects on import.
 */
import { Roster, ShmTable, kEmpty, kLive, kStateMask, kTombstone } from '../../native-free-shm/index.js';
import type { RosterMember } from '../../native-free-shm/index.js';
import { summarize } from '../lib/stats.js';
import type { Summary } from '../lib/stats.js';
import { kFill, kLookupsPerRep, kMaxKeyBytes, kReps, kTableCapacity, kValueWords } from './config.js';
import { findAll } from './kernels.js';
import { checkKeyWriter, keyString, makeRng, prepareKeys, shuffledOrder } from './keys.js';
import type { PreparedKeys } from './keys.js';

export const now = (): number => performance.now();

export interface SlotCensus {
  live: number;
  tombstone: number;
  empty: number;
  other: number;
}

export function census(t: ShmTable): SlotCensus {
  const c: SlotCensus = { live: 0, tombstone: 0, empty: 0, other: 0 };
  for (let i = 0; i < t.slots; i++) {
    const state = t.ctl(i) & kStateMask;
    if (state === kLive) c.live++;
    else if (state === kTombstone) c.tombstone++;
    else if (state === kEmpty) c.empty++;
    else c.other++;
  }
  return c;
}

export function verifyTable(t: ShmTable, where: string): void {
  const problems = t.verify();
  if (problems.length > 0) throw new Error(`table verify failed ${where}: ${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`);
}

export interface LookupPair {
  table: Summary;
  map: Summary;
}

/** Returns elapsed seconds; `sink.hits` counts the lookups that found a row. */
function tableLookups(t: ShmTable, keys: PreparedKeys, order: Uint32Array, total: number, sink: { hits: number }): number {
  const start = now();
  const hits = findAll(t, keys, order, total);
  const elapsed = (now() - start) / 1000;
  sink.hits = hits;
  return elapsed;
}

function mapLookups(m: Map<string, number>, strings: readonly string[], order: Uint32Array, total: number, sink: { hits: number }): number {
  const mask = order.length - 1;
  let hits = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    if (m.get(strings[order[i & mask]]) !== undefined) hits++;
  }
  const elapsed = (now() - start) / 1000;
  sink.hits = hits;
  return elapsed;
}

/** Interleaves table and Map reps so both see the same machine conditions. */
export function measureLookups(t: ShmTable, m: Map<string, number>, keys: PreparedKeys, order: Uint32Array): LookupPair {
  const sink = { hits: 0 };
  tableLookups(t, keys, order, kLookupsPerRep / 4, sink); // warm-up
  mapLookups(m, keys.strings, order, kLookupsPerRep / 4, sink);
  const tableRuns: number[] = [];
  const mapRuns: number[] = [];
  for (let r = 0; r < kReps; r++) {
    const ts = tableLookups(t, keys, order, kLookupsPerRep, sink);
    if (sink.hits !== kLookupsPerRep) throw new Error(`table lookups missed: ${kLookupsPerRep - sink.hits}`);
    tableRuns.push(kLookupsPerRep / ts);
    const ms = mapLookups(m, keys.strings, order, kLookupsPerRep, sink);
    if (sink.hits !== kLookupsPerRep) throw new Error(`map lookups missed: ${kLookupsPerRep - sink.hits}`);
    mapRuns.push(kLookupsPerRep / ms);
  }
  return { table: summarize(tableRuns), map: summarize(mapRuns) };
}

/**
 * A table of the benchmark's dimensions (or `capacity` rows, hashing with `seed` so that prepared
 * keys of another table fit it), its roster having room for `members`.
 */
export function createTable(members: number, capacity = kTableCapacity, seed?: number): { roster: Roster; member: RosterMember; t: ShmTable } {
  const roster = Roster.create({ capacity: members });
  const member = roster.join();
  const t = ShmTable.create({ capacity, maxKeyBytes: kMaxKeyBytes, valueWords: kValueWords, tableId: 1, ...(seed === undefined ? {} : { seed }) }, roster);
  return { roster, member, t };
}

/** Inserts every prepared key, value = its index; returns each row's slot and ctl. */
export function insertKeys(t: ShmTable, member: RosterMember, keys: PreparedKeys, count: number): { slots: Int32Array; ctls: Int32Array } {
  const slots = new Int32Array(count);
  const ctls = new Int32Array(count);
  for (let i = 0; i < count; i++) {
    const slot = t.claim(keys.words[i], keys.lengths[i], keys.hashes[i], member);
    if (slot < 0) throw new Error('table full while filling');
    t.i32[t.valueIndex(slot)] = i;
    ctls[i] = t.publish(slot, member);
    slots[i] = slot;
  }
  return { slots, ctls };
}

/** Fills `t` with keys 0..kFill-1, value = key number; returns the keys and each row's slot and ctl. */
export function fillTable(t: ShmTable, member: RosterMember): { liveStrings: string[]; live: PreparedKeys; slots: Int32Array; ctls: Int32Array } {
  const liveStrings: string[] = [];
  for (let c = 0; c < kFill; c++) liveStrings.push(keyString(c));
  const live = prepareKeys(t, liveStrings, kMaxKeyBytes);
  return { liveStrings, live, ...insertKeys(t, member, live, kFill) };
}

/** A table filled to 50% with keys 0..kFill-1, the same strings in a Map, and the state the phases share. */
export interface TableBench {
  t: ShmTable;
  member: RosterMember;
  rng: () => number;
  m: Map<string, number>;
  liveStrings: string[];
  live: PreparedKeys;
  liveCounter: Uint32Array;
  liveSlot: Int32Array;
  liveCtl: Int32Array;
  /** Shuffled order over the live keys, for the lookups. */
  order: Uint32Array;
  nextCounter: number;
}

export function setupTable(): TableBench {
  const { member, t } = createTable(4);
  const rng = makeRng(0x5eed51ce);
  checkKeyWriter();

  // Fill to 50%: keys 0..kFill-1, the same strings in the Map.
  const { liveStrings, live, slots: liveSlot, ctls: liveCtl } = fillTable(t, member);
  const liveCounter = new Uint32Array(kFill);
  const m = new Map<string, number>();
  for (let i = 0; i < kFill; i++) {
    liveCounter[i] = i;
    m.set(liveStrings[i], i);
  }
  const order = shuffledOrder(kFill, rng);
  return { t, member, rng, m, liveStrings, live, liveCounter, liveSlot, liveCtl, order, nextCounter: kFill };
}
