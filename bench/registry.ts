/**
 * Benchmarks the native-free-shm table and the shared-memory registry, against plain Map baselines.
 *
 *   npm run bench:registry        (= npm run build && node dist/bench/registry.js)
 *   node dist/bench/registry.js --phase <name>     (one phase only; writes no results files)
 *   node --cpu-prof dist/bench/registry.js --phase lookups
 *
 * Phases: registry, lookups, hot-key, insert-delete, churn, latency, contention (S5: two worker
 * threads on one table). Without --phase every phase runs, a table is printed, and
 * bench/results/registry-<date>.json, registry-latest.{json,md,svg} are written.
 * Targets are reported as met or missed; a miss never fails the run. A correctness check that
 * fails (a lookup that misses, table.verify() problems, a wrong live count) does fail it.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { KeyScratch, Roster, ShmTable, kEmpty, kLive, kStateMask, kTombstone } from '../native-free-shm/index.js';
import { prepareKeys } from './table-keys.js';
import type { PreparedKeys } from './table-keys.js';
import type { RosterMember } from '../native-free-shm/index.js';
import { createRegistry } from '../src/index.js';
import type { Registry } from '../src/index.js';
import type { FromWorker, ToWorker, WorkerInit } from './registry-worker.js';
import type { ContentionInit, ContentionKernel, FromContention, ToContention } from './registry-contention-worker.js';

// ---------------------------------------------------------------------------------------------
// Configuration

const kCommand = 'npm run bench:registry';
const kReps = 5;
const kTableCapacity = 65_536;
const kFill = kTableCapacity / 2; // 50% of the stated capacity (power of two: index masks below)
const kMaxKeyBytes = 32;
const kKeyBytes = 20;
const kValueWords = 2;
const kLookupsPerRep = kFill * 256; // 8.4 M
const kPairKeys = 4_096;
const kPairsPerRep = 4_000_000;
const kChurnPairs = 5_000_000;
const kRegistryRequestsPerRep = 2_000_000;
const kScope = 'session:0123456789abcdef0123456789abcdef';
const kPollSamples = 2_000;
const kSignalSamples = 1_000;
const kLatencyRounds = 3;
const kLatencyWarmup = 300;
const kMessageTimeoutMs = 10_000;
// S5: two worker threads on one table (per thread, per rep).
const kContentionReps = 5;
const kContentionLookups = 1 << 21; // 2.1 M
const kContentionPairs = 1 << 21;
const kContentionHotPairs = 1 << 20;
/** Homes of the hot-window keys: 64 slots, 16 cache lines of slot metadata. */
const kHotHomes = 64;
const kHotKeysPerThread = 256;

const kPhases = ['registry', 'lookups', 'hot-key', 'insert-delete', 'churn', 'latency', 'contention'] as const;
type Phase = (typeof kPhases)[number];

const kTargets = {
  lookupsPerSec: 50e6,
  insertDeletePerSec: 15e6,
  registryNs: 150,
  pollP50Us: 1,
  signalP50Us: 100,
} as const;

// ---------------------------------------------------------------------------------------------
// Helpers

interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

function summarize(runs: number[]): Summary {
  const sorted = [...runs].sort((a, b) => a - b);
  const n = sorted.length;
  const median = n % 2 === 1 ? sorted[(n - 1) / 2] : (sorted[n / 2 - 1] + sorted[n / 2]) / 2;
  return { median, min: sorted[0], max: sorted[n - 1], runs };
}

/** Nearest-rank percentile of an ascending array. */
function percentile(sorted: Float64Array | number[], p: number): number {
  const n = sorted.length;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
}

/** mulberry32: small, fast, deterministic. */
function makeRng(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

function shuffledOrder(n: number, rng: () => number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng() % (i + 1);
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

const kHex = '0123456789abcdef';
const kHexBytes = new Uint8Array(16).map((_, i) => kHex.charCodeAt(i));
const kPrefix = [0x72, 0x65, 0x71, 0x3a]; // "req:"

function scramble(c: number): number {
  return Math.imul(c ^ 0x5bd1e995, 0x9e3779b1) >>> 0;
}

/** Key number `c` as a 20-byte string: "req:" + 8 hex of a scramble of c + 8 hex of c. */
function keyString(c: number): string {
  return `req:${scramble(c).toString(16).padStart(8, '0')}${(c >>> 0).toString(16).padStart(8, '0')}`;
}

/** The same bytes as `setString(keyString(c))`, written without making a string. */
function writeKey(scratch: KeyScratch, c: number): void {
  const b = scratch.bytes;
  b[0] = kPrefix[0];
  b[1] = kPrefix[1];
  b[2] = kPrefix[2];
  b[3] = kPrefix[3];
  const s = scramble(c);
  const u = c >>> 0;
  for (let i = 0; i < 8; i++) {
    b[4 + i] = kHexBytes[(s >>> (28 - 4 * i)) & 15];
    b[12 + i] = kHexBytes[(u >>> (28 - 4 * i)) & 15];
  }
  scratch.seal(kKeyBytes);
}


function now(): number {
  return performance.now();
}

// ---------------------------------------------------------------------------------------------
// Timed kernels (one function per kernel, so each stays monomorphic)

/** Returns elapsed seconds; `sink.hits` counts the lookups that found a row. */
function tableLookups(t: ShmTable, keys: PreparedKeys, order: Uint32Array, total: number, sink: { hits: number }): number {
  const { words, lengths, hashes } = keys;
  const mask = order.length - 1;
  let hits = 0;
  const start = now();
  for (let i = 0; i < total; i++) {
    const k = order[i & mask];
    if (t.find(words[k], lengths[k], hashes[k]) >= 0) hits++;
  }
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
  const { words, lengths, hashes } = keys;
  const mask = words.length - 1;
  const w = t.i32;
  const start = now();
  for (let i = 0; i < total; i++) {
    const k = i & mask;
    const slot = t.claim(words[k], lengths[k], hashes[k], member);
    if (slot < 0) throw new Error('table full during insert+delete');
    w[t.valueIndex(slot)] = i;
    const ctl = t.publish(slot, member);
    if (t.remove(slot, ctl) === 0) throw new Error('remove failed during insert+delete');
  }
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

function registryRequests(reg: Registry, total: number): number {
  const start = now();
  for (let i = 0; i < total; i++) {
    const id = i & 1023;
    const h = reg.track(id, kScope);
    if (!h.ok) throw new Error(`track refused: ${h.error}`);
    reg.untrack(h);
    reg.clear(id, kScope);
  }
  return (now() - start) / 1000;
}

function mapRequests(inFlight: Map<string, number>, cancels: Map<string, number>, total: number): number {
  const start = now();
  for (let i = 0; i < total; i++) {
    const id = i & 1023;
    const key = `${kScope}\u0000${id}`;
    inFlight.set(key, i); // track
    inFlight.delete(key); // untrack
    if (cancels.has(key)) cancels.delete(key); // clear
  }
  return (now() - start) / 1000;
}

// ---------------------------------------------------------------------------------------------
// 1-4: table vs Map

interface SlotCensus {
  live: number;
  tombstone: number;
  empty: number;
  other: number;
}

function census(t: ShmTable): SlotCensus {
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

interface LookupPair {
  table: Summary;
  map: Summary;
}

/** Interleaves table and Map reps so both see the same machine conditions. */
function measureLookups(t: ShmTable, m: Map<string, number>, keys: PreparedKeys, order: Uint32Array): LookupPair {
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

interface TableResults {
  slots: number;
  rows: number;
  loadOfCapacity: number;
  loadOfSlots: number;
  lookups: LookupPair;
  /** Informational: one key looked up repeatedly (all in cache), the per-call ceiling. */
  hotKeyLookups: LookupPair;
  insertDelete: LookupPair;
  churn: ChurnResults & { tableRatioAfterBefore: number; mapRatioAfterBefore: number };
}

interface ChurnResults {
  pairs: number;
  tablePairsPerSec: number;
  mapPairsPerSec: number;
  before: SlotCensus;
  after: SlotCensus;
  lookupsAfter: LookupPair;
}

/** A table filled to 50% with keys 0..kFill-1, the same strings in a Map, and the state the phases share. */
interface TableBench {
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

function checkKeyWriter(): void {
  // Sanity: the fast key writer makes the same bytes as setString.
  const a = new KeyScratch(kMaxKeyBytes);
  const b = new KeyScratch(kMaxKeyBytes);
  for (const c of [0, 1, 12345, 0x7fffffff, 0xfffffffe]) {
    writeKey(a, c);
    b.setString(keyString(c));
    if (a.length !== kKeyBytes || b.length !== kKeyBytes || a.words.some((v, i) => v !== b.words[i])) {
      throw new Error(`key writer mismatch for ${c}`);
    }
  }
}

function setupTable(): TableBench {
  const roster = Roster.create({ capacity: 4 });
  const member = roster.join();
  const t = ShmTable.create({ capacity: kTableCapacity, maxKeyBytes: kMaxKeyBytes, valueWords: kValueWords, tableId: 1 }, roster);
  const rng = makeRng(0x5eed51ce);
  checkKeyWriter();

  // Fill to 50%: keys 0..kFill-1, the same strings in the Map.
  const liveStrings: string[] = [];
  for (let c = 0; c < kFill; c++) liveStrings.push(keyString(c));
  const live = prepareKeys(t, liveStrings, kMaxKeyBytes);
  const liveCounter = new Uint32Array(kFill);
  const liveSlot = new Int32Array(kFill);
  const liveCtl = new Int32Array(kFill);
  const m = new Map<string, number>();
  for (let i = 0; i < kFill; i++) {
    const slot = t.claim(live.words[i], live.lengths[i], live.hashes[i], member);
    if (slot < 0) throw new Error('table full while filling');
    t.i32[t.valueIndex(slot)] = i;
    liveCtl[i] = t.publish(slot, member);
    liveSlot[i] = slot;
    liveCounter[i] = i;
    m.set(liveStrings[i], i);
  }
  const order = shuffledOrder(kFill, rng);
  return { t, member, rng, m, liveStrings, live, liveCounter, liveSlot, liveCtl, order, nextCounter: kFill };
}

/** 1 + 4: lookups (hit), shuffled order over the live keys. */
function lookupsPhase(s: TableBench): LookupPair {
  return measureLookups(s.t, s.m, s.live, s.order);
}

/** Informational: the same single key, so nothing misses the cache. */
function hotKeyPhase(s: TableBench): LookupPair {
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

/** 2 + 4: insert+delete pairs of keys not in the table, at 50% load. */
function insertDeletePhase(s: TableBench): LookupPair {
  const { t, m, member } = s;
  const pairStrings: string[] = [];
  for (let i = 0; i < kPairKeys; i++) pairStrings.push(keyString(s.nextCounter++));
  const pairKeys = prepareKeys(t, pairStrings, kMaxKeyBytes);
  tableInsertDelete(t, member, pairKeys, kPairsPerRep / 4); // warm-up
  mapInsertDelete(m, pairStrings, kPairsPerRep / 4);
  const tablePairs: number[] = [];
  const mapPairs: number[] = [];
  for (let r = 0; r < kReps; r++) {
    tablePairs.push(kPairsPerRep / tableInsertDelete(t, member, pairKeys, kPairsPerRep));
    mapPairs.push(kPairsPerRep / mapInsertDelete(m, pairStrings, kPairsPerRep));
  }
  return { table: summarize(tablePairs), map: summarize(mapPairs) };
}

/** 3: churn, then lookups over the keys live after it. */
function churnPhase(s: TableBench): ChurnResults {
  const { t, m, member, rng, liveStrings, liveCounter, liveSlot, liveCtl } = s;
  // The same random sequence drives both: delete a random live row, insert a fresh key.
  const before = census(t);
  const churnSeed = rng();
  const scratch = new KeyScratch(kMaxKeyBytes);
  let pick = makeRng(churnSeed);
  const firstFresh = s.nextCounter;
  let nextCounter = firstFresh;
  let start = now();
  for (let p = 0; p < kChurnPairs; p++) {
    const r = pick() % kFill;
    if (t.remove(liveSlot[r], liveCtl[r]) === 0) throw new Error('churn: remove failed');
    const c = nextCounter++;
    writeKey(scratch, c);
    const hash = t.hash(scratch.words, kKeyBytes);
    const slot = t.claim(scratch.words, kKeyBytes, hash, member);
    if (slot < 0) throw new Error('churn: table full');
    t.i32[t.valueIndex(slot)] = c;
    liveCtl[r] = t.publish(slot, member);
    liveSlot[r] = slot;
    liveCounter[r] = c;
  }
  const tableChurnSeconds = (now() - start) / 1000;
  const after = census(t);

  pick = makeRng(churnSeed);
  nextCounter = firstFresh;
  const mapLive = [...liveStrings];
  start = now();
  for (let p = 0; p < kChurnPairs; p++) {
    const r = pick() % kFill;
    if (!m.delete(mapLive[r])) throw new Error('churn: map delete failed');
    const k = keyString(nextCounter);
    m.set(k, nextCounter++);
    mapLive[r] = k;
  }
  const mapChurnSeconds = (now() - start) / 1000;
  s.nextCounter = nextCounter;
  if (m.size !== kFill || after.live !== kFill) throw new Error(`churn: sizes drifted (map ${m.size}, table ${after.live})`);

  // Lookups again, over the keys live now (the Map's own key strings, the same text).
  const liveAfter = prepareKeys(t, mapLive, kMaxKeyBytes);
  for (let i = 0; i < kFill; i++) {
    if (keyString(liveCounter[i]) !== mapLive[i]) throw new Error('churn: table and map diverged');
  }
  const orderAfter = shuffledOrder(kFill, rng);
  const lookupsAfter = measureLookups(t, m, liveAfter, orderAfter);
  return {
    pairs: kChurnPairs,
    tablePairsPerSec: kChurnPairs / tableChurnSeconds,
    mapPairsPerSec: kChurnPairs / mapChurnSeconds,
    before,
    after,
    lookupsAfter,
  };
}

function verifyTable(t: ShmTable, where: string): void {
  const problems = t.verify();
  if (problems.length > 0) throw new Error(`table verify failed ${where}: ${problems.length} problem(s): ${problems.slice(0, 5).join('; ')}`);
}

function benchTable(): TableResults {
  const s = setupTable();
  const lookups = lookupsPhase(s);
  const hotKeyLookups = hotKeyPhase(s);
  const insertDelete = insertDeletePhase(s);
  const churn = churnPhase(s);
  verifyTable(s.t, 'after churn');

  return {
    slots: s.t.slots,
    rows: kFill,
    loadOfCapacity: kFill / kTableCapacity,
    loadOfSlots: kFill / s.t.slots,
    lookups,
    hotKeyLookups,
    insertDelete,
    churn: {
      ...churn,
      tableRatioAfterBefore: churn.lookupsAfter.table.median / lookups.table.median,
      mapRatioAfterBefore: churn.lookupsAfter.map.median / lookups.map.median,
    },
  };
}

// ---------------------------------------------------------------------------------------------
// 5: registry bookkeeping per request

interface RegistryResults {
  requestsPerRep: number;
  registryNs: Summary;
  mapNs: Summary;
}

function benchRegistry(): RegistryResults {
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const inFlight = new Map<string, number>();
  const cancels = new Map<string, number>();
  registryRequests(reg, kRegistryRequestsPerRep / 4); // warm-up
  mapRequests(inFlight, cancels, kRegistryRequestsPerRep / 4);
  const regRuns: number[] = [];
  const mapRuns: number[] = [];
  for (let r = 0; r < kReps; r++) {
    regRuns.push((registryRequests(reg, kRegistryRequestsPerRep) * 1e9) / kRegistryRequestsPerRep);
    mapRuns.push((mapRequests(inFlight, cancels, kRegistryRequestsPerRep) * 1e9) / kRegistryRequestsPerRep);
  }
  const counts = reg.counters();
  if (counts.inFlight !== 0) throw new Error(`registry leaked ${counts.inFlight} in-flight rows`);
  return { requestsPerRep: kRegistryRequestsPerRep, registryNs: summarize(regRuns), mapNs: summarize(mapRuns) };
}

// ---------------------------------------------------------------------------------------------
// 6: cross-thread cancel -> observed latency

interface Distribution {
  samples: number;
  p50: number;
  p99: number;
  /** Nearest rank: with n samples, the ceil(n / 1000) - 1 largest lie above it. */
  p999: number;
  min: number;
  max: number;
  mean: number;
}

function distribution(values: number[]): Distribution {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    samples: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    mean: sum / sorted.length,
  };
}

interface LatencyMode {
  mode: 'poll' | 'signal';
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

interface LatencyResults {
  clock: string;
  /** The process's first polling cancels, before `reg.cancel` has been optimised. */
  coldPolling: { samples: number; seen: Distribution; cancelCall: Distribution };
  polling: LatencyMode;
  signal: LatencyMode;
}

/** Messages from one worker, awaited one at a time. Rejects on a worker error, exit, or silence. */
class Inbox<M extends { readonly type: string }> {
  readonly #queue: M[] = [];
  #waiter: { resolve: (message: M) => void; reject: (error: Error) => void } | undefined;
  #failure: Error | undefined;

  constructor(worker: Worker) {
    worker.on('message', (raw: unknown) => {
      const message = raw as M;
      const waiter = this.#waiter;
      if (waiter !== undefined) {
        this.#waiter = undefined;
        waiter.resolve(message);
      } else {
        this.#queue.push(message);
      }
    });
    const fail = (error: Error): void => {
      this.#failure ??= error;
      const waiter = this.#waiter;
      this.#waiter = undefined;
      waiter?.reject(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code: number) => fail(new Error(`worker exited (code ${code})`)));
  }

  next(): Promise<M> {
    const queued = this.#queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise<M>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new Error(`worker did not answer within ${kMessageTimeoutMs} ms`));
      }, kMessageTimeoutMs);
      this.#waiter = {
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  async expect<T extends M['type']>(type: T): Promise<Extract<M, { type: T }>> {
    const message = await this.next();
    if (message.type === 'error') throw new Error(`worker: ${(message as unknown as { message: string }).message}`);
    if (message.type !== type) throw new Error(`expected '${type}' from worker, got '${message.type}'`);
    return message as Extract<M, { type: T }>;
  }
}

async function latencyRound(
  reg: Registry, worker: Worker, inbox: Inbox<FromWorker>, mode: 'poll' | 'signal', count: number, nextId: () => number,
): Promise<{ micros: number[]; cancelMicros: number[]; afterMicros: number[]; timedOut: number }> {
  const micros: number[] = [];
  const cancelMicros: number[] = [];
  const afterMicros: number[] = [];
  let timedOut = 0;
  for (let i = 0; i < count; i++) {
    const id = nextId();
    const h = reg.track(id, kScope);
    if (!h.ok) throw new Error(`track refused: ${h.error}`);
    const message: ToWorker = { type: mode, ref: h.ref };
    worker.postMessage(message);
    await inbox.expect('ready');
    const t0 = process.hrtime.bigint();
    const result = reg.cancel(id, 'bench', kScope);
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

/**
 * Cancels nobody waits for, before the measured rounds: V8 optimises `reg.cancel` only after some
 * thousands of calls (measured: p50 2.2 µs over a process's first 5000 calls, 0.6 µs after), and
 * the rounds should measure the mechanism, as the HTTP runs measure a warmed-up server.
 */
const kCancelWarmup = 30_000;

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

async function benchLatency(): Promise<LatencyResults> {
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const init: WorkerInit = { descriptor: reg.descriptor };
  const worker = new Worker(new URL('./registry-worker.js', import.meta.url), { workerData: init });
  reg.watch(worker);
  const inbox = new Inbox<FromWorker>(worker);
  await new Promise<void>((resolve, reject) => {
    worker.once('online', resolve);
    worker.once('error', reject);
  });
  let id = 1_000_000;
  const nextId = (): number => id++;

  const run = async (mode: 'poll' | 'signal', perRound: number): Promise<LatencyMode> => {
    await latencyRound(reg, worker, inbox, mode, kLatencyWarmup, nextId);
    const rounds: Distribution[] = [];
    const all: number[] = [];
    const cancelAll: number[] = [];
    const afterAll: number[] = [];
    let timedOut = 0;
    for (let r = 0; r < kLatencyRounds; r++) {
      const round = await latencyRound(reg, worker, inbox, mode, perRound, nextId);
      rounds.push(distribution(round.micros));
      all.push(...round.micros);
      cancelAll.push(...round.cancelMicros);
      afterAll.push(...round.afterMicros);
      timedOut += round.timedOut;
    }
    return {
      mode,
      samplesPerRound: perRound,
      rounds,
      p50Us: summarize(rounds.map((d) => d.p50)),
      p99Us: summarize(rounds.map((d) => d.p99)),
      p999Us: summarize(rounds.map((d) => d.p999)),
      pooled: distribution(all),
      cancelCallUs: distribution(cancelAll),
      afterReturnUs: distribution(afterAll),
      timedOut,
    };
  };

  try {
    // First, as a real server meets its first cancels: nothing optimised yet.
    const cold = await latencyRound(reg, worker, inbox, 'poll', kPollSamples, nextId);
    const coldPolling = { samples: cold.micros.length, seen: distribution(cold.micros), cancelCall: distribution(cold.cancelMicros) };
    warmCancelPath(reg);
    const polling = await run('poll', kPollSamples);
    const signal = await run('signal', kSignalSamples);
    return { clock: 'process.hrtime.bigint() in both threads (one CLOCK_MONOTONIC)', coldPolling, polling, signal };
  } finally {
    const exited = new Promise<void>((resolve) => worker.once('exit', () => resolve()));
    const stop: ToWorker = { type: 'stop' };
    worker.postMessage(stop);
    const timer = setTimeout(() => { void worker.terminate(); }, 2_000);
    await exited;
    clearTimeout(timer);
  }
}

// ---------------------------------------------------------------------------------------------
// 7 (S5): two contending threads on one table

interface ContentionKernelResult {
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

interface ContentionResults {
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

/** CPU seconds every process on the machine has used since boot (Linux /proc/stat), or undefined. */
function machineBusySeconds(): number | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
    if (fields[0] !== 'cpu' || fields.length < 9) return undefined;
    const [user, nice, system, , , irq, softirq, steal] = fields.slice(1, 9).map(Number);
    const busy = user + nice + system + irq + softirq + steal;
    return Number.isFinite(busy) ? busy / 100 : undefined; // USER_HZ
  } catch {
    return undefined;
  }
}

/** Starts a measurement of the CPU used by other processes; call the result to read it, in cores. */
function otherCpu(): () => number | null {
  const busy0 = machineBusySeconds();
  const own0 = process.cpuUsage();
  const wall0 = now();
  return () => {
    const busy1 = machineBusySeconds();
    if (busy0 === undefined || busy1 === undefined) return null;
    const own = process.cpuUsage(own0);
    const ownSeconds = (own.user + own.system) / 1e6;
    return Math.max(0, (busy1 - busy0 - ownSeconds) / ((now() - wall0) / 1000));
  };
}

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

async function benchContention(): Promise<ContentionResults> {
  const began = now();
  const roster = Roster.create({ capacity: 8 });
  const member = roster.join();
  const t = ShmTable.create({ capacity: kTableCapacity, maxKeyBytes: kMaxKeyBytes, valueWords: kValueWords, tableId: 1 }, roster);

  // The same fill as the single-thread phases: keys 0..kFill-1, value = key number.
  const liveStrings: string[] = [];
  for (let c = 0; c < kFill; c++) liveStrings.push(keyString(c));
  const live = prepareKeys(t, liveStrings, kMaxKeyBytes);
  for (let i = 0; i < kFill; i++) {
    const slot = t.claim(live.words[i], live.lengths[i], live.hashes[i], member);
    if (slot < 0) throw new Error('table full while filling');
    t.i32[t.valueIndex(slot)] = i;
    t.publish(slot, member);
  }

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
      const worker = new Worker(new URL('./registry-contention-worker.js', import.meta.url), { workerData: init });
      roster.watch(worker);
      workers.push(worker);
      exits.push(new Promise<void>((resolve) => worker.once('exit', () => resolve())));
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
    // A worker still spinning at the barrier (its partner failed) cannot read 'stop': terminate it.
    await Promise.all(workers.map(async (worker, w) => {
      const stop: ToContention = { type: 'stop' };
      worker.postMessage(stop);
      const timer = setTimeout(() => { void worker.terminate(); }, 2_000);
      await exits[w];
      clearTimeout(timer);
    }));
  }
}

// ---------------------------------------------------------------------------------------------
// Report

interface Target {
  name: string;
  target: string;
  actual: string;
  met: boolean;
}

interface Report {
  benchmark: 'registry';
  date: string;
  timestamp: string;
  command: string;
  machine: Machine;
  config: Record<string, number | string>;
  table: TableResults;
  ratios: { lookups: number; insertDelete: number; lookupsAfterChurn: number; registryVsMap: number };
  registry: RegistryResults;
  latency: LatencyResults;
  contention: ContentionResults;
  targets: Target[];
  durationSeconds: number;
}

interface Machine {
  cpu: string;
  cores: number;
  os: string;
  arch: string;
  node: string;
  v8: string;
  memoryGiB: number;
}

const mops = (x: number): string => `${(x / 1e6).toFixed(1)} M/s`;
const ratio = (x: number): string => `${x.toFixed(2)}x`;
const us = (x: number): string => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
const ns = (x: number): string => x.toFixed(0);
const rate = (s: Summary): string => `${(s.min / 1e6).toFixed(1)}–${(s.max / 1e6).toFixed(1)} M/s`;

const targetFor = {
  lookups: (l: LookupPair): Target => ({
    name: 'table lookups (hit, 50% load)',
    target: `≥ ${mops(kTargets.lookupsPerSec)}`,
    actual: `${mops(l.table.median)} (${rate(l.table)})`,
    met: l.table.median >= kTargets.lookupsPerSec,
  }),
  insertDelete: (l: LookupPair): Target => ({
    name: 'table insert+delete pairs',
    target: `≥ ${mops(kTargets.insertDeletePerSec)}`,
    actual: `${mops(l.table.median)} (${rate(l.table)})`,
    met: l.table.median >= kTargets.insertDeletePerSec,
  }),
  churn: (afterBefore: number): Target => ({
    name: 'lookups after churn: no collapse',
    target: 'ratio ≈ 1 (≥ 0.8)',
    actual: ratio(afterBefore),
    met: afterBefore >= 0.8,
  }),
  registry: (rr: RegistryResults): Target => ({
    name: 'registry track+untrack+clear (median)',
    target: `≤ ${kTargets.registryNs} ns`,
    actual: `${ns(rr.registryNs.median)} ns (${ns(rr.registryNs.min)}–${ns(rr.registryNs.max)})`,
    met: rr.registryNs.median <= kTargets.registryNs,
  }),
  poll: (m: LatencyMode): Target => ({
    name: 'cancel → observed, polling p50',
    target: `≤ ${kTargets.pollP50Us} µs`,
    actual: `${us(m.p50Us.median)} µs (${us(m.p50Us.min)}–${us(m.p50Us.max)})`,
    met: m.p50Us.median <= kTargets.pollP50Us,
  }),
  signal: (m: LatencyMode): Target => ({
    name: 'cancel → observed, signal p50',
    target: `≤ ${kTargets.signalP50Us} µs`,
    actual: `${us(m.p50Us.median)} µs (${us(m.p50Us.min)}–${us(m.p50Us.max)})`,
    met: m.p50Us.median <= kTargets.signalP50Us,
  }),
};

function buildTargets(tr: TableResults, rr: RegistryResults, lr: LatencyResults): Target[] {
  return [
    targetFor.lookups(tr.lookups),
    targetFor.insertDelete(tr.insertDelete),
    targetFor.churn(tr.churn.tableRatioAfterBefore),
    targetFor.registry(rr),
    targetFor.poll(lr.polling),
    targetFor.signal(lr.signal),
  ];
}

/** `map`/`vsMap` are the Baseline and "vs baseline" columns: the Map for table rows, one thread for S5 rows. */
interface Row {
  metric: string;
  median: string;
  range: string;
  map: string;
  vsMap: string;
  target: string;
  status: string;
}

function row(metric: string, median: string, range: string, map = '', vsMap = '', target?: Target): Row {
  return { metric, median, range, map, vsMap, target: target?.target ?? '', status: target === undefined ? '' : target.met ? 'met' : 'MISSED' };
}

function lookupRows(l: LookupPair): Row[] {
  return [row('table lookups/s (hit, 50% load)', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(l.table.median / l.map.median), targetFor.lookups(l))];
}

function hotKeyRows(l: LookupPair): Row[] {
  return [row('info: lookups/s, one hot key', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(l.table.median / l.map.median))];
}

function insertDeleteRows(l: LookupPair): Row[] {
  return [row('table insert+delete pairs/s', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(l.table.median / l.map.median), targetFor.insertDelete(l))];
}

function churnRows(c: ChurnResults, before?: LookupPair): Row[] {
  const after = c.lookupsAfter;
  const out = [
    row(`table lookups/s after ${(c.pairs / 1e6).toFixed(0)} M churn pairs`, mops(after.table.median), rate(after.table), mops(after.map.median), ratio(after.table.median / after.map.median)),
  ];
  if (before !== undefined) {
    const tableRatio = after.table.median / before.table.median;
    out.push(row('lookups after/before churn', ratio(tableRatio), '', ratio(after.map.median / before.map.median), '', targetFor.churn(tableRatio)));
  }
  return out;
}

function registryRows(rr: RegistryResults): Row[] {
  return [row(
    'registry track+untrack+clear', `${ns(rr.registryNs.median)} ns`, `${ns(rr.registryNs.min)}–${ns(rr.registryNs.max)} ns`,
    `${ns(rr.mapNs.median)} ns`, ratio(rr.registryNs.median / rr.mapNs.median), targetFor.registry(rr),
  )];
}

function latencyRows(lr: LatencyResults): Row[] {
  const µs = (x: number): string => `${us(x)} µs`;
  const range = (s: Summary): string => `${us(s.min)}–${us(s.max)} µs`;
  const { polling: p, signal: g } = lr;
  return [
    row(`cancel→seen polling p50 (${p.samplesPerRound}×${kLatencyRounds})`, µs(p.p50Us.median), range(p.p50Us), '', '', targetFor.poll(p)),
    row('cancel→seen polling p99', µs(p.p99Us.median), range(p.p99Us)),
    row(`cancel→seen polling p99.9 (pooled ${p.pooled.samples})`, µs(p.pooled.p999), range(p.p999Us)),
    row('info: reg.cancel call itself p50 (poll)', µs(p.cancelCallUs.p50), `p99 ${µs(p.cancelCallUs.p99)}`),
    row(`info: polling p50, the process's first ${lr.coldPolling.samples} cancels (not yet optimised)`, µs(lr.coldPolling.seen.p50), `p99 ${µs(lr.coldPolling.seen.p99)}; call p50 ${µs(lr.coldPolling.cancelCall.p50)}`),
    row(`cancel→seen signal p50 (${g.samplesPerRound}×${kLatencyRounds})`, µs(g.p50Us.median), range(g.p50Us), '', '', targetFor.signal(g)),
    row('cancel→seen signal p99', µs(g.p99Us.median), range(g.p99Us)),
    row(`cancel→seen signal p99.9 (pooled ${g.pooled.samples})`, µs(g.pooled.p999), range(g.p999Us)),
  ];
}

function contentionRows(cr: ContentionResults): Row[] {
  const kernelRows = (k: ContentionKernelResult, name: string): Row[] => {
    const [a, b] = k.perThread;
    return [
      row(`info: S5 ${name}, 1 worker thread`, mops(k.oneThread.median), rate(k.oneThread)),
      row(
        `info: S5 ${name}, 2 threads: A / B`,
        `${(a.median / 1e6).toFixed(1)} / ${mops(b.median)}`,
        `${(a.min / 1e6).toFixed(1)}–${(a.max / 1e6).toFixed(1)} / ${rate(b)}`,
      ),
      row(`info: S5 ${name}, 2 threads total`, mops(k.total.median), rate(k.total), `${mops(k.oneThread.median)} (1 thread)`, ratio(k.totalVsOneThread)),
    ];
  };
  return [
    ...kernelRows(cr.lookups, 'lookups/s'),
    ...kernelRows(cr.insertDelete, 'insert+delete pairs/s'),
    ...kernelRows(cr.hotInsertDelete, `hot-window pairs/s (${cr.hotWindow.homes} homes)`),
  ];
}

function rows(report: Report): Row[] {
  const { table: tr, registry: rr, latency: lr, contention: cr } = report;
  return [
    ...lookupRows(tr.lookups),
    ...hotKeyRows(tr.hotKeyLookups),
    ...insertDeleteRows(tr.insertDelete),
    ...churnRows(tr.churn, tr.lookups),
    ...registryRows(rr),
    ...latencyRows(lr),
    ...contentionRows(cr),
  ];
}

const kHeader: Row = { metric: 'metric', median: 'median', range: 'min–max', map: 'baseline', vsMap: 'vs baseline', target: 'target', status: 'status' };
const kColumns: Array<keyof Row> = ['metric', 'median', 'range', 'map', 'vsMap', 'target', 'status'];

function textTable(all: Row[]): string {
  const table = [kHeader, ...all];
  const widths = kColumns.map((c) => Math.max(...table.map((r) => r[c].length)));
  const line = (r: Row): string => kColumns.map((c, i) => r[c].padEnd(widths[i])).join('  ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(kHeader), rule, ...all.map(line)].join('\n');
}

/** How many samples lie above the nearest-rank p99.9 of n samples. */
function aboveP999(n: number): number {
  return n - Math.ceil(0.999 * n);
}

function latencyLines(lr: LatencyResults): string[] {
  const lp = lr.polling.pooled;
  const ls = lr.signal.pooled;
  const pc = lr.polling.cancelCallUs;
  const pa = lr.polling.afterReturnUs;
  return [
    `polling split: reg.cancel call p50 ${us(pc.p50)} µs (p99 ${us(pc.p99)}, p99.9 ${us(pc.p999)}); cancel returned → worker saw it p50 ${us(pa.p50)} µs (p99 ${us(pa.p99)}, p99.9 ${us(pa.p999)})`,
    `latency pooled: polling p50 ${us(lp.p50)} µs p99 ${us(lp.p99)} µs p99.9 ${us(lp.p999)} µs max ${us(lp.max)} µs (n=${lp.samples}, timeouts ${lr.polling.timedOut}); signal p50 ${us(ls.p50)} µs p99 ${us(ls.p99)} µs p99.9 ${us(ls.p999)} µs max ${us(ls.max)} µs (n=${ls.samples})`,
  ];
}

function contentionLines(cr: ContentionResults): string[] {
  const out: string[] = [];
  for (const k of [cr.lookups, cr.insertDelete, cr.hotInsertDelete]) {
    const [a, b] = k.perThread;
    out.push(`S5 ${k.label}: 1 thread ${mops(k.oneThread.median)}; 2 threads A ${mops(a.median)} + B ${mops(b.median)}, total ${mops(k.total.median)} = ${ratio(k.totalVsOneThread)} of 1 thread; overlap ${(k.overlap.median * 100).toFixed(1)}% (min ${(k.overlap.min * 100).toFixed(1)}%), start skew median ${us(k.startSkewUs.median)} µs (max ${us(k.startSkewUs.max)}); other processes ${k.otherCpuCores === null ? 'n/a' : `${k.otherCpuCores.toFixed(2)} cores`}`);
  }
  out.push(`S5 checks: ${cr.checks} runs, each followed by table.verify() = no problems, ${cr.rows} live rows, every live key found once with its value; hot window: homes ${cr.hotWindow.firstHome}..${cr.hotWindow.firstHome + cr.hotWindow.homes - 1}, ${cr.hotWindow.keysPerThread} keys per thread (${cr.hotWindow.candidatesHashed.toLocaleString('en-US')} candidates hashed); phase ${cr.seconds.toFixed(1)} s`);
  return out;
}

function markdown(report: Report): string {
  const { table: tr, latency: lr, contention: cr, machine } = report;
  const esc = (s: string): string => s.replace(/\|/g, '\\|');
  const pct = (x: number): string => `${(x * 100).toFixed(1)}%`;
  const out: string[] = [];
  out.push('# Registry benchmark');
  out.push('');
  out.push(`- Date: ${report.timestamp}`);
  out.push(`- Machine: ${machine.cpu} (${machine.cores} cores), ${machine.os} ${machine.arch}, ${machine.memoryGiB} GiB`);
  out.push(`- Node: ${machine.node} (V8 ${machine.v8})`);
  out.push(`- Command: \`${report.command}\``);
  out.push(`- Run time: ${report.durationSeconds.toFixed(1)} s`);
  out.push('');
  out.push('| Metric | Median | Min–max | Baseline | vs baseline | Target | Status |');
  out.push('|---|---:|---:|---:|---:|---|---|');
  for (const r of rows(report)) {
    out.push(`| ${kColumns.map((c) => esc(r[c])).join(' | ')} |`);
  }
  out.push('');
  out.push('Baseline is the Map for the table and registry rows, and the same workload on one worker thread for the S5 "2 threads total" rows. "vs baseline" is table ÷ Map for rates, registry ÷ Map for ns/request (lower is better there), and 2 threads total ÷ 1 thread for S5. In the after/before row the Baseline column is the Map\'s own after/before ratio.');
  out.push('');
  out.push('## Notes');
  out.push('');
  out.push(`- Table: capacity ${kTableCapacity} (${tr.slots} slots), ${tr.rows} live rows (${(tr.loadOfCapacity * 100).toFixed(0)}% of capacity, ${(tr.loadOfSlots * 100).toFixed(1)}% of slots), ${kKeyBytes}-byte string keys, maxKeyBytes ${kMaxKeyBytes}, ${kValueWords} value words. Keys prebuilt (words, length, hash); only \`find\` is timed, in shuffled order. The Map uses the same key strings.`);
  out.push(`- Insert+delete: claim + value write + publish + remove of ${kPairKeys} keys not in the table, cycling, at 50% load; Map: \`set\` + \`delete\`.`);
  out.push(`- Churn: ${tr.churn.pairs.toLocaleString('en-US')} random delete+insert pairs of fresh keys (table ${mops(tr.churn.tablePairsPerSec)} incl. key generation and hashing; Map ${mops(tr.churn.mapPairsPerSec)} incl. string building). Slots before: ${tr.churn.before.live} live / ${tr.churn.before.tombstone} tombstones / ${tr.churn.before.empty} never used; after: ${tr.churn.after.live} / ${tr.churn.after.tombstone} / ${tr.churn.after.empty}.`);
  out.push(`- Registry: \`track\` + \`untrack\` + \`clear\`, scope \`${kScope}\`, integer ids 0..1023, ${report.registry.requestsPerRep.toLocaleString('en-US')} requests per rep. Map baseline: \`set\` + \`delete\` of \`\${scope}\\u0000\${id}\` on an in-flight Map plus \`has\` on a cancellations Map.`);
  out.push(`- Latency: a worker_threads Worker adopts the handle and either spins on \`h.cancelled\` or waits for \`h.signal\`'s abort event; the main thread stamps the time just before \`reg.cancel\`. Clock: ${lr.clock}. First ${lr.coldPolling.samples} polling samples on a fresh process (reported as info: \`reg.cancel\` is not optimised yet), then ${kCancelWarmup} unobserved cancels to warm the code path, then ${kLatencyRounds} rounds after ${kLatencyWarmup} warm-up samples; pooled polling p50/p99/p99.9 ${us(lr.polling.pooled.p50)}/${us(lr.polling.pooled.p99)}/${us(lr.polling.pooled.p999)} µs (max ${us(lr.polling.pooled.max)}) over ${lr.polling.pooled.samples} samples, pooled signal p50/p99/p99.9 ${us(lr.signal.pooled.p50)}/${us(lr.signal.pooled.p99)}/${us(lr.signal.pooled.p999)} µs (max ${us(lr.signal.pooled.max)}) over ${lr.signal.pooled.samples}.`);
  out.push(`- p99.9 rows: the Median column is the nearest-rank p99.9 of the pooled samples (${lr.polling.pooled.samples} polling: ${aboveP999(lr.polling.pooled.samples)} samples lie above it; ${lr.signal.pooled.samples} signal: ${aboveP999(lr.signal.pooled.samples)} above), not a median of rounds; Min–max is the p99.9 of each round on its own (${lr.polling.samplesPerRound} / ${lr.signal.samplesPerRound} samples, so ${aboveP999(lr.polling.samplesPerRound)} / ${aboveP999(lr.signal.samplesPerRound)} above it): thin, read it as a spread, not a figure.`);
  out.push(`- "info: one hot key" looks up a single key over and over (everything in L1): the cost of the call itself, without memory misses. "info: reg.cancel call itself" is how long \`reg.cancel\` took in the main thread; it is included in every polling sample (the stamp is taken just before the call). Polling split (pooled): \`reg.cancel\` p50 ${us(lr.polling.cancelCallUs.p50)} µs (p99 ${us(lr.polling.cancelCallUs.p99)}), cancel returned → worker saw it p50 ${us(lr.polling.afterReturnUs.p50)} µs (p99 ${us(lr.polling.afterReturnUs.p99)}).`);
  out.push('- The churn criterion (after/before ≥ 0.8) is this benchmark\'s reading of "no collapse", not a stated target.');
  out.push(`- Every rate is the median of ${kReps} reps (min–max shown), table and Map reps interleaved. Targets are reported, never asserted.`);
  out.push(`- S5, two contending threads (info, no target): one table of the same dimensions and fill (${cr.rows} rows, ${cr.slots} slots), created and filled in the main thread; two worker_threads (A, B) attach it through its descriptor and join the roster. Each run starts at a barrier in shared memory (spin, then \`Atomics.wait\`; the last thread to arrive wakes the other; start skew median ${us(cr.lookups.startSkewUs.median)} µs in the lookups runs) and is timed inside the workers with \`process.hrtime.bigint()\`. "A / B" is each thread's own ops ÷ its own time; "total" is both threads' ops ÷ the wall span from the first start to the last end (the threads ran overlapped ${pct(cr.lookups.overlap.median)}, ${pct(cr.insertDelete.overlap.median)} and ${pct(cr.hotInsertDelete.overlap.median)} of it, medians). "1 worker thread" is thread A alone on the same table, reps interleaved with the 2-thread reps (${cr.reps} each, after a warm-up); the main thread sleeps in its event loop meanwhile. The machine has ${machine.cores} cores, so two threads is all it can run in parallel, and any other load shows up directly in the 2-thread figures.`);
  out.push(`  - lookups: both threads look up the same ${cr.rows} live keys (each in its own shuffled order), ${cr.lookups.opsPerThreadPerRep.toLocaleString('en-US')} per thread per rep: read sharing only.`);
  out.push(`  - insert+delete: each thread claims + publishes + removes its own ${kPairKeys} fresh keys (disjoint sets), ${cr.insertDelete.opsPerThreadPerRep.toLocaleString('en-US')} pairs per thread per rep: two writers in one table, whose rows land among each other's (four slots share a cache line of metadata).`);
  out.push(`  - hot window: the same, but each thread's ${cr.hotWindow.keysPerThread} keys all have their homes in one window of ${cr.hotWindow.homes} neighbouring slots (homes ${cr.hotWindow.firstHome}..${cr.hotWindow.firstHome + cr.hotWindow.homes - 1}), ${cr.hotInsertDelete.opsPerThreadPerRep.toLocaleString('en-US')} pairs per thread per rep: both writers keep racing for the same free slots, probe limits and cache lines. A stress case, not a workload.`);
  const loads = [cr.lookups, cr.insertDelete, cr.hotInsertDelete].map((k) => k.otherCpuCores);
  if (loads.every((x): x is number => x !== null)) {
    const worst = Math.max(...loads);
    out.push(`  - Other processes (and hypervisor steal) used ${loads.map((x) => x.toFixed(2)).join(' / ')} cores on average during the lookups / insert+delete / hot-window runs (\`/proc/stat\` minus this process's own CPU).${worst > 0.25 ? ` **The machine was not quiet** (up to ${worst.toFixed(2)} of its ${machine.cores} cores taken): where that is near 1, the two threads shared one core and the 2-thread figures measure time-sharing, not contention.` : ''}`);
  }
  out.push(`  - After every run (${cr.checks} in all, warm-ups included) the main thread checked the table with both workers idle: \`table.verify()\` reports no problem, exactly ${cr.rows} rows are live, and each fill key is found once, holding its own value; every lookup of every run hit. A failed check fails the benchmark.`);
  out.push('');
  out.push('![ops/s, table vs Map, and S5 two contending threads](registry-latest.svg)');
  out.push('');
  return out.join('\n');
}

interface Bar {
  name: string;
  value: number;
  color: string;
}

interface BarGroup {
  label: string;
  bars: Bar[];
  note: string;
}

/** One bar chart panel of `height` px starting at `y0`: title, grid, grouped bars, legend. */
function svgPanel(parts: string[], y0: number, width: number, height: number, title: string, groups: BarGroup[], barW: number, legend: Bar[]): void {
  const left = 60;
  const top = y0 + 50;
  const plotH = 220;
  const groupW = (width - left - 20) / groups.length;
  const gap = 8;
  const maxV = Math.max(...groups.flatMap((g) => g.bars.map((b) => b.value)));
  const step = maxV > 200e6 ? 50e6 : maxV > 80e6 ? 20e6 : maxV > 20e6 ? 10e6 : 5e6;
  const top2 = Math.ceil(maxV / step) * step;
  const y = (v: number): number => top + plotH - (v / top2) * plotH;
  parts.push(`<text x="${width / 2}" y="${y0 + 22}" text-anchor="middle" font-size="15" font-weight="bold">${title}</text>`);
  for (let v = 0; v <= top2; v += step) {
    const yy = y(v).toFixed(1);
    parts.push(`<line x1="${left}" y1="${yy}" x2="${width - 20}" y2="${yy}" stroke="#e3e6ea"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${(v / 1e6).toFixed(0)}</text>`);
  }
  groups.forEach((g, i) => {
    const cx = left + groupW * i + groupW / 2;
    const span = g.bars.length * barW + (g.bars.length - 1) * gap;
    g.bars.forEach((bar, j) => {
      const x = cx - span / 2 + j * (barW + gap);
      const yy = y(bar.value);
      parts.push(`<rect x="${x.toFixed(1)}" y="${yy.toFixed(1)}" width="${barW}" height="${(top + plotH - yy).toFixed(1)}" fill="${bar.color}"><title>${bar.name} ${g.label}: ${mops(bar.value)}</title></rect>`);
      parts.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${(yy - 5).toFixed(1)}" text-anchor="middle">${(bar.value / 1e6).toFixed(1)}</text>`);
    });
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 18}" text-anchor="middle">${g.label}</text>`);
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 34}" text-anchor="middle" fill="#555">${g.note}</text>`);
  });
  parts.push(`<line x1="${left}" y1="${top + plotH}" x2="${width - 20}" y2="${top + plotH}" stroke="#333"/>`);
  const ly = y0 + height - 18;
  let lx = left;
  for (const item of legend) {
    parts.push(`<rect x="${lx}" y="${ly - 10}" width="12" height="12" fill="${item.color}"/><text x="${lx + 18}" y="${ly}">${item.name}</text>`);
    lx += 18 + Math.max(82, item.name.length * 7 + 12);
  }
}

function svgChart(report: Report): string {
  const tr = report.table;
  const cr = report.contention;
  const colors = { table: '#2f6db5', map: '#b0b7c3', one: '#8fb3de', a: '#2f6db5', b: '#4f8fd6', total: '#173a66' };
  const tableGroups: BarGroup[] = [
    { label: 'lookups (hit)', table: tr.lookups.table.median, map: tr.lookups.map.median },
    { label: 'insert+delete pairs', table: tr.insertDelete.table.median, map: tr.insertDelete.map.median },
    { label: 'lookups after churn', table: tr.churn.lookupsAfter.table.median, map: tr.churn.lookupsAfter.map.median },
  ].map((g) => ({
    label: g.label,
    bars: [{ name: 'table', value: g.table, color: colors.table }, { name: 'Map', value: g.map, color: colors.map }],
    note: `table/Map ${ratio(g.table / g.map)}`,
  }));
  const contentionGroups: BarGroup[] = [
    { label: 'lookups (same keys)', k: cr.lookups },
    { label: 'insert+delete (own keys)', k: cr.insertDelete },
    { label: `hot window (${cr.hotWindow.homes} homes)`, k: cr.hotInsertDelete },
  ].map(({ label, k }) => ({
    label,
    bars: [
      { name: '1 thread', value: k.oneThread.median, color: colors.one },
      { name: 'thread A', value: k.perThread[0].median, color: colors.a },
      { name: 'thread B', value: k.perThread[1].median, color: colors.b },
      { name: '2 threads total', value: k.total.median, color: colors.total },
    ],
    note: `2 threads ÷ 1: ${ratio(k.totalVsOneThread)}`,
  }));
  const width = 640;
  const panelH = 340;
  const height = panelH * 2 + 20;
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  parts.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  svgPanel(parts, 0, width, panelH, `native-free-shm table vs Map: M ops/s (median of ${kReps}, single thread)`, tableGroups, 56,
    [{ name: 'ShmTable', value: 0, color: colors.table }, { name: 'Map&lt;string, number&gt;', value: 0, color: colors.map }]);
  parts.push(`<line x1="20" y1="${panelH}" x2="${width - 20}" y2="${panelH}" stroke="#c8ccd2"/>`);
  svgPanel(parts, panelH, width, panelH, `S5: two worker threads on one table, M ops/s (median of ${cr.reps})`, contentionGroups, 36,
    [
      { name: '1 thread', value: 0, color: colors.one },
      { name: 'A (2 threads)', value: 0, color: colors.a },
      { name: 'B (2 threads)', value: 0, color: colors.b },
      { name: 'total', value: 0, color: colors.total },
    ]);
  const loads = [cr.lookups, cr.insertDelete, cr.hotInsertDelete].map((k) => k.otherCpuCores);
  const load = loads.every((x): x is number => x !== null) ? ` · other processes during S5: ${loads.map((x) => x.toFixed(2)).join(' / ')} cores` : '';
  parts.push(`<text x="${width - 20}" y="${height - 8}" text-anchor="end" font-size="11" fill="#555">${report.date} · node ${report.machine.node} · ${report.machine.cores} cores${load}</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Main

function usage(): string {
  return `usage: node dist/bench/registry.js [--phase <${kPhases.join('|')}>]\n`
    + '  without --phase: every phase, then bench/results/registry-*.{json,md,svg} are written\n'
    + '  with --phase: that phase only, figures printed, no results files written';
}

/** The phase to run alone, null for the full run, or undefined after a usage error. */
function parseArgs(argv: string[]): Phase | null | undefined {
  let phase: string | null = null;
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i];
    if (arg === '--phase') {
      const next = argv[++i];
      if (next === undefined || next.startsWith('-')) {
        console.error(`--phase needs a name\n${usage()}`);
        process.exitCode = 2;
        return undefined;
      }
      phase = next;
    } else if (arg.startsWith('--phase=')) {
      phase = arg.slice('--phase='.length);
    } else if (arg === '--help' || arg === '-h') {
      console.log(usage());
      return undefined;
    } else {
      console.error(`unknown argument '${arg}'\n${usage()}`);
      process.exitCode = 2;
      return undefined;
    }
  }
  if (phase === null) return null;
  if (!(kPhases as readonly string[]).includes(phase)) {
    console.error(`unknown phase '${phase}'\n${usage()}`);
    process.exitCode = 2;
    return undefined;
  }
  return phase as Phase;
}

async function runPhase(phase: Phase): Promise<void> {
  const began = now();
  console.log(`phase ${phase} only: no results files are written`);
  const lines: string[] = [];
  let phaseRows: Row[];
  switch (phase) {
    case 'registry':
      phaseRows = registryRows(benchRegistry());
      break;
    case 'lookups': {
      const s = setupTable();
      phaseRows = lookupRows(lookupsPhase(s));
      verifyTable(s.t, 'after lookups');
      break;
    }
    case 'hot-key': {
      const s = setupTable();
      phaseRows = hotKeyRows(hotKeyPhase(s));
      break;
    }
    case 'insert-delete': {
      const s = setupTable();
      phaseRows = insertDeleteRows(insertDeletePhase(s));
      verifyTable(s.t, 'after insert+delete');
      break;
    }
    case 'churn': {
      const s = setupTable();
      const c = churnPhase(s);
      verifyTable(s.t, 'after churn');
      phaseRows = churnRows(c);
      lines.push(`churn rate: table ${mops(c.tablePairsPerSec)}, Map ${mops(c.mapPairsPerSec)} (incl. key generation); slots after: ${c.after.live} live, ${c.after.tombstone} tombstones, ${c.after.empty} never used (before: ${c.before.live}, ${c.before.tombstone}, ${c.before.empty})`);
      break;
    }
    case 'latency': {
      const lr = await benchLatency();
      phaseRows = latencyRows(lr);
      lines.push(...latencyLines(lr));
      break;
    }
    case 'contention': {
      const cr = await benchContention();
      phaseRows = contentionRows(cr);
      lines.push(...contentionLines(cr));
      break;
    }
  }
  console.log('');
  console.log(textTable(phaseRows));
  console.log('');
  for (const line of lines) console.log(line);
  console.log(`phase ${phase}: ${((now() - began) / 1000).toFixed(1)} s (no results files written)`);
}

async function main(): Promise<void> {
  const phase = parseArgs(process.argv.slice(2));
  if (phase === undefined) return;
  const began = now();
  const cpus = os.cpus();
  const machine: Machine = {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    node: process.version,
    v8: process.versions.v8,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  };
  console.log(`sluice registry benchmark: ${machine.cpu}, ${machine.cores} cores, node ${machine.node}`);
  if (phase !== null) {
    await runPhase(phase);
    return;
  }

  // Registry first, in a clean heap: the table phase leaves a large heap behind.
  console.log('registry bookkeeping...');
  const registryResults = benchRegistry();
  console.log('table vs Map (lookups, insert+delete, churn)...');
  const tableResults = benchTable();
  console.log('cross-thread cancel latency...');
  const latencyResults = await benchLatency();
  // Last, so that its workers and garbage cannot touch the latency samples.
  console.log('S5: two contending threads on one table...');
  const contentionResults = await benchContention();

  const stamp = new Date();
  const report: Report = {
    benchmark: 'registry',
    date: stamp.toISOString().slice(0, 10),
    timestamp: stamp.toISOString(),
    command: kCommand,
    machine,
    config: {
      reps: kReps,
      tableCapacity: kTableCapacity,
      rows: kFill,
      keyBytes: kKeyBytes,
      maxKeyBytes: kMaxKeyBytes,
      valueWords: kValueWords,
      lookupsPerRep: kLookupsPerRep,
      pairsPerRep: kPairsPerRep,
      churnPairs: kChurnPairs,
      registryRequestsPerRep: kRegistryRequestsPerRep,
      scope: kScope,
      pollSamplesPerRound: kPollSamples,
      signalSamplesPerRound: kSignalSamples,
      latencyRounds: kLatencyRounds,
      latencyWarmup: kLatencyWarmup,
      contentionReps: kContentionReps,
      contentionLookupsPerThreadPerRep: kContentionLookups,
      contentionPairsPerThreadPerRep: kContentionPairs,
      contentionHotPairsPerThreadPerRep: kContentionHotPairs,
      contentionHotHomes: kHotHomes,
      contentionHotKeysPerThread: kHotKeysPerThread,
    },
    table: tableResults,
    ratios: {
      lookups: tableResults.lookups.table.median / tableResults.lookups.map.median,
      insertDelete: tableResults.insertDelete.table.median / tableResults.insertDelete.map.median,
      lookupsAfterChurn: tableResults.churn.lookupsAfter.table.median / tableResults.churn.lookupsAfter.map.median,
      registryVsMap: registryResults.registryNs.median / registryResults.mapNs.median,
    },
    registry: registryResults,
    latency: latencyResults,
    contention: contentionResults,
    targets: buildTargets(tableResults, registryResults, latencyResults),
    durationSeconds: 0,
  };
  report.durationSeconds = (now() - began) / 1000;

  console.log('');
  console.log(textTable(rows(report)));
  console.log('');
  const c = tableResults.churn;
  console.log(`table: ${tableResults.slots} slots, ${tableResults.rows} rows (${(tableResults.loadOfSlots * 100).toFixed(1)}% of slots); after churn ${c.after.tombstone} tombstones, ${c.after.empty} never-used slots (before: ${c.before.tombstone}, ${c.before.empty})`);
  console.log(`churn rate: table ${mops(c.tablePairsPerSec)}, Map ${mops(c.mapPairsPerSec)} (incl. key generation)`);
  for (const line of latencyLines(latencyResults)) console.log(line);
  for (const line of contentionLines(contentionResults)) console.log(line);
  const met = report.targets.filter((t) => t.met).length;
  console.log(`targets: ${met}/${report.targets.length} met${met < report.targets.length ? ` (missed: ${report.targets.filter((t) => !t.met).map((t) => t.name).join('; ')})` : ''}`);

  const dir = fileURLToPath(new URL('../../bench/results/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const json = JSON.stringify(report, null, 2) + '\n';
  const files = [
    [`registry-${report.date}.json`, json],
    ['registry-latest.json', json],
    ['registry-latest.md', markdown(report)],
    ['registry-latest.svg', svgChart(report)],
  ] as const;
  for (const [name, content] of files) writeFileSync(dir + name, content);
  console.log(`wrote ${files.map(([name]) => `bench/results/${name}`).join(', ')} (${report.durationSeconds.toFixed(1)} s)`);
}

await main();
