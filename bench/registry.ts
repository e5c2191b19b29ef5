/**
 * Benchmarks the native-free-shm table and the shared-memory registry, against plain Map baselines.
 *
 *   npm run bench:registry        (= npm run build && node dist/bench/registry.js)
 *
 * Prints a table and writes bench/results/registry-<date>.json, registry-latest.{json,md,svg}.
 * Targets are reported as met or missed; a miss never fails the run.
 */
import { mkdirSync, writeFileSync } from 'node:fs';
import * as os from 'node:os';
import { fileURLToPath } from 'node:url';
import { Worker } from 'node:worker_threads';
import { KeyScratch, Roster, ShmTable, kEmpty, kLive, kStateMask, kTombstone } from '../native-free-shm/index.js';
import type { RosterMember } from '../native-free-shm/index.js';
import { createRegistry } from '../src/index.js';
import type { Registry } from '../src/index.js';
import type { FromWorker, ToWorker, WorkerInit } from './registry-worker.js';

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

interface PreparedKeys {
  strings: string[];
  words: Int32Array[];
  lengths: Int32Array;
  hashes: Int32Array;
}

function prepareKeys(table: ShmTable, strings: string[]): PreparedKeys {
  const words: Int32Array[] = [];
  const lengths = new Int32Array(strings.length);
  const hashes = new Int32Array(strings.length);
  for (let i = 0; i < strings.length; i++) {
    const scratch = new KeyScratch(kMaxKeyBytes).setString(strings[i]);
    words.push(scratch.words);
    lengths[i] = scratch.length;
    hashes[i] = table.hash(scratch.words, scratch.length);
  }
  return { strings, words, lengths, hashes };
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

function mapLookups(m: Map<string, number>, strings: string[], order: Uint32Array, total: number, sink: { hits: number }): number {
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
  churn: {
    pairs: number;
    tablePairsPerSec: number;
    mapPairsPerSec: number;
    before: SlotCensus;
    after: SlotCensus;
    lookupsAfter: LookupPair;
    tableRatioAfterBefore: number;
    mapRatioAfterBefore: number;
  };
}

function benchTable(): TableResults {
  const roster = Roster.create({ capacity: 4 });
  const member = roster.join();
  const t = ShmTable.create({ capacity: kTableCapacity, maxKeyBytes: kMaxKeyBytes, valueWords: kValueWords, tableId: 1 }, roster);
  const rng = makeRng(0x5eed51ce);

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

  // Fill to 50%: keys 0..kFill-1, the same strings in the Map.
  const liveStrings: string[] = [];
  for (let c = 0; c < kFill; c++) liveStrings.push(keyString(c));
  const live = prepareKeys(t, liveStrings);
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
  let nextCounter = kFill;

  // 1 + 4: lookups (hit), shuffled order over the live keys.
  const order = shuffledOrder(kFill, rng);
  const lookups = measureLookups(t, m, live, order);

  // Informational: the same single key, so nothing misses the cache.
  const hot = order[0];
  tableLookupsHot(t, live.words[hot], live.lengths[hot], live.hashes[hot], kLookupsPerRep / 4);
  mapLookupsHot(m, liveStrings[hot], kLookupsPerRep / 4);
  const hotTable: number[] = [];
  const hotMap: number[] = [];
  for (let r = 0; r < kReps; r++) {
    hotTable.push(kLookupsPerRep / tableLookupsHot(t, live.words[hot], live.lengths[hot], live.hashes[hot], kLookupsPerRep));
    hotMap.push(kLookupsPerRep / mapLookupsHot(m, liveStrings[hot], kLookupsPerRep));
  }

  // 2 + 4: insert+delete pairs of keys not in the table, at 50% load.
  const pairStrings: string[] = [];
  for (let i = 0; i < kPairKeys; i++) pairStrings.push(keyString(nextCounter++));
  const pairKeys = prepareKeys(t, pairStrings);
  tableInsertDelete(t, member, pairKeys, kPairsPerRep / 4); // warm-up
  mapInsertDelete(m, pairStrings, kPairsPerRep / 4);
  const tablePairs: number[] = [];
  const mapPairs: number[] = [];
  for (let r = 0; r < kReps; r++) {
    tablePairs.push(kPairsPerRep / tableInsertDelete(t, member, pairKeys, kPairsPerRep));
    mapPairs.push(kPairsPerRep / mapInsertDelete(m, pairStrings, kPairsPerRep));
  }

  // 3: churn. The same random sequence drives both: delete a random live row, insert a fresh key.
  const before = census(t);
  const churnSeed = rng();
  const scratch = new KeyScratch(kMaxKeyBytes);
  let pick = makeRng(churnSeed);
  const firstFresh = nextCounter;
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
  if (m.size !== kFill || after.live !== kFill) throw new Error(`churn: sizes drifted (map ${m.size}, table ${after.live})`);

  // Lookups again, over the keys live now (the Map's own key strings, the same text).
  const liveAfter = prepareKeys(t, mapLive);
  for (let i = 0; i < kFill; i++) {
    if (keyString(liveCounter[i]) !== mapLive[i]) throw new Error('churn: table and map diverged');
  }
  const orderAfter = shuffledOrder(kFill, rng);
  const lookupsAfter = measureLookups(t, m, liveAfter, orderAfter);
  const problems = t.verify();
  if (problems.length > 0) throw new Error(`table verify failed: ${problems.slice(0, 3).join('; ')}`);

  return {
    slots: t.slots,
    rows: kFill,
    loadOfCapacity: kFill / kTableCapacity,
    loadOfSlots: kFill / t.slots,
    lookups,
    hotKeyLookups: { table: summarize(hotTable), map: summarize(hotMap) },
    insertDelete: { table: summarize(tablePairs), map: summarize(mapPairs) },
    churn: {
      pairs: kChurnPairs,
      tablePairsPerSec: kChurnPairs / tableChurnSeconds,
      mapPairsPerSec: kChurnPairs / mapChurnSeconds,
      before,
      after,
      lookupsAfter,
      tableRatioAfterBefore: lookupsAfter.table.median / lookups.table.median,
      mapRatioAfterBefore: lookupsAfter.map.median / lookups.map.median,
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
  pooled: Distribution;
  /** How long `reg.cancel` itself took in the main thread (part of every sample). */
  cancelCallUs: Distribution;
  /** From `reg.cancel` returning to the worker's stamp (negative when the worker saw it first). */
  afterReturnUs: Distribution;
  timedOut: number;
}

interface LatencyResults {
  clock: string;
  polling: LatencyMode;
  signal: LatencyMode;
}

class Inbox {
  readonly #queue: FromWorker[] = [];
  #waiter: ((message: FromWorker) => void) | undefined;
  #failure: Error | undefined;

  constructor(worker: Worker) {
    worker.on('message', (raw: unknown) => {
      const message = raw as FromWorker;
      const waiter = this.#waiter;
      if (waiter !== undefined) {
        this.#waiter = undefined;
        waiter(message);
      } else {
        this.#queue.push(message);
      }
    });
    worker.on('error', (error: Error) => { this.#failure = error; });
  }

  next(): Promise<FromWorker> {
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    const queued = this.#queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    return new Promise<FromWorker>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new Error(`worker did not answer within ${kMessageTimeoutMs} ms`));
      }, kMessageTimeoutMs);
      this.#waiter = (message) => {
        clearTimeout(timer);
        resolve(message);
      };
    });
  }

  async expect<T extends FromWorker['type']>(type: T): Promise<Extract<FromWorker, { type: T }>> {
    const message = await this.next();
    if (message.type === 'error') throw new Error(`worker: ${message.message}`);
    if (message.type !== type) throw new Error(`expected '${type}' from worker, got '${message.type}'`);
    return message as Extract<FromWorker, { type: T }>;
  }
}

async function latencyRound(
  reg: Registry, worker: Worker, inbox: Inbox, mode: 'poll' | 'signal', count: number, nextId: () => number,
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

async function benchLatency(): Promise<LatencyResults> {
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const init: WorkerInit = { descriptor: reg.descriptor };
  const worker = new Worker(new URL('./registry-worker.js', import.meta.url), { workerData: init });
  reg.watch(worker);
  const inbox = new Inbox(worker);
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
      pooled: distribution(all),
      cancelCallUs: distribution(cancelAll),
      afterReturnUs: distribution(afterAll),
      timedOut,
    };
  };

  try {
    const polling = await run('poll', kPollSamples);
    const signal = await run('signal', kSignalSamples);
    return { clock: 'process.hrtime.bigint() in both threads (one CLOCK_MONOTONIC)', polling, signal };
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
  machine: { cpu: string; cores: number; os: string; arch: string; node: string; v8: string; memoryGiB: number };
  config: Record<string, number | string>;
  table: TableResults;
  ratios: { lookups: number; insertDelete: number; lookupsAfterChurn: number; registryVsMap: number };
  registry: RegistryResults;
  latency: LatencyResults;
  targets: Target[];
  durationSeconds: number;
}

const mops = (x: number): string => `${(x / 1e6).toFixed(1)} M/s`;
const ratio = (x: number): string => `${x.toFixed(2)}x`;
const us = (x: number): string => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
const ns = (x: number): string => x.toFixed(0);

function buildTargets(tr: TableResults, rr: RegistryResults, lr: LatencyResults): Target[] {
  return [
    {
      name: 'table lookups (hit, 50% load)',
      target: `≥ ${mops(kTargets.lookupsPerSec)}`,
      actual: mops(tr.lookups.table.median),
      met: tr.lookups.table.median >= kTargets.lookupsPerSec,
    },
    {
      name: 'table insert+delete pairs',
      target: `≥ ${mops(kTargets.insertDeletePerSec)}`,
      actual: mops(tr.insertDelete.table.median),
      met: tr.insertDelete.table.median >= kTargets.insertDeletePerSec,
    },
    {
      name: 'lookups after churn: no collapse',
      target: 'ratio ≈ 1 (≥ 0.8)',
      actual: ratio(tr.churn.tableRatioAfterBefore),
      met: tr.churn.tableRatioAfterBefore >= 0.8,
    },
    {
      name: 'registry track+untrack+clear (median)',
      target: `≤ ${kTargets.registryNs} ns`,
      actual: `${ns(rr.registryNs.median)} ns`,
      met: rr.registryNs.median <= kTargets.registryNs,
    },
    {
      name: 'cancel → observed, polling p50',
      target: `≤ ${kTargets.pollP50Us} µs`,
      actual: `${us(lr.polling.p50Us.median)} µs`,
      met: lr.polling.p50Us.median <= kTargets.pollP50Us,
    },
    {
      name: 'cancel → observed, signal p50',
      target: `≤ ${kTargets.signalP50Us} µs`,
      actual: `${us(lr.signal.p50Us.median)} µs`,
      met: lr.signal.p50Us.median <= kTargets.signalP50Us,
    },
  ];
}

interface Row {
  metric: string;
  median: string;
  range: string;
  map: string;
  vsMap: string;
  target: string;
  status: string;
}

function rows(report: Report): Row[] {
  const { table: tr, registry: rr, latency: lr, ratios } = report;
  const status = (i: number): string => (report.targets[i].met ? 'met' : 'MISSED');
  const rate = (s: Summary): string => `${(s.min / 1e6).toFixed(1)}–${(s.max / 1e6).toFixed(1)} M/s`;
  return [
    {
      metric: 'table lookups/s (hit, 50% load)',
      median: mops(tr.lookups.table.median),
      range: rate(tr.lookups.table),
      map: mops(tr.lookups.map.median),
      vsMap: ratio(ratios.lookups),
      target: report.targets[0].target,
      status: status(0),
    },
    {
      metric: 'info: lookups/s, one hot key',
      median: mops(tr.hotKeyLookups.table.median),
      range: rate(tr.hotKeyLookups.table),
      map: mops(tr.hotKeyLookups.map.median),
      vsMap: ratio(tr.hotKeyLookups.table.median / tr.hotKeyLookups.map.median),
      target: '',
      status: '',
    },
    {
      metric: 'table insert+delete pairs/s',
      median: mops(tr.insertDelete.table.median),
      range: rate(tr.insertDelete.table),
      map: mops(tr.insertDelete.map.median),
      vsMap: ratio(ratios.insertDelete),
      target: report.targets[1].target,
      status: status(1),
    },
    {
      metric: `table lookups/s after ${(tr.churn.pairs / 1e6).toFixed(0)} M churn pairs`,
      median: mops(tr.churn.lookupsAfter.table.median),
      range: rate(tr.churn.lookupsAfter.table),
      map: mops(tr.churn.lookupsAfter.map.median),
      vsMap: ratio(ratios.lookupsAfterChurn),
      target: '',
      status: '',
    },
    {
      metric: 'lookups after/before churn',
      median: ratio(tr.churn.tableRatioAfterBefore),
      range: '',
      map: ratio(tr.churn.mapRatioAfterBefore),
      vsMap: '',
      target: report.targets[2].target,
      status: status(2),
    },
    {
      metric: 'registry track+untrack+clear',
      median: `${ns(rr.registryNs.median)} ns`,
      range: `${ns(rr.registryNs.min)}–${ns(rr.registryNs.max)} ns`,
      map: `${ns(rr.mapNs.median)} ns`,
      vsMap: ratio(ratios.registryVsMap),
      target: report.targets[3].target,
      status: status(3),
    },
    {
      metric: `cancel→seen polling p50 (${lr.polling.samplesPerRound}×${kLatencyRounds})`,
      median: `${us(lr.polling.p50Us.median)} µs`,
      range: `${us(lr.polling.p50Us.min)}–${us(lr.polling.p50Us.max)} µs`,
      map: '',
      vsMap: '',
      target: report.targets[4].target,
      status: status(4),
    },
    {
      metric: 'cancel→seen polling p99',
      median: `${us(lr.polling.p99Us.median)} µs`,
      range: `${us(lr.polling.p99Us.min)}–${us(lr.polling.p99Us.max)} µs`,
      map: '',
      vsMap: '',
      target: '',
      status: '',
    },
    {
      metric: 'info: reg.cancel call itself p50 (poll)',
      median: `${us(lr.polling.cancelCallUs.p50)} µs`,
      range: `p99 ${us(lr.polling.cancelCallUs.p99)} µs`,
      map: '',
      vsMap: '',
      target: '',
      status: '',
    },
    {
      metric: `cancel→seen signal p50 (${lr.signal.samplesPerRound}×${kLatencyRounds})`,
      median: `${us(lr.signal.p50Us.median)} µs`,
      range: `${us(lr.signal.p50Us.min)}–${us(lr.signal.p50Us.max)} µs`,
      map: '',
      vsMap: '',
      target: report.targets[5].target,
      status: status(5),
    },
    {
      metric: 'cancel→seen signal p99',
      median: `${us(lr.signal.p99Us.median)} µs`,
      range: `${us(lr.signal.p99Us.min)}–${us(lr.signal.p99Us.max)} µs`,
      map: '',
      vsMap: '',
      target: '',
      status: '',
    },
  ];
}

const kHeader: Row = { metric: 'metric', median: 'median', range: 'min–max', map: 'Map baseline', vsMap: 'vs Map', target: 'target', status: 'status' };
const kColumns: Array<keyof Row> = ['metric', 'median', 'range', 'map', 'vsMap', 'target', 'status'];

function textTable(all: Row[]): string {
  const table = [kHeader, ...all];
  const widths = kColumns.map((c) => Math.max(...table.map((r) => r[c].length)));
  const line = (r: Row): string => kColumns.map((c, i) => r[c].padEnd(widths[i])).join('  ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(kHeader), rule, ...all.map(line)].join('\n');
}

function markdown(report: Report): string {
  const { table: tr, latency: lr, machine } = report;
  const esc = (s: string): string => s.replace(/\|/g, '\\|');
  const out: string[] = [];
  out.push('# Registry benchmark');
  out.push('');
  out.push(`- Date: ${report.timestamp}`);
  out.push(`- Machine: ${machine.cpu} (${machine.cores} cores), ${machine.os} ${machine.arch}, ${machine.memoryGiB} GiB`);
  out.push(`- Node: ${machine.node} (V8 ${machine.v8})`);
  out.push(`- Command: \`${report.command}\``);
  out.push(`- Run time: ${report.durationSeconds.toFixed(1)} s`);
  out.push('');
  out.push('| Metric | Median | Min–max | Map baseline | vs Map | Target | Status |');
  out.push('|---|---:|---:|---:|---:|---|---|');
  for (const r of rows(report)) {
    out.push(`| ${kColumns.map((c) => esc(r[c])).join(' | ')} |`);
  }
  out.push('');
  out.push('"vs Map" is table ÷ Map for rates, and registry ÷ Map for ns/request (lower is better there). In the after/before row the Map column is the Map\'s own after/before ratio.');
  out.push('');
  out.push('## Notes');
  out.push('');
  out.push(`- Table: capacity ${kTableCapacity} (${tr.slots} slots), ${tr.rows} live rows (${(tr.loadOfCapacity * 100).toFixed(0)}% of capacity, ${(tr.loadOfSlots * 100).toFixed(1)}% of slots), ${kKeyBytes}-byte string keys, maxKeyBytes ${kMaxKeyBytes}, ${kValueWords} value words. Keys prebuilt (words, length, hash); only \`find\` is timed, in shuffled order. The Map uses the same key strings.`);
  out.push(`- Insert+delete: claim + value write + publish + remove of ${kPairKeys} keys not in the table, cycling, at 50% load; Map: \`set\` + \`delete\`.`);
  out.push(`- Churn: ${tr.churn.pairs.toLocaleString('en-US')} random delete+insert pairs of fresh keys (table ${mops(tr.churn.tablePairsPerSec)} incl. key generation and hashing; Map ${mops(tr.churn.mapPairsPerSec)} incl. string building). Slots before: ${tr.churn.before.live} live / ${tr.churn.before.tombstone} tombstones / ${tr.churn.before.empty} never used; after: ${tr.churn.after.live} / ${tr.churn.after.tombstone} / ${tr.churn.after.empty}.`);
  out.push(`- Registry: \`track\` + \`untrack\` + \`clear\`, scope \`${kScope}\`, integer ids 0..1023, ${report.registry.requestsPerRep.toLocaleString('en-US')} requests per rep. Map baseline: \`set\` + \`delete\` of \`\${scope}\\u0000\${id}\` on an in-flight Map plus \`has\` on a cancellations Map.`);
  out.push(`- Latency: a worker_threads Worker adopts the handle and either spins on \`h.cancelled\` or waits for \`h.signal\`'s abort event; the main thread stamps the time just before \`reg.cancel\`. Clock: ${lr.clock}. ${kLatencyRounds} rounds after ${kLatencyWarmup} warm-up samples; pooled polling p50/p99 ${us(lr.polling.pooled.p50)}/${us(lr.polling.pooled.p99)} µs over ${lr.polling.pooled.samples} samples, pooled signal p50/p99 ${us(lr.signal.pooled.p50)}/${us(lr.signal.pooled.p99)} µs over ${lr.signal.pooled.samples}.`);
  out.push(`- "info: one hot key" looks up a single key over and over (everything in L1): the cost of the call itself, without memory misses. "info: reg.cancel call itself" is how long \`reg.cancel\` took in the main thread; it is included in every polling sample (the stamp is taken just before the call). Polling split (pooled): \`reg.cancel\` p50 ${us(lr.polling.cancelCallUs.p50)} µs (p99 ${us(lr.polling.cancelCallUs.p99)}), cancel returned → worker saw it p50 ${us(lr.polling.afterReturnUs.p50)} µs (p99 ${us(lr.polling.afterReturnUs.p99)}).`);
  out.push('- The churn criterion (after/before ≥ 0.8) is this benchmark\'s reading of "no collapse", not a stated target.');
  out.push(`- Every rate is the median of ${kReps} reps (min–max shown), table and Map reps interleaved. Targets are reported, never asserted.`);
  out.push('');
  out.push('![ops/s, table vs Map](registry-latest.svg)');
  out.push('');
  return out.join('\n');
}

function svgChart(report: Report): string {
  const tr = report.table;
  const groups = [
    { label: 'lookups (hit)', table: tr.lookups.table.median, map: tr.lookups.map.median },
    { label: 'insert+delete pairs', table: tr.insertDelete.table.median, map: tr.insertDelete.map.median },
    { label: 'lookups after churn', table: tr.churn.lookupsAfter.table.median, map: tr.churn.lookupsAfter.map.median },
  ];
  const width = 640;
  const height = 340;
  const left = 60;
  const top = 50;
  const plotH = 220;
  const groupW = (width - left - 20) / groups.length;
  const barW = 56;
  const maxV = Math.max(...groups.flatMap((g) => [g.table, g.map]));
  const step = maxV > 200e6 ? 50e6 : maxV > 80e6 ? 20e6 : 10e6;
  const top2 = Math.ceil(maxV / step) * step;
  const y = (v: number): number => top + plotH - (v / top2) * plotH;
  const colors = { table: '#2f6db5', map: '#b0b7c3' };
  const parts: string[] = [];
  parts.push(`<svg xmlns="http://www.w3.org/2000/svg" width="${width}" height="${height}" viewBox="0 0 ${width} ${height}" font-family="Helvetica, Arial, sans-serif" font-size="12">`);
  parts.push(`<rect width="${width}" height="${height}" fill="#ffffff"/>`);
  parts.push(`<text x="${width / 2}" y="22" text-anchor="middle" font-size="15" font-weight="bold">native-free-shm table vs Map: M ops/s (median of ${kReps}, single thread)</text>`);
  for (let v = 0; v <= top2; v += step) {
    const yy = y(v).toFixed(1);
    parts.push(`<line x1="${left}" y1="${yy}" x2="${width - 20}" y2="${yy}" stroke="#e3e6ea"/>`);
    parts.push(`<text x="${left - 6}" y="${(y(v) + 4).toFixed(1)}" text-anchor="end" fill="#555">${(v / 1e6).toFixed(0)}</text>`);
  }
  groups.forEach((g, i) => {
    const cx = left + groupW * i + groupW / 2;
    const bars: Array<[string, number, string]> = [['table', g.table, colors.table], ['Map', g.map, colors.map]];
    bars.forEach(([name, v, color], j) => {
      const x = cx - barW - 4 + j * (barW + 8);
      const yy = y(v);
      parts.push(`<rect x="${x.toFixed(1)}" y="${yy.toFixed(1)}" width="${barW}" height="${(top + plotH - yy).toFixed(1)}" fill="${color}"><title>${name} ${g.label}: ${mops(v)}</title></rect>`);
      parts.push(`<text x="${(x + barW / 2).toFixed(1)}" y="${(yy - 5).toFixed(1)}" text-anchor="middle">${(v / 1e6).toFixed(1)}</text>`);
    });
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 18}" text-anchor="middle">${g.label}</text>`);
    parts.push(`<text x="${cx.toFixed(1)}" y="${top + plotH + 34}" text-anchor="middle" fill="#555">table/Map ${ratio(g.table / g.map)}</text>`);
  });
  parts.push(`<line x1="${left}" y1="${top + plotH}" x2="${width - 20}" y2="${top + plotH}" stroke="#333"/>`);
  const ly = height - 18;
  parts.push(`<rect x="${left}" y="${ly - 10}" width="12" height="12" fill="${colors.table}"/><text x="${left + 18}" y="${ly}">ShmTable</text>`);
  parts.push(`<rect x="${left + 100}" y="${ly - 10}" width="12" height="12" fill="${colors.map}"/><text x="${left + 118}" y="${ly}">Map&lt;string, number&gt;</text>`);
  parts.push(`<text x="${width - 20}" y="${ly}" text-anchor="end" fill="#555">${report.date} · node ${report.machine.node}</text>`);
  parts.push('</svg>');
  return parts.join('\n') + '\n';
}

// ---------------------------------------------------------------------------------------------
// Main

async function main(): Promise<void> {
  const began = now();
  const cpus = os.cpus();
  const machine = {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    node: process.version,
    v8: process.versions.v8,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  };
  console.log(`sluice registry benchmark: ${machine.cpu}, ${machine.cores} cores, node ${machine.node}`);

  // Registry first, in a clean heap: the table phase leaves a large heap behind.
  console.log('registry bookkeeping...');
  const registryResults = benchRegistry();
  console.log('table vs Map (lookups, insert+delete, churn)...');
  const tableResults = benchTable();
  console.log('cross-thread cancel latency...');
  const latencyResults = await benchLatency();

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
  const lp = latencyResults.polling.pooled;
  const ls = latencyResults.signal.pooled;
  const pc = latencyResults.polling.cancelCallUs;
  const pa = latencyResults.polling.afterReturnUs;
  console.log(`polling split: reg.cancel call p50 ${us(pc.p50)} µs (p99 ${us(pc.p99)}); cancel returned → worker saw it p50 ${us(pa.p50)} µs (p99 ${us(pa.p99)})`);
  console.log(`latency pooled: polling p50 ${us(lp.p50)} µs p99 ${us(lp.p99)} µs (n=${lp.samples}, timeouts ${latencyResults.polling.timedOut}); signal p50 ${us(ls.p50)} µs p99 ${us(ls.p99)} µs (n=${ls.samples})`);
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
