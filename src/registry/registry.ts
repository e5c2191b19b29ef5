import type { Worker } from 'node:worker_threads';
import { Roster, ShmTable } from '../../native-free-shm/index.js';
import type { RosterDescriptor, RosterMember, TableDescriptor } from '../../native-free-shm/index.js';
import { SluiceError } from '../errors.js';
import { requestCancelledChannel } from './channels.js';
import type { RequestCancelledEvent } from './channels.js';
import { CancelWatcher, TrackHandle, kRefusedCapacity, kRefusedInvalidId, settleHandle } from './handle.js';
import type { HandleContext, HandleRef, TrackRefusal } from './handle.js';
import { KeyEncoder, kMaxKeyBytes, validRequestId, writeWtf8 } from './key.js';
import type { RequestId } from './key.js';
import * as layout from './layout.js';
import { epochBase } from './layout.js';
import * as shmLayout from '../../native-free-shm/layout.js';
import * as policy from './policy.js';
import { QuotaPolicy, checkCount, checkRegistryOptions } from './policy.js';
import type { CleanupResult, RegistryOptions } from './policy.js';
import { kMaxReasonBytes, sanitizeReason } from './reason.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const {
  kCounterCount, kCtAllowance, kCtCancellations, kCtCancellationsRefused, kCtEvictions, kCtExpired, kCtInFlightSwept, kCtTrackRefused,
  kCtTracked, kCtUntracked,
  kCvAt, kCvReason, kCvReasonLen, kCvScopeHash, kCvStamp, kIvCanceller, kIvOwner, kStBuckets, kStPool, kStMagic, kStRows, kStStamp,
  kStateMagic, kTableCancellations, kTableInFlight, kEpochArmed, kEpochCancelling, kEpochStride,
  kCancellingBusy, kCancellingIdle, kCancellingWaited,
} = layout;
const { kTokenIndexBits } = shmLayout;
const { kCancelValueWords, rowGone } = policy;
/** The handle class and its settle hook, as module-local consts for the same reason. */
const Handle = TrackHandle;
const settle = settleHandle;

export type { CleanupResult, RegistryMemory, RegistryOptions } from './policy.js';
export { registryByteLength, registryMemory } from './policy.js';

/** Structured-cloneable: post it to any thread and `attachRegistry` it there. */
export interface RegistryDescriptor {
  readonly kind: 'sluice/registry';
  readonly roster: RosterDescriptor;
  readonly inFlight: TableDescriptor;
  readonly cancellations: TableDescriptor;
  readonly state: SharedArrayBuffer;
  readonly maxRows: number;
  readonly maxRowsPerScope: number;
  readonly inFlightCapacity: number;
  readonly buckets: number;
}

export type CancelResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly error: 'cancellation_limit_reached' | 'invalid_request_id' };

/** Node-wide counts, from any thread. Totals are cumulative since the registry was created. */
export interface RegistryCounters {
  /** Requests tracked now (counted by a scan). */
  inFlight: number;
  /** Cancellation rows held now. */
  cancellationRows: number;
  tracked: number;
  untracked: number;
  /** `track` refusals at capacity. */
  trackRefused: number;
  /** Cancellations recorded. */
  cancellations: number;
  /** `cancel` refusals by the per-scope quota. */
  cancellationsRefused: number;
  /** Rows evicted by the global cap. */
  evictions: number;
  /** Rows removed by `cleanup` for age. */
  expired: number;
  /** In-flight rows of exited threads removed by `cleanup`. */
  inFlightSwept: number;
}

const kOk: CancelResult = Object.freeze({ ok: true });
const kLimit: CancelResult = Object.freeze({ ok: false, error: 'cancellation_limit_reached' });
const kInvalid: CancelResult = Object.freeze({ ok: false, error: 'invalid_request_id' });
const kDecoder = new TextDecoder();
/** `#readReason` found no cancellation row (as opposed to a row without a reason: undefined). */
const kNoRow = null;
/**
 * How long `#reasonOf` spins on a canceller's word before it parks in `Atomics.wait`: publishing the
 * row normally takes a microsecond or so, far less than a wait and a wake.
 */
const kReasonSpins = 2_000;
/** Each park is this short, so a canceller that died unwatched is noticed by `#reasonOf`'s bound. */
const kReasonParkMs = 5;
/**
 * The bound of `#reasonOf`'s wait. Not a timing assumption: a canceller descheduled between raising
 * and publishing is waited for however long it takes (measured: more than 5 ms on a loaded 2-core
 * machine), and one that dies there is released (its word cleared) by whoever owns its Worker.
 * Only a thread that died unwatched, so never released, runs into it; the reason then reads as absent.
 */
const kReasonWaitMs = 1_000;

/** Allocates a registry in shared memory; the calling thread is attached to it. */
export function createRegistry(options: RegistryOptions = {}): Registry {
  const { maxRows, maxRowsPerScope, inFlightCapacity, maxThreads, cancellationSlots, buckets } = checkRegistryOptions(options);
  const roster = Roster.create({ capacity: maxThreads, counters: kCounterCount });
  const inFlight = ShmTable.create({ capacity: inFlightCapacity, maxKeyBytes: kMaxKeyBytes, valueWords: 2, tableId: kTableInFlight }, roster);
  // One batch of slack: writers racing past the cap overshoot it before a reclaim catches up.
  const cancellations = ShmTable.create({
    capacity: cancellationSlots,
    maxKeyBytes: kMaxKeyBytes,
    valueWords: kCancelValueWords,
    tableId: kTableCancellations,
    seed: inFlight.seed, // one hash serves both tables
  }, roster);
  const state = new SharedArrayBuffer((epochBase(buckets) + maxThreads * kEpochStride) * 4);
  const words = new Int32Array(state);
  words[kStPool] = inFlightCapacity;
  Atomics.store(words, kStMagic, kStateMagic);
  return new Registry({
    kind: 'sluice/registry',
    roster: roster.descriptor,
    inFlight: inFlight.descriptor,
    cancellations: cancellations.descriptor,
    state,
    maxRows,
    maxRowsPerScope,
    inFlightCapacity,
    buckets,
  });
}

/** Attaches the calling thread to a registry created elsewhere; the same registry, not a copy. */
export function attachRegistry(descriptor: RegistryDescriptor): Registry {
  return new Registry(descriptor);
}

/**
 * The cancellation registry (docs/registry.md): cancellation rows and a multiset of in-flight rows keyed by
 * (scope, id), in shared memory, usable from every thread that attaches it. Request path:
 * `track` → run → `untrack` → `clear` (in a finally).
 */
export class Registry {
  readonly descriptor: RegistryDescriptor;
  readonly maxRows: number;
  readonly maxRowsPerScope: number;
  readonly inFlightCapacity: number;
  readonly #roster: Roster;
  readonly #inFlight: ShmTable;
  readonly #cancels: ShmTable;
  readonly #state: Int32Array;
  readonly #bucketMask: number;
  readonly #member: RosterMember;
  readonly #counters: Float64Array;
  readonly #cb: number;
  readonly #enc: KeyEncoder;
  readonly #reasonBytes = new Uint8Array(kMaxReasonBytes + 4);
  readonly #reasonWords = new Int32Array(this.#reasonBytes.buffer);
  /** Capacity a thread takes from the shared pool at a time (1 for small capacities: exact). */
  readonly #chunk: number;
  readonly #handles: HandleContext;
  /** For adopted handles: rows another thread owns wait on the row itself. */
  readonly #adopted: HandleContext;
  /** Word of roster entry 0's cancel epoch in `#state`, and how many entries have one. */
  readonly #epochs: number;
  readonly #epochCount: number;
  /** This thread's cancelling word in `#state` (see kEpochCancelling), -1 if it has no epoch line. */
  readonly #cancelling: number;
  /** Quota and eviction: called only when a bucket is at the quota, the cap is reached, or by cleanup. */
  readonly #policy: QuotaPolicy;

  constructor(descriptor: RegistryDescriptor) {
    if (descriptor?.kind !== 'sluice/registry' || !(descriptor.state instanceof SharedArrayBuffer)) {
      throw new SluiceError('bad_descriptor', 'not a registry descriptor');
    }
    this.descriptor = descriptor;
    this.maxRows = descriptor.maxRows;
    this.maxRowsPerScope = descriptor.maxRowsPerScope;
    this.inFlightCapacity = descriptor.inFlightCapacity;
    this.#roster = Roster.attach(descriptor.roster);
    this.#inFlight = ShmTable.attach(descriptor.inFlight, this.#roster);
    this.#cancels = ShmTable.attach(descriptor.cancellations, this.#roster);
    this.#state = new Int32Array(descriptor.state);
    if (Atomics.load(this.#state, kStMagic) !== kStateMagic) throw new SluiceError('bad_descriptor', 'registry state magic mismatch');
    this.#bucketMask = descriptor.buckets - 1;
    this.#member = this.#roster.join();
    this.#counters = this.#member.counters;
    this.#cb = this.#member.counterBase;
    this.#enc = new KeyEncoder(this.#inFlight.seed);
    this.#epochs = epochBase(descriptor.buckets);
    this.#epochCount = Math.max(0, Math.floor((this.#state.length - this.#epochs) / kEpochStride));
    this.#cancelling = this.#member.index < this.#epochCount ? this.#epochs + this.#member.index * kEpochStride + kEpochCancelling : -1;
    const reasons = { reasonOf: (slot: number, id: RequestId, scope: string) => this.#reasonOf(slot, id, scope) };
    this.#adopted = { table: this.#inFlight, words: this.#inFlight.i32, reasons };
    this.#handles = this.#member.index < this.#epochCount
      ? { ...this.#adopted, watcher: new CancelWatcher(this.#state, this.#epochs + this.#member.index * kEpochStride) }
      : this.#adopted;
    this.#chunk = Math.max(1, Math.min(32, Math.floor(this.inFlightCapacity / 256)));
    this.#policy = new QuotaPolicy({
      roster: this.#roster, inFlight: this.#inFlight, cancels: this.#cancels, state: this.#state, bucketMask: this.#bucketMask,
      member: this.#member, counters: this.#counters, cb: this.#cb, enc: this.#enc, maxRows: this.maxRows, maxRowsPerScope: this.maxRowsPerScope,
    });
    // A dead writer's claim, undone by release: give back what it had counted.
    this.#inFlight.onRecovered = () => { Atomics.add(this.#state, kStPool, 1); };
    this.#cancels.onRecovered = () => { Atomics.sub(this.#state, kStRows, 1); };
    this.#roster.onRelease((index) => {
      // A thread that died inside `cancel` must not leave readers waiting for its row.
      if (index < this.#epochCount) {
        const at = this.#epochs + index * kEpochStride + kEpochCancelling;
        if (Atomics.exchange(this.#state, at, kCancellingIdle) === kCancellingWaited) Atomics.notify(this.#state, at);
      }
      const at = this.#roster.counterBaseOf(index) + kCtAllowance;
      const held = this.#counters[at];
      this.#counters[at] = 0;
      if (held > 0) Atomics.add(this.#state, kStPool, held);
    });
  }

  /**
   * Starts tracking a request. Returns its handle, or a refusal (`invalid_request_id`, or
   * `in_flight_capacity_exhausted`: answer 503, never run it uncancellable). Throws only for a
   * non-string scope (a programming error).
   */
  track(id: RequestId, scope: string): TrackHandle | TrackRefusal {
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return kRefusedInvalidId;
    // Capacity is handed out in chunks, so the common track touches no shared counter.
    const counters = this.#counters;
    const allowance = this.#cb + kCtAllowance;
    if (counters[allowance] <= 0 && !this.#refill()) {
      counters[this.#cb + kCtTrackRefused]++;
      return kRefusedCapacity;
    }
    counters[allowance]--;
    const key = enc.key;
    const table = this.#inFlight;
    const slot = table.claim(key.words, key.length, enc.hash, this.#member);
    if (slot < 0) {
      counters[allowance]++;
      counters[this.#cb + kCtTrackRefused]++;
      return kRefusedCapacity;
    }
    table.i32[table.valueIndex(slot) + kIvOwner] = this.#member.token;
    const ctl = table.publish(slot, this.#member);
    counters[this.#cb + kCtTracked]++;
    return new Handle(this.#handles, slot, ctl, id, scope);
  }

  /** Stops tracking the handle's own row (a namesake's row stays). Idempotent. */
  untrack(handle: TrackHandle): void {
    const removed = this.#inFlight.remove(handle.slot, handle.ctl);
    settle(handle, removed);
    if (removed === 0) return;
    const counters = this.#counters;
    counters[this.#cb + kCtUntracked]++;
    const allowance = this.#cb + kCtAllowance;
    if (++counters[allowance] > 2 * this.#chunk) {
      Atomics.add(this.#state, kStPool, this.#chunk);
      counters[allowance] -= this.#chunk;
    }
  }

  /** Takes up to a chunk of capacity from the shared pool; false when it is empty. */
  #refill(): boolean {
    const state = this.#state;
    let pool = Atomics.load(state, kStPool);
    while (pool > 0) {
      const take = Math.min(this.#chunk, pool);
      const seen = Atomics.compareExchange(state, kStPool, pool, pool - take);
      if (seen === pool) {
        this.#counters[this.#cb + kCtAllowance] += take;
        return true;
      }
      pool = seen;
    }
    return false;
  }

  /** A handle for a request tracked in another thread (from its `ref`), to poll or wait on here. */
  adopt(ref: HandleRef): TrackHandle {
    return new TrackHandle(this.#adopted, ref.slot, ref.ctl, ref.id, ref.scope);
  }

  /** True while at least one request with this id is tracked in this scope. */
  inFlight(id: unknown, scope: string): boolean {
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return false;
    const key = enc.key;
    const table = this.#inFlight;
    return table.find(key.words, key.length, enc.hash) >= 0;
  }

  /**
   * Records a cancellation of (scope, id) and raises the cancelled flag of every request tracked
   * under that key now. Does not require the key to be in flight (the protocol handler checks that).
   * A `null`/`undefined` id is a no-op. Refuses only past the per-scope quota, or for a bad id.
   */
  cancel(id: unknown, reason: unknown, scope: string): CancelResult {
    return this.#record(id, reason, scope, undefined);
  }

  /**
   * Cancels one tracked request: records the cancellation row of its key (so `reason` and
   * `cancelled` answer as for `cancel`) but raises only this request's flag, not a namesake's.
   * What a transport does when the client of that one request goes away.
   *
   * Never refused: flagging one's own request must not depend on the scope's quota (another client
   * of the scope could fill it). Its row is bounded by the in-flight table, not by the quota; if no
   * row can be had at all, the flag is raised anyway and only the reason is lost.
   */
  cancelRequest(handle: TrackHandle, reason: unknown): CancelResult {
    const result = this.#record(handle.id, reason, handle.scope, handle);
    if (!result.ok) this.#raise(handle.slot, handle.ctl);
    return kOk;
  }

  /**
   * Flags one in-flight row and, if that changed it, bumps its owner's cancel epoch and wakes the
   * owner's watcher (if it ever parked one). The owner is read before the flag: a successful raise
   * proves the row was that incarnation throughout, so the owner read belongs to it.
   */
  #raise(slot: number, ctl: number): void {
    const table = this.#inFlight;
    const v = table.valueIndex(slot);
    const index = table.i32[v + kIvOwner]! & ((1 << kTokenIndexBits) - 1);
    // Who raises it, for `#reasonOf` (the raise's compare-and-swap publishes this store).
    table.i32[v + kIvCanceller] = this.#member.index + 1;
    if (!table.raise(slot, ctl) || index >= this.#epochCount) return;
    const state = this.#state;
    const at = this.#epochs + index * kEpochStride;
    Atomics.add(state, at, 1);
    if (Atomics.load(state, at + kEpochArmed) !== 0) Atomics.notify(state, at);
  }

  /** This thread's handles awaiting a cancellation (tests, diagnostics). */
  get watching(): number {
    return this.#handles.watcher?.size ?? 0;
  }

  #record(id: unknown, reason: unknown, scope: string, only: TrackHandle | undefined): CancelResult {
    if (id === null || id === undefined) return kOk;
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return kInvalid;
    const state = this.#state;
    const bucket = kStBuckets + (enc.scopeHash & this.#bucketMask);
    // A plain read of the bucket (an Atomics.load is a ~9 ns call on Node 20, ahead of the raise):
    // it only gates the exact test, and the bucket is an approximate count while writers race anyway.
    if (only === undefined && this.maxRowsPerScope !== Infinity && state[bucket] >= this.maxRowsPerScope && this.#policy.scopeFull(scope)) {
      this.#counters[this.#cb + kCtCancellationsRefused]++;
      return kLimit;
    }
    // Raise the running requests' flags first: that is what a polling tool waits for (measured:
    // bench/results/registry-latest.md, cancel → observed). The reason becomes readable a moment
    // later, when the row below is published; until then this thread's cancelling word is non-zero
    // and `#reasonOf` waits on it, so a tool that reads the reason right after the flag still gets it.
    const cancelling = this.#cancelling;
    if (cancelling >= 0) state[cancelling] = kCancellingBusy; // published by the raise's compare-and-swap
    try {
      const key = enc.key;
      const inFlight = this.#inFlight;
      if (only !== undefined) this.#raise(only.slot, only.ctl);
      else for (let s = inFlight.find(key.words, key.length, enc.hash); s >= 0; s = inFlight.next()) this.#raise(s, inFlight.matchCtl);
      if (!this.#writeRow(reason, state, bucket)) {
        // Every slot is taken by writers that are mid-insert: nothing left to evict. Flags raised
        // above stay raised (the request is cancelled, without a reason), as for cancelRequest.
        this.#counters[this.#cb + kCtCancellationsRefused]++;
        return kLimit;
      }
    } finally {
      if (cancelling >= 0 && Atomics.exchange(state, cancelling, kCancellingIdle) === kCancellingWaited) Atomics.notify(state, cancelling);
    }
    this.#counters[this.#cb + kCtCancellations]++;
    if (requestCancelledChannel.hasSubscribers) {
      const event: RequestCancelledEvent = { requestId: id as RequestId, scope, reason: sanitizeReason(reason) };
      requestCancelledChannel.publish(event);
    }
    return kOk;
  }

  /**
   * Writes the cancellation row of the key in the encoder (one row per key: the newest wins).
   * False when no slot could be had even after reclaiming.
   */
  #writeRow(reason: unknown, state: Int32Array, bucket: number): boolean {
    if (Atomics.load(state, kStRows) >= this.maxRows) this.#policy.reclaim(false);
    const text = sanitizeReason(reason);
    // sanitizeReason drops unpaired surrogates and keeps ≤ kMaxReasonChars code points, so the
    // WTF-8 writer produces plain UTF-8 and always fits (a JS loop: encodeInto is a C++ call).
    const reasonLength = text === undefined ? -1 : writeWtf8(text, this.#reasonBytes, 0, kMaxReasonBytes);
    const table = this.#cancels;
    const enc = this.#enc;
    const key = enc.key;
    const hash = enc.hash;
    const stamp = (Atomics.add(state, kStStamp, 1) + 1) | 0;
    Atomics.add(state, bucket, 1);
    Atomics.add(state, kStRows, 1);
    let slot = table.claim(key.words, key.length, hash, this.#member);
    for (let tries = 0; slot < 0 && tries < 4; tries++) {
      this.#policy.reclaim(true);
      slot = table.claim(key.words, key.length, hash, this.#member);
    }
    if (slot < 0) {
      Atomics.sub(state, bucket, 1);
      Atomics.sub(state, kStRows, 1);
      return false;
    }
    const v = table.valueIndex(slot);
    table.f64[(v + kCvAt) >>> 1] = Date.now();
    const w = table.i32;
    w[v + kCvStamp] = stamp;
    w[v + kCvScopeHash] = enc.scopeHash;
    w[v + kCvReasonLen] = reasonLength;
    if (reasonLength > 0) {
      const words = (reasonLength + 3) >>> 2;
      for (let j = 0; j < words; j++) w[v + kCvReason + j] = this.#reasonWords[j];
    }
    const ctl = table.publish(slot, this.#member);
    // Keep one row per key: the newest stamp wins, so racing cancels never both remove each other.
    for (let s = table.find(key.words, key.length, hash); s >= 0; s = table.next()) {
      if (s === slot) continue;
      if (((w[table.valueIndex(s) + kCvStamp] - stamp) | 0) < 0) {
        if (table.remove(s, table.matchCtl) !== 0) rowGone(state, bucket);
      } else {
        if (table.remove(slot, ctl) !== 0) rowGone(state, bucket);
        break;
      }
    }
    return true;
  }

  /** True when a cancellation row exists for (scope, id). */
  cancelled(id: unknown, scope: string): boolean {
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return false;
    const key = enc.key;
    const table = this.#cancels;
    return table.find(key.words, key.length, enc.hash) >= 0;
  }

  /** The sanitised reason of the cancellation row for (scope, id); undefined when none or no reason. */
  reason(id: unknown, scope: string): string | undefined {
    return this.#readReason(id, scope) ?? undefined;
  }

  /**
   * The reason for the request in in-flight `slot`, whose flag the caller saw. `cancel` raises flags
   * before it publishes the row that holds the reason, so when there is no row yet this waits while
   * the thread that raised the flag is still inside `cancel`: a short spin, then `Atomics.wait` on
   * that thread's cancelling word, which it clears (and notifies) once its row is published, or
   * which its release clears if it dies there. Any canceller of the key publishes a row for it
   * before it clears its word, so waiting on whichever raised the flag last is enough.
   */
  #reasonOf(slot: number, id: RequestId, scope: string): string | undefined {
    let found = this.#readReason(id, scope);
    if (found !== kNoRow) return found;
    const state = this.#state;
    let deadline = 0;
    for (;;) {
      const by = this.#inFlight.i32[this.#inFlight.valueIndex(slot) + kIvCanceller] - 1;
      // Our own cancel (a subscriber reading the reason from inside it) cannot be waited for.
      if (by < 0 || by >= this.#epochCount || by === this.#member.index) break;
      const at = this.#epochs + by * kEpochStride + kEpochCancelling;
      let spins = 0;
      while (Atomics.load(state, at) !== kCancellingIdle && ++spins < kReasonSpins);
      const word = Atomics.load(state, at);
      if (word === kCancellingIdle) break;
      found = this.#readReason(id, scope);
      if (found !== kNoRow) return found;
      const now = performance.now();
      if (deadline === 0) deadline = now + kReasonWaitMs;
      else if (now > deadline) break;
      // Ask the canceller to notify, then sleep until it clears the word (or a park ends).
      if (word === kCancellingWaited || Atomics.compareExchange(state, at, kCancellingBusy, kCancellingWaited) === kCancellingBusy) {
        Atomics.wait(state, at, kCancellingWaited, kReasonParkMs);
      }
    }
    return this.#readReason(id, scope) ?? undefined;
  }

  /** The reason of the row for (scope, id): a string, undefined for a row without one, kNoRow for no row. */
  #readReason(id: unknown, scope: string): string | undefined | typeof kNoRow {
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return kNoRow;
    const key = enc.key;
    const table = this.#cancels;
    const hash = enc.hash;
    for (let attempt = 0; attempt < 8; attempt++) {
      const slot = table.find(key.words, key.length, hash);
      if (slot < 0) return kNoRow;
      const ctl = table.matchCtl;
      const v = table.valueIndex(slot);
      const length = table.i32[v + kCvReasonLen];
      if (length < 0 || length > kMaxReasonBytes) {
        if (table.ctl(slot) === ctl) return undefined; // a row without a reason
        continue; // replaced while we read it
      }
      const words = (length + 3) >>> 2;
      for (let j = 0; j < words; j++) this.#reasonWords[j] = table.i32[v + kCvReason + j];
      // The row may have been replaced while we copied: only a still-current copy counts.
      if (table.ctl(slot) === ctl) return kDecoder.decode(this.#reasonBytes.subarray(0, length));
    }
    return kNoRow;
  }

  /** Removes the cancellation row for (scope, id). Idempotent; writes nothing when there is none. */
  clear(id: unknown, scope: string): void {
    checkScope(scope);
    // No cancellation row anywhere, the common case: nothing to look up (and no cold line of the
    // cancellation table to touch). A plain read, like the lookup's own probe-limit read: the count
    // is raised before a row is claimed, so a row that exists is counted; a cancel racing with this
    // clear is ordered after it either way.
    if (this.#state[kStRows] === 0) return;
    const enc = this.#enc;
    if (!enc.encode(id, scope)) return;
    const key = enc.key;
    const table = this.#cancels;
    const bucket = kStBuckets + (enc.scopeHash & this.#bucketMask);
    for (let s = table.find(key.words, key.length, enc.hash); s >= 0; s = table.next()) {
      if (table.remove(s, table.matchCtl) !== 0) rowGone(this.#state, bucket);
    }
  }

  /**
   * Removes cancellation rows older than `ttlMs` (strictly) and in-flight rows whose owning thread
   * has exited (see `watch`). Publishes `sluice:cancellation:cleanup`.
   */
  cleanup(ttlMs: number): CleanupResult {
    if (typeof ttlMs !== 'number' || !(ttlMs >= 0)) throw new SluiceError('invalid_option', `ttlMs must be a number >= 0, got ${String(ttlMs)}`);
    return this.#policy.expire(ttlMs);
  }

  /**
   * Runs `cleanup(ttlMs)` every `intervalMs` (defaults: 5 minutes, every 60 s) on an unref'd
   * timer; returns a function that stops it. The supervisor runs one per node.
   */
  startJanitor(options: { intervalMs?: number; ttlMs?: number } = {}): () => void {
    const intervalMs = checkCount('intervalMs', options.intervalMs, 60_000, 1, 2 ** 31 - 1);
    const ttlMs = checkCount('ttlMs', options.ttlMs, 300_000, 0, Number.MAX_SAFE_INTEGER);
    const timer = setInterval(() => this.cleanup(ttlMs), intervalMs);
    timer.unref();
    return () => clearInterval(timer);
  }

  /**
   * Declares a thread gone (its Worker's `threadId`): undoes its unfinished writes now, and makes its
   * in-flight rows collectable by the next `cleanup`. Call it from the thread that owns the Worker,
   * or let `watch` do it.
   */
  threadExited(threadId: number): void {
    this.#roster.release(threadId);
  }

  /** Calls `threadExited` when the worker exits, however it exits. */
  watch(worker: Worker): void {
    this.#roster.watch(worker);
  }

  /**
   * Node-wide counts from any thread: totals from the shared per-thread counters, `inFlight` by a
   * scan of the in-flight table (exact, O(capacity): about a millisecond at the default size).
   */
  counters(): RegistryCounters {
    const r = this.#roster;
    return {
      inFlight: this.#inFlight.countLive(),
      cancellationRows: Atomics.load(this.#state, kStRows),
      tracked: r.sum(kCtTracked),
      untracked: r.sum(kCtUntracked),
      trackRefused: r.sum(kCtTrackRefused),
      cancellations: r.sum(kCtCancellations),
      cancellationsRefused: r.sum(kCtCancellationsRefused),
      evictions: r.sum(kCtEvictions),
      expired: r.sum(kCtExpired),
      inFlightSwept: r.sum(kCtInFlightSwept),
    };
  }

  /** Rows counted by scanning the tables (O(capacity); for tests and diagnostics). */
  scan(): { cancellationRows: number; inFlightRows: number } {
    return { cancellationRows: this.#cancels.countLive(), inFlightRows: this.#inFlight.countLive() };
  }

  /** Structural check of both tables at rest (see `ShmTable.verify`); empty when sound. */
  verify(): string[] {
    return [...this.#inFlight.verify().map((p) => `in-flight: ${p}`), ...this.#cancels.verify().map((p) => `cancellations: ${p}`)];
  }

  /** Test seam: records a row with a chosen timestamp, as `cancel` would (no in-flight gate). */
  seedCancellation(id: RequestId, scope: string, cancelledAt: number, reason?: string): CancelResult {
    const result = this.cancel(id, reason, scope);
    if (!result.ok) return result;
    const enc = this.#enc;
    enc.encode(id, scope);
    const key = enc.key;
    const table = this.#cancels;
    const slot = table.find(key.words, key.length, enc.hash);
    if (slot >= 0) table.f64[(table.valueIndex(slot) + kCvAt) >>> 1] = cancelledAt;
    return result;
  }
}

function checkScope(scope: unknown): string {
  if (typeof scope !== 'string') throw new SluiceError('invalid_scope', `scope must be a string, got ${typeof scope}`);
  return scope;
}

export { validRequestId };
