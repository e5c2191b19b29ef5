/**
 * The in-flight rows: a multiset of running requests keyed by (scope, id) in the shared in-flight
 * table, with the capacity every thread draws from, and the flag raise a cancel makes on a row.
 * This is the request path (`track` and `untrack` once per request): no allocation but the handle,
 * and no shared counter touched in the common case. `InFlightRows` is the base class of `Registry`,
 * so those two calls reach their bodies with no forwarding call in between, whatever V8 inlines.
 */
import * as shmLayout from '../../native-free-shm/layout.js';
import type { RosterMember, ShmTable } from '../../native-free-shm/index.js';
import type { Attachment } from './attachment.js';
import { epochWord } from './attachment.js';
import { CancelWatcher, TrackHandle, kRefusedCapacity, kRefusedInvalidId, settleHandle } from './handle.js';
import type { HandleContext, HandleRef, ReasonSource, TrackRefusal } from './handle.js';
import * as keys from './key.js';
import type { KeyEncoder, RequestId } from './key.js';
import * as layout from './layout.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const { kCtAllowance, kCtTrackRefused, kCtTracked, kCtUntracked, kIvCanceller, kIvOwner, kStPool, kEpochArmed, kEpochStride } = layout;
const { kTokenIndexBits } = shmLayout;
const { checkScope } = keys;
/** The handle class and its settle hook, as module-local consts for the same reason. */
const Handle = TrackHandle;
const settle = settleHandle;

/** The in-flight rows of one attached registry, for this thread: the request path of `Registry`. */
export class InFlightRows {
  readonly #table: ShmTable;
  readonly #state: Int32Array;
  readonly #member: RosterMember;
  readonly #counters: Float64Array;
  readonly #cb: number;
  readonly #enc: KeyEncoder;
  /** Capacity a thread takes from the shared pool at a time (1 for small capacities: exact). */
  readonly #chunk: number;
  readonly #handles: HandleContext;
  /** For adopted handles: rows another thread owns wait on the row itself. */
  readonly #adopted: HandleContext;

  constructor(a: Attachment, reasons: ReasonSource) {
    this.#table = a.inFlight;
    this.#state = a.state;
    this.#member = a.member;
    this.#chunk = Math.max(1, Math.min(32, Math.floor(a.inFlightCapacity / 256)));
    this.#counters = a.counters;
    this.#cb = a.cb;
    this.#enc = a.enc;
    this.#adopted = { table: a.inFlight, words: a.inFlight.i32, reasons };
    const epoch = epochWord(a, a.member.index);
    this.#handles = epoch >= 0 ? { ...this.#adopted, watcher: new CancelWatcher(a.state, epoch) } : this.#adopted;
    // A dead writer's claim, undone by release: give back what it had counted.
    a.inFlight.onRecovered = () => { Atomics.add(a.state, kStPool, 1); };
    a.roster.onRelease((index) => {
      const at = a.roster.counterBaseOf(index) + kCtAllowance;
      const held = a.counters[at];
      a.counters[at] = 0;
      if (held > 0) Atomics.add(a.state, kStPool, held);
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
    const table = this.#table;
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
    const removed = this.#table.remove(handle.slot, handle.ctl);
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

  /** This thread's handles awaiting a cancellation (tests, diagnostics). */
  get watching(): number {
    return this.#handles.watcher?.size ?? 0;
  }
}

/** True while at least one row of the key in the encoder is tracked (the caller just encoded it). */
export function trackedEncoded(a: Attachment): boolean {
  const key = a.enc.key;
  return a.inFlight.find(key.words, key.length, a.enc.hash) >= 0;
}

/** Raises the flag of every row of the key in the encoder (the caller just encoded it). */
export function raiseEncoded(a: Attachment): void {
  const key = a.enc.key;
  const table = a.inFlight;
  for (let s = table.find(key.words, key.length, a.enc.hash); s >= 0; s = table.next()) raiseRow(a, s, table.matchCtl);
}

/**
 * Flags one in-flight row and, if that changed it, bumps its owner's cancel epoch and wakes the
 * owner's watcher (if it ever parked one). The owner is read before the flag: a successful raise
 * proves the row was that incarnation throughout, so the owner read belongs to it.
 */
export function raiseRow(a: Attachment, slot: number, ctl: number): void {
  const table = a.inFlight;
  const v = table.valueIndex(slot);
  const index = table.i32[v + kIvOwner]! & ((1 << kTokenIndexBits) - 1);
  // Who raises it, for the reason's reader (the raise's compare-and-swap publishes this store).
  table.i32[v + kIvCanceller] = a.member.index + 1;
  if (!table.raise(slot, ctl) || index >= a.epochCount) return;
  const state = a.state;
  const at = a.epochs + index * kEpochStride;
  Atomics.add(state, at, 1);
  if (Atomics.load(state, at + kEpochArmed) !== 0) Atomics.notify(state, at);
}
