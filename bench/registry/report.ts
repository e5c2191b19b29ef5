/**
 * The registry benchmark's report: target rows, the text table printed to the console, the
 * Markdown of registry-latest.md and the chart of registry-latest.svg. No side effects on import.
 */
import type { Machine } from '../lib/machine.js';
import { mdTable, mops } from '../lib/report.js';
import type { Target } from '../lib/report.js';
import { aboveP999 } from '../lib/stats.js';
import type { Summary } from '../lib/stats.js';
import { svgHead, svgPanel } from '../lib/svg.js';
import type { BarGroup } from '../lib/svg.js';
import type { RegistryResults } from './bookkeeping.js';
import type { LatencyMode, LatencyResults } from './cancel-latency.js';
import type { ChurnResults } from './churn.js';
import { kCancelWarmup, kKeyBytes, kLatencyRounds, kLatencyWarmup, kMaxKeyBytes, kPairKeys, kReps, kScope, kTableCapacity, kTargets, kValueWords } from './config.js';
import type { ContentionKernelResult, ContentionResults } from './contention.js';
import type { LimitResults } from './limits.js';
import type { MemoryResults } from './memory.js';
import type { LookupPair } from './table.js';

export interface TableResults {
  slots: number;
  rows: number;
  loadOfCapacity: number;
  loadOfSlots: number;
  lookups: LookupPair;
  /** Informational: the same keys in a table sized for them (75 % of slots in use). */
  fullCapacityLookups: LookupPair & { byteLength: number; slots: number };
  /** Informational: one key looked up repeatedly (all in cache), the per-call ceiling. */
  hotKeyLookups: LookupPair;
  insertDelete: LookupPair;
  churn: ChurnResults & { tableRatioAfterBefore: number; mapRatioAfterBefore: number };
}

export interface Report {
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
  memory: MemoryResults;
  limits: LimitResults;
  targets: Target[];
  durationSeconds: number;
}

export const ratio = (x: number): string => `${x.toFixed(2)}x`;
export const us = (x: number): string => (x < 10 ? x.toFixed(2) : x < 100 ? x.toFixed(1) : x.toFixed(0));
export const ns = (x: number): string => x.toFixed(0);
export const rate = (s: Summary): string => `${(s.min / 1e6).toFixed(1)}–${(s.max / 1e6).toFixed(1)} M/s`;
export const mib = (bytes: number): string => `${(bytes / 1048576).toFixed(2)} MiB`;

/** Table ÷ Map, from each rep's pair (the reps are interleaved, so a pair saw the same machine). */
function ratioSummary(l: LookupPair): { median: number; min: number; max: number } {
  return { median: l.table.median / l.map.median, min: l.table.min / l.map.max, max: l.table.max / l.map.min };
}

/** A table rate as a multiple of the Map's in the same run. */
function ratioTarget(name: string, floor: number, l: LookupPair): Target {
  const r = ratioSummary(l);
  return {
    name,
    target: `≥ ${floor.toFixed(1)}x Map`,
    actual: `${ratio(r.median)} (${mops(l.table.median)} ÷ ${mops(l.map.median)})`,
    met: r.median >= floor,
  };
}

/** The first round's absolute floors (superseded by the ratios): info only. */
function rateInfo(floor: number, l: LookupPair): string {
  return `info: ≥ ${mops(floor)} ${l.table.median >= floor ? 'met' : 'missed'}`;
}

const targetFor = {
  lookups: (l: LookupPair): Target => ratioTarget('table lookups, 32 k keys ÷ Map', kTargets.lookupsVsMap, l),
  insertDelete: (l: LookupPair): Target => ratioTarget('table insert+delete ÷ Map set+delete', kTargets.insertDeleteVsMap, l),
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
  memory: (mr: MemoryResults): Target => ({
    name: `cancellation table memory at default maxRows (${mr.maxRows.toLocaleString('en-US')})`,
    target: `≤ ${mib(kTargets.cancellationTableBytes)}`,
    actual: `${mib(mr.cancellations)} (${mr.cancellations.toLocaleString('en-US')} bytes)`,
    met: mr.cancellations <= kTargets.cancellationTableBytes,
  }),
};

/** Criteria kept from the first round, reported but not among the issue's targets. */
function infoStatus(met: boolean): string {
  return met ? 'info: met' : 'info: missed';
}

/** Issue 17's five targets, in its order. */
export function buildTargets(tr: TableResults, rr: RegistryResults, lr: LatencyResults, mr: MemoryResults): Target[] {
  return [
    targetFor.registry(rr),
    targetFor.poll(lr.polling),
    targetFor.lookups(tr.lookups),
    targetFor.insertDelete(tr.insertDelete),
    targetFor.memory(mr),
  ];
}

/** `map`/`vsMap` are the Baseline and "vs baseline" columns: the Map for table rows, one thread for S5 rows. */
export interface Row {
  metric: string;
  median: string;
  range: string;
  map: string;
  vsMap: string;
  target: string;
  status: string;
}

export function row(metric: string, median: string, range: string, map = '', vsMap = '', target?: Target): Row {
  return { metric, median, range, map, vsMap, target: target?.target ?? '', status: target === undefined ? '' : target.met ? 'met' : 'MISSED' };
}

function infoRow(metric: string, median: string, range: string, map: string, vsMap: string, criterion: string, met: boolean): Row {
  return { metric, median, range, map, vsMap, target: criterion, status: infoStatus(met) };
}

export function lookupRows(l: LookupPair): Row[] {
  const r = ratioSummary(l);
  return [
    row('table lookups ÷ Map (hit, 32 k keys, 50% load)', ratio(r.median), `${ratio(r.min)}–${ratio(r.max)}`, mops(l.map.median), ratio(r.median), targetFor.lookups(l)),
    infoRow('info: table lookups/s (first round: absolute floor)', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(r.median), `≥ ${mops(kTargets.infoLookupsPerSec)}`, l.table.median >= kTargets.infoLookupsPerSec),
  ];
}

export function fullCapacityRows(l: LookupPair & { byteLength: number; slots: number }): Row[] {
  const r = ratioSummary(l);
  return [row(`info: lookups ÷ Map, the same keys in a table sized for them (75% of ${l.slots} slots, ${(l.byteLength / 2 ** 20).toFixed(1)} MiB)`, ratio(r.median), `${ratio(r.min)}–${ratio(r.max)}`, mops(l.map.median), ratio(r.median))];
}

export function hotKeyRows(l: LookupPair): Row[] {
  return [row('info: lookups/s, one hot key', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(l.table.median / l.map.median))];
}

export function insertDeleteRows(l: LookupPair): Row[] {
  const r = ratioSummary(l);
  return [
    row('table insert+delete ÷ Map set+delete', ratio(r.median), `${ratio(r.min)}–${ratio(r.max)}`, mops(l.map.median), ratio(r.median), targetFor.insertDelete(l)),
    infoRow('info: table insert+delete pairs/s (first round: absolute floor)', mops(l.table.median), rate(l.table), mops(l.map.median), ratio(r.median), `≥ ${mops(kTargets.infoInsertDeletePerSec)}`, l.table.median >= kTargets.infoInsertDeletePerSec),
  ];
}

export function churnRows(c: ChurnResults, before?: LookupPair): Row[] {
  const after = c.lookupsAfter;
  const out = [
    row(`table lookups/s after ${(c.pairs / 1e6).toFixed(0)} M churn pairs`, mops(after.table.median), rate(after.table), mops(after.map.median), ratio(after.table.median / after.map.median)),
  ];
  if (before !== undefined) {
    const tableRatio = after.table.median / before.table.median;
    out.push(infoRow('lookups after/before churn (no collapse)', ratio(tableRatio), '', ratio(after.map.median / before.map.median), '', 'ratio ≈ 1 (≥ 0.8)', tableRatio >= 0.8));
  }
  return out;
}

export function registryRows(rr: RegistryResults): Row[] {
  return [
    row(
      'registry track+untrack+clear', `${ns(rr.registryNs.median)} ns`, `${ns(rr.registryNs.min)}–${ns(rr.registryNs.max)} ns`,
      `${ns(rr.mapNs.median)} ns`, ratio(rr.registryNs.median / rr.mapNs.median), targetFor.registry(rr),
    ),
    row(
      `info: the same with ${rr.otherRows} cancellation rows of other scopes (clear looks its key up)`,
      `${ns(rr.registryWithRowsNs.median)} ns`, `${ns(rr.registryWithRowsNs.min)}–${ns(rr.registryWithRowsNs.max)} ns`,
      `${ns(rr.mapWithRowsNs.median)} ns`, ratio(rr.registryWithRowsNs.median / rr.mapWithRowsNs.median),
    ),
  ];
}

export function latencyRows(lr: LatencyResults): Row[] {
  const µs = (x: number): string => `${us(x)} µs`;
  const range = (s: Summary): string => `${us(s.min)}–${us(s.max)} µs`;
  const { polling: p, signal: g } = lr;
  return [
    row(`cancel→seen polling p50 (${p.samplesPerRound}×${kLatencyRounds})`, µs(p.p50Us.median), range(p.p50Us), '', '', targetFor.poll(p)),
    row('cancel→seen polling p99', µs(p.p99Us.median), range(p.p99Us)),
    row(`cancel→seen polling p99.9 (pooled ${p.pooled.samples})`, µs(p.pooled.p999), range(p.p999Us)),
    row('info: reg.cancel call itself p50 (poll)', µs(p.cancelCallUs.p50), `p99 ${µs(p.cancelCallUs.p99)}`),
    row(`info: floor, the same rounds with one Atomics.store instead of reg.cancel, p50`, µs(lr.floor.p50Us.median), `${range(lr.floor.p50Us)}; p99 ${µs(lr.floor.p99Us.median)}`),
    row(`info: polling p50, the process's first ${lr.coldPolling.samples} cancels (not yet optimised)`, µs(lr.coldPolling.seen.p50), `p99 ${µs(lr.coldPolling.seen.p99)}; call p50 ${µs(lr.coldPolling.cancelCall.p50)}`),
    infoRow(`cancel→seen signal p50 (${g.samplesPerRound}×${kLatencyRounds})`, µs(g.p50Us.median), range(g.p50Us), '', '', `≤ ${kTargets.infoSignalP50Us} µs (first round)`, g.p50Us.median <= kTargets.infoSignalP50Us),
    row('cancel→seen signal p99', µs(g.p99Us.median), range(g.p99Us)),
    row(`cancel→seen signal p99.9 (pooled ${g.pooled.samples})`, µs(g.pooled.p999), range(g.p999Us)),
  ];
}

export function contentionRows(cr: ContentionResults): Row[] {
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

export function memoryRows(mr: MemoryResults): Row[] {
  return [
    row('cancellation table memory, default options', mib(mr.cancellations), `${Math.round(mr.cancellationBytesPerRow)} bytes per row of maxRows`, '', '', targetFor.memory(mr)),
    row('info: whole registry memory, default options', mib(mr.total), `in-flight ${mib(mr.inFlight)}, roster ${mib(mr.roster)}, state ${mib(mr.state)}`),
  ];
}

export function limitRows(lm: LimitResults): Row[] {
  const n = (x: number): string => `${x.toFixed(0)} ns`;
  return [
    row('info: floor, lookup: touch the key record + home row line (plain reads)', n(lm.lookupTouchNs), `+ 2 Atomics.load: ${n(lm.lookupTouchAtomicNs)}; find ${n(lm.lookupFindNs)}`, n(lm.lookupMapNs), ratio(lm.lookupMapNs / lm.lookupTouchNs)),
    row('info: floor, lookup: find\'s whole probe as a free function, control words by Atomics.load', n(lm.lookupProbeAtomicNs), `same probe with plain reads: ${n(lm.lookupProbePlainNs)}`, n(lm.lookupMapNs), ratio(lm.lookupMapNs / lm.lookupProbeAtomicNs)),
    row('info: floor, insert+delete: CAS + store + CAS on the same rows', n(lm.pairAtomicsNs), `table pair ${n(lm.pairTableNs)}`, n(lm.pairMapNs), ratio(lm.pairMapNs / lm.pairAtomicsNs)),
    row('info: floor, track+untrack: CAS + store + CAS + an 8-field object', n(lm.bookkeepingFloorNs), `Atomics: load ${lm.atomicLoadNs.toFixed(1)}, store ${lm.atomicStoreNs.toFixed(1)}, CAS ${lm.atomicCasNs.toFixed(1)} ns`),
  ];
}

export function rows(report: Report): Row[] {
  const { table: tr, registry: rr, latency: lr, contention: cr, memory: mr, limits: lm } = report;
  return [
    ...registryRows(rr),
    ...latencyRows(lr),
    ...lookupRows(tr.lookups),
    ...fullCapacityRows(tr.fullCapacityLookups),
    ...hotKeyRows(tr.hotKeyLookups),
    ...insertDeleteRows(tr.insertDelete),
    ...memoryRows(mr),
    ...churnRows(tr.churn, tr.lookups),
    ...limitRows(lm),
    ...contentionRows(cr),
  ];
}

const kHeader: Row = { metric: 'metric', median: 'median', range: 'min–max', map: 'baseline', vsMap: 'vs baseline', target: 'target', status: 'status' };
const kColumns: Array<keyof Row> = ['metric', 'median', 'range', 'map', 'vsMap', 'target', 'status'];

export function textTable(all: Row[]): string {
  const table = [kHeader, ...all];
  const widths = kColumns.map((c) => Math.max(...table.map((r) => r[c].length)));
  const line = (r: Row): string => kColumns.map((c, i) => r[c].padEnd(widths[i])).join('  ').trimEnd();
  const rule = widths.map((w) => '-'.repeat(w)).join('  ');
  return [line(kHeader), rule, ...all.map(line)].join('\n');
}


export function latencyLines(lr: LatencyResults): string[] {
  const lp = lr.polling.pooled;
  const ls = lr.signal.pooled;
  const pc = lr.polling.cancelCallUs;
  const pa = lr.polling.afterReturnUs;
  return [
    `polling split: reg.cancel call p50 ${us(pc.p50)} µs (p99 ${us(pc.p99)}, p99.9 ${us(pc.p999)}); cancel returned → worker saw it p50 ${us(pa.p50)} µs (p99 ${us(pa.p99)}, p99.9 ${us(pa.p999)})`,
    `latency pooled: polling p50 ${us(lp.p50)} µs p99 ${us(lp.p99)} µs p99.9 ${us(lp.p999)} µs max ${us(lp.max)} µs (n=${lp.samples}, timeouts ${lr.polling.timedOut}); signal p50 ${us(ls.p50)} µs p99 ${us(ls.p99)} µs p99.9 ${us(ls.p999)} µs max ${us(ls.max)} µs (n=${ls.samples})`,
  ];
}

export function contentionLines(cr: ContentionResults): string[] {
  const out: string[] = [];
  for (const k of [cr.lookups, cr.insertDelete, cr.hotInsertDelete]) {
    const [a, b] = k.perThread;
    out.push(`S5 ${k.label}: 1 thread ${mops(k.oneThread.median)}; 2 threads A ${mops(a.median)} + B ${mops(b.median)}, total ${mops(k.total.median)} = ${ratio(k.totalVsOneThread)} of 1 thread; overlap ${(k.overlap.median * 100).toFixed(1)}% (min ${(k.overlap.min * 100).toFixed(1)}%), start skew median ${us(k.startSkewUs.median)} µs (max ${us(k.startSkewUs.max)}); other processes ${k.otherCpuCores === null ? 'n/a' : `${k.otherCpuCores.toFixed(2)} cores`}`);
  }
  out.push(`S5 checks: ${cr.checks} runs, each followed by table.verify() = no problems, ${cr.rows} live rows, every live key found once with its value; hot window: homes ${cr.hotWindow.firstHome}..${cr.hotWindow.firstHome + cr.hotWindow.homes - 1}, ${cr.hotWindow.keysPerThread} keys per thread (${cr.hotWindow.candidatesHashed.toLocaleString('en-US')} candidates hashed); phase ${cr.seconds.toFixed(1)} s`);
  return out;
}

export function markdown(report: Report): string {
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
  out.push(...mdTable(['Metric', 'Median', 'Min–max', 'Baseline', 'vs baseline', 'Target', 'Status'], 'lrrrrll', rows(report).map((r) => kColumns.map((c) => esc(r[c])))));
  out.push('');
  out.push('Baseline is the Map for the table and registry rows, and the same workload on one worker thread for the S5 "2 threads total" rows. "vs baseline" is table ÷ Map for rates, registry ÷ Map for ns/request (lower is better there), and 2 threads total ÷ 1 thread for S5. In the after/before row the Baseline column is the Map\'s own after/before ratio.');
  out.push('');
  out.push('## Notes');
  out.push('');
  out.push(`- Table: capacity ${kTableCapacity} (${tr.slots} slots), ${tr.rows} live rows (${(tr.loadOfCapacity * 100).toFixed(0)}% of capacity, ${(tr.loadOfSlots * 100).toFixed(1)}% of slots), ${kKeyBytes}-byte string keys, maxKeyBytes ${kMaxKeyBytes}, ${kValueWords} value words. Keys prebuilt (hash, length and words packed in one Int32Array, one record of 32 bytes per key); only \`find\` is timed, in shuffled order. The Map uses the same key strings. Each row of the table is one 64-byte line (control word, hash, length, probe limit, value, key).`);
  out.push(`- Insert+delete: claim + value write + publish + remove of ${kPairKeys} keys not in the table, cycling, at 50% load; Map: \`set\` + \`delete\`.`);
  out.push(`- Churn: ${tr.churn.pairs.toLocaleString('en-US')} random delete+insert pairs of fresh keys (table ${mops(tr.churn.tablePairsPerSec)} incl. key generation and hashing; Map ${mops(tr.churn.mapPairsPerSec)} incl. string building). Slots before: ${tr.churn.before.live} live / ${tr.churn.before.tombstone} tombstones / ${tr.churn.before.empty} never used; after: ${tr.churn.after.live} / ${tr.churn.after.tombstone} / ${tr.churn.after.empty}.`);
  out.push(`- Registry: \`track\` + \`untrack\` + \`clear\`, scope \`${kScope}\`, integer ids 0..1023, ${report.registry.requestsPerRep.toLocaleString('en-US')} requests per rep. Map baseline: \`set\` + \`delete\` of \`\${scope}\\u0000\${id}\` on an in-flight Map plus \`has\` on a cancellations Map. With no cancellation row anywhere, \`clear\` returns after one read of the row count (the common node: nobody cancelled within the TTL); the info row below it runs the same requests while ${report.registry.otherRows} rows of four other scopes exist, so every \`clear\` looks its key up, against a Map whose cancellations hold as many keys.`);
  out.push(`- Latency: a worker_threads Worker adopts the handle and either spins on \`h.cancelled\` or waits for \`h.signal\`'s abort event; the main thread stamps the time just before \`reg.cancel\`. Clock: ${lr.clock}. First ${lr.coldPolling.samples} polling samples on a fresh process (reported as info: \`reg.cancel\` is not optimised yet), then ${kCancelWarmup} unobserved cancels to warm the code path, then ${kLatencyRounds} rounds after ${kLatencyWarmup} warm-up samples; pooled polling p50/p99/p99.9 ${us(lr.polling.pooled.p50)}/${us(lr.polling.pooled.p99)}/${us(lr.polling.pooled.p999)} µs (max ${us(lr.polling.pooled.max)}) over ${lr.polling.pooled.samples} samples, pooled signal p50/p99/p99.9 ${us(lr.signal.pooled.p50)}/${us(lr.signal.pooled.p99)}/${us(lr.signal.pooled.p999)} µs (max ${us(lr.signal.pooled.max)}) over ${lr.signal.pooled.samples}.`);
  out.push(`- p99.9 rows: the Median column is the nearest-rank p99.9 of the pooled samples (${lr.polling.pooled.samples} polling: ${aboveP999(lr.polling.pooled.samples)} samples lie above it; ${lr.signal.pooled.samples} signal: ${aboveP999(lr.signal.pooled.samples)} above), not a median of rounds; Min–max is the p99.9 of each round on its own (${lr.polling.samplesPerRound} / ${lr.signal.samplesPerRound} samples, so ${aboveP999(lr.polling.samplesPerRound)} / ${aboveP999(lr.signal.samplesPerRound)} above it): thin, read it as a spread, not a figure.`);
  out.push(`- "info: one hot key" looks up a single key over and over (everything in L1): the cost of the call itself, without memory misses. "info: reg.cancel call itself" is how long \`reg.cancel\` took in the main thread; it is included in every polling sample (the stamp is taken just before the call). Polling split (pooled): \`reg.cancel\` p50 ${us(lr.polling.cancelCallUs.p50)} µs (p99 ${us(lr.polling.cancelCallUs.p99)}), cancel returned → worker saw it p50 ${us(lr.polling.afterReturnUs.p50)} µs (p99 ${us(lr.polling.afterReturnUs.p99)}).`);
  const mr = report.memory;
  out.push(`- Memory: \`createRegistry()\` with default options, each SharedArrayBuffer's byteLength (checked equal to \`registryMemory()\`): cancellation table ${mr.cancellations.toLocaleString('en-US')} bytes (${Math.round(mr.cancellationBytesPerRow)} per row of maxRows ${mr.maxRows.toLocaleString('en-US')}: its slots are maxRows + 5 % at 75 % load, and each row holds a 520-byte key slot and up to 800 bytes of reason inline), in-flight table ${mr.inFlight.toLocaleString('en-US')}, roster ${mr.roster.toLocaleString('en-US')}, state ${mr.state.toLocaleString('en-US')}; total ${mr.total.toLocaleString('en-US')} bytes. Why ≤ 4 MiB is missed: bench/results/registry-limits.md.`);
  out.push('- Targets are issue 17\'s five (ratios where it says ratio). The first round\'s absolute floors (≥ 50 M lookups/s, ≥ 15 M pairs/s), the signal p50 and the churn criterion are kept as info rows. "info: floor" rows are minimal kernels (bench/registry/limits.ts) measured in the same run: the same cache lines or the same Atomics operations with nothing else, to show what a target leaves for the code.');
  out.push('- The churn criterion (after/before ≥ 0.8) is this benchmark\'s reading of "no collapse", not a stated target.');
  out.push(`- Every rate is the median of ${kReps} reps (min–max shown), table and Map reps interleaved. Targets are reported, never asserted.`);
  out.push(`- S5, two contending threads (info, no target): one table of the same dimensions and fill (${cr.rows} rows, ${cr.slots} slots), created and filled in the main thread; two worker_threads (A, B) attach it through its descriptor and join the roster. Each run starts at a barrier in shared memory (spin, then \`Atomics.wait\`; the last thread to arrive wakes the other; start skew median ${us(cr.lookups.startSkewUs.median)} µs in the lookups runs) and is timed inside the workers with \`process.hrtime.bigint()\`. "A / B" is each thread's own ops ÷ its own time; "total" is both threads' ops ÷ the wall span from the first start to the last end (the threads ran overlapped ${pct(cr.lookups.overlap.median)}, ${pct(cr.insertDelete.overlap.median)} and ${pct(cr.hotInsertDelete.overlap.median)} of it, medians). "1 worker thread" is thread A alone on the same table, reps interleaved with the 2-thread reps (${cr.reps} each, after a warm-up); the main thread sleeps in its event loop meanwhile. The machine has ${machine.cores} cores, so two threads is all it can run in parallel, and any other load shows up directly in the 2-thread figures.`);
  out.push(`  - lookups: both threads look up the same ${cr.rows} live keys (each in its own shuffled order), ${cr.lookups.opsPerThreadPerRep.toLocaleString('en-US')} per thread per rep: read sharing only.`);
  out.push(`  - insert+delete: each thread claims + publishes + removes its own ${kPairKeys} fresh keys (disjoint sets), ${cr.insertDelete.opsPerThreadPerRep.toLocaleString('en-US')} pairs per thread per rep: two writers in one table, whose rows land among each other's (each row is its own cache line).`);
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

export function svgChart(report: Report): string {
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
  parts.push(...svgHead(width, height, '#ffffff', 12));
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
