/**
 * The registry's quota and eviction policy, apart from the request path: option checks and sizing,
 * the exact per-scope quota test, and the global cap's eviction (largest scope first, oldest first).
 * Each runs only off the hot path: `track`/`untrack`/`clear` never call into this module but for
 * `rowGone` (a plain function, inlined like the method it was). The TTL sweep is in janitor.ts.
 */
import { Roster, ShmTable, kLive, kStateMask } from '../../native-free-shm/index.js';
import type { RosterMember } from '../../native-free-shm/index.js';
import { SluiceError } from '../errors.js';
import { integer, integerOrInfinity } from '../validate.js';
import { kMaxKeyBytes, scopeEndOf } from './key.js';
import type { KeyEncoder } from './key.js';
import {
  kCounterCount, kCtEvictions, kCvAt, kCvReason, kCvScopeHash, kCvStamp,
  epochBase, kEpochStride, kStBuckets, kStDeleteVersion, kStReclaimLock, kStRows,
} from './layout.js';
import { kMaxReasonBytes } from './reason.js';

export interface RegistryOptions {
  /** Global cap on cancellation rows: a memory backstop that evicts, never refuses. Default 10 000. */
  maxRows?: number;
  /** Per-scope quota on cancellation rows; past it `cancel` refuses. `Infinity` turns it off. Default 256. */
  maxRowsPerScope?: number;
  /** Concurrent tracked requests across every thread; past it `track` refuses. Default 65 536. */
  inFlightCapacity?: number;
  /** Threads that may attach at once (released entries are reused). Default 1024, at most 4096. */
  maxThreads?: number;
}

/** The options' defaults, for the checks and for `registryMemory` alike. */
const kDefaults = { maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536, maxThreads: 1024 } as const;

/** Int32 words of a cancellation row's value: stamp, time, scope hash, reason. */
export const kCancelValueWords = kCvReason + kMaxReasonBytes / 4;
/** Scopes remembered as full, per thread, before the memo is dropped. */
const kFullScopeMemo = 4096;

/** The options checked and defaulted, and the sizes they give. */
export interface RegistrySizing {
  maxRows: number;
  maxRowsPerScope: number;
  inFlightCapacity: number;
  maxThreads: number;
  /** Cancellation-table slots: the cap plus one batch of slack (writers racing past the cap overshoot it before a reclaim catches up). */
  cancellationSlots: number;
  /** Per-scope row counters, hashed (a power of two, at least 4 per row of the cap). */
  buckets: number;
}

export function checkRegistryOptions(options: RegistryOptions): RegistrySizing {
  if (options === null || typeof options !== 'object') throw new SluiceError('invalid_option', 'options must be an object');
  const maxRows = integer('maxRows', options.maxRows, kDefaults.maxRows, 1, 10_000_000);
  return {
    maxRows,
    maxRowsPerScope: integerOrInfinity('maxRowsPerScope', options.maxRowsPerScope, kDefaults.maxRowsPerScope, 1, 10_000_000),
    inFlightCapacity: integer('inFlightCapacity', options.inFlightCapacity, kDefaults.inFlightCapacity, 1, 1 << 24),
    maxThreads: integer('maxThreads', options.maxThreads, kDefaults.maxThreads, 1, 4096),
    cancellationSlots: cancellationSlots(maxRows),
    buckets: bucketsFor(maxRows),
  };
}

function cancellationSlots(maxRows: number): number {
  return maxRows + Math.max(16, Math.ceil(maxRows / 20));
}

function bucketsFor(maxRows: number): number {
  let buckets = 1024;
  while (buckets < maxRows * 4) buckets *= 2;
  return buckets;
}

/** Bytes of shared memory of each part of a registry with these options. */
export interface RegistryMemory {
  roster: number;
  inFlight: number;
  cancellations: number;
  state: number;
  total: number;
}

/** Bytes of shared memory a registry with these options allocates, part by part (options unchecked). */
export function registryMemory(options: RegistryOptions = {}): RegistryMemory {
  const maxRows = options.maxRows ?? kDefaults.maxRows;
  const maxThreads = options.maxThreads ?? kDefaults.maxThreads;
  const roster = Roster.byteLength(maxThreads, kCounterCount);
  const inFlight = ShmTable.byteLength(options.inFlightCapacity ?? kDefaults.inFlightCapacity, kMaxKeyBytes, 2);
  const cancellations = ShmTable.byteLength(cancellationSlots(maxRows), kMaxKeyBytes, kCancelValueWords);
  const state = (epochBase(bucketsFor(maxRows)) + maxThreads * kEpochStride) * 4;
  return { roster, inFlight, cancellations, state, total: roster + inFlight + cancellations + state };
}

/** Bytes of shared memory a registry with these options allocates (options unchecked, as before). */
export function registryByteLength(options: RegistryOptions = {}): number {
  return registryMemory(options).total;
}

/** A cancellation row was deleted: its scope bucket, the row count, and the delete version move. */
export function rowGone(state: Int32Array, bucket: number): void {
  Atomics.sub(state, bucket, 1);
  Atomics.sub(state, kStRows, 1);
  Atomics.add(state, kStDeleteVersion, 1);
}

/** What the policy works on: one attached registry's tables, state and this thread's member. */
export interface PolicyContext {
  readonly roster: Roster;
  readonly inFlight: ShmTable;
  readonly cancels: ShmTable;
  readonly state: Int32Array;
  readonly bucketMask: number;
  readonly member: RosterMember;
  readonly counters: Float64Array;
  /** This thread's first counter. */
  readonly cb: number;
  /** The registry's key encoder, holding the key `scopeFull` is asked about. */
  readonly enc: KeyEncoder;
  readonly maxRows: number;
  readonly maxRowsPerScope: number;
}

/** The quota and eviction policy of one attached registry (one per thread, like the Registry). */
export class QuotaPolicy {
  readonly #c: PolicyContext;
  readonly #fullScopes = new Map<string, number>();

  constructor(context: PolicyContext) {
    this.#c = context;
  }

  /**
   * The exact test behind the per-scope quota, taken only when the scope's hash bucket (shared by
   * colliding scopes, so an upper bound) is at the quota. A scope found full is remembered until a
   * row is deleted anywhere, so a flood against a full scope does not rescan. The scope's key must
   * be in the encoder (the caller just encoded it).
   */
  scopeFull(scope: string): boolean {
    const c = this.#c;
    const version = Atomics.load(c.state, kStDeleteVersion);
    if (this.#fullScopes.get(scope) === version) return true;
    const enc = c.enc;
    const prefix = enc.key.bytes;
    const prefixLength = enc.scopeEnd;
    const scopeHash = enc.scopeHash;
    const table = c.cancels;
    const words = table.i32;
    const bytes = new Uint8Array(words.buffer);
    let count = 0;
    for (let s = 0; s < table.slots && count < c.maxRowsPerScope; s++) {
      if ((table.ctl(s) & kStateMask) !== kLive || words[table.valueIndex(s) + kCvScopeHash] !== scopeHash) continue;
      const k = table.keyIndex(s) * 4;
      let j = 0;
      while (j < prefixLength && bytes[k + j] === prefix[j]) j++;
      if (j === prefixLength) count++;
    }
    if (count < c.maxRowsPerScope) return false;
    if (this.#fullScopes.size >= kFullScopeMemo) this.#fullScopes.clear();
    this.#fullScopes.set(scope, version);
    return true;
  }

  /**
   * Global cap: evicts a batch of maxRows/20 rows, largest scope first and oldest first within
   * it, spilling into the next largest; equal sizes fall back to age. Age is the cancellation
   * time, then the order of insertion (rows stamped in the same millisecond).
   * One thread reclaims at a time; others go on, inserting while it scans (the cap is a backstop:
   * the overshoot may pass the slack `cancellationSlots` sizes for; the table's slots, that size
   * over its load factor, bound it, since a writer with no free slot forces a reclaim). Writers
   * count their row before they look for the lock, so the reclaimer, re-reading the count once it
   * has let go, sees every row inserted past it, and goes again while the count is over the cap:
   * the rows at rest are never above maxRows. `force` waits for no one (the table had no free
   * slot) and frees one batch: its writer retries its claim.
   */
  reclaim(force: boolean): void {
    const c = this.#c;
    const state = c.state;
    const token = c.member.token;
    for (;;) {
      if (Atomics.compareExchange(state, kStReclaimLock, 0, token) !== 0) {
        const holder = Atomics.load(state, kStReclaimLock);
        const stale = holder !== 0 && !c.roster.alive(holder);
        if (!(stale && Atomics.compareExchange(state, kStReclaimLock, holder, token) === holder) && !force) return;
      }
      let evicted = 0;
      try {
        evicted = this.#evictBatch();
      } finally {
        Atomics.compareExchange(state, kStReclaimLock, token, 0);
      }
      // No live row to evict: the rows counted are writers' still in flight, each of which
      // counted itself and will look at the cap in turn.
      if (force || evicted === 0 || Atomics.load(state, kStRows) <= c.maxRows) return;
    }
  }

  /** One batch of the global cap's eviction (see reclaim), under the reclaim lock. */
  #evictBatch(): number {
    const c = this.#c;
    const table = c.cancels;
    const bytes = new Uint8Array(table.i32.buffer);
    interface Row { slot: number; ctl: number; at: number; stamp: number; scope: string; id: string }
    const rows: Row[] = [];
    const sizes = new Map<string, number>();
    for (let s = 0; s < table.slots; s++) {
      const ctl = table.ctl(s);
      if ((ctl & kStateMask) !== kLive) continue;
      const k = table.keyIndex(s) * 4;
      const scopeEnd = scopeEndOf(bytes, k);
      // Latin-1 strings of the raw bytes compare bytewise with `<`.
      const scope = String.fromCharCode(...bytes.subarray(k, k + scopeEnd));
      const id = String.fromCharCode(...bytes.subarray(k + scopeEnd, k + table.keyLength(s)));
      const at = table.f64[(table.valueIndex(s) + kCvAt) >>> 1];
      const stamp = table.i32[table.valueIndex(s) + kCvStamp];
      if (table.ctl(s) !== ctl) continue;
      rows.push({ slot: s, ctl, at, stamp, scope, id });
      sizes.set(scope, (sizes.get(scope) ?? 0) + 1);
    }
    rows.sort((a, b) => {
      const bySize = (sizes.get(b.scope) ?? 0) - (sizes.get(a.scope) ?? 0);
      if (bySize !== 0) return bySize;
      if (a.at !== b.at) return a.at - b.at;
      // Same millisecond: insertion order (stamps are unique and wrap-safe over any live window).
      if (a.stamp !== b.stamp) return (a.stamp - b.stamp) | 0;
      if (a.scope !== b.scope) return a.scope < b.scope ? -1 : 1;
      return a.id < b.id ? -1 : a.id > b.id ? 1 : 0;
    });
    const batch = Math.max(1, Math.floor(c.maxRows / 20));
    let evicted = 0;
    for (let i = 0; i < rows.length && evicted < batch; i++) {
      const row = rows[i];
      if (table.remove(row.slot, row.ctl) !== 0) {
        rowGone(c.state, kStBuckets + (table.i32[table.valueIndex(row.slot) + kCvScopeHash] & c.bucketMask));
        evicted++;
      }
    }
    c.counters[c.cb + kCtEvictions] += evicted;
    return evicted;
  }
}
