import { threadId } from 'node:worker_threads';
import type { Worker } from 'node:worker_threads';
import { ShmError, checkInteger } from './errors.js';
import * as layout from './layout.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const {
  kCounterPad, kEntryGen, kEntryIntentFrom, kEntryIntentSlot, kEntryIntentTable, kEntryOwner, kEntryStride,
  kMaxRosterCapacity, kRosterHdrCapacity, kRosterHdrCounters, kRosterHdrMagic, kRosterHdrReleases, kRosterHeaderWords, kRosterMagic,
  kTokenGenMask, kTokenIndexBits,
} = layout;

/** Structured-cloneable description of a roster: post it to a worker and call `Roster.attach` there. */
export interface RosterDescriptor {
  readonly kind: 'native-free-shm/roster';
  readonly buffer: SharedArrayBuffer;
}

export interface RosterOptions {
  /** Threads that can be members at once (default 1024, at most 4096). Entries are reused after release. */
  capacity?: number;
  /** Float64 counters each member owns (default 0). */
  counters?: number;
}

/**
 * Something the roster asks to undo a dead member's half-done claim. Tables register themselves
 * in every thread that attaches them; release runs in the thread that learns of the death.
 */
export interface IntentRecoverer {
  readonly tableId: number;
  recoverIntent(slot: number, fromCtl: number, writerIndex: number): void;
}

/**
 * A thread's membership: its roster index, the generation it joined under, and the owner token
 * rows carry so that a sweep can tell a dead owner's rows from a live one's.
 */
export interface RosterMember {
  readonly index: number;
  readonly gen: number;
  /** `(gen << 12) | index`: stored in rows as their owner. */
  readonly token: number;
  /** This member's counter block (Float64, single writer: the member's own thread). */
  readonly counters: Float64Array;
  /** Index of counter 0 of this member inside `counters`. */
  readonly counterBase: number;
}

const joined = new WeakMap<SharedArrayBuffer, RosterMember>();

/**
 * The thread table. A member is a thread that may write into tables; when a thread dies without
 * saying so, whoever owns its Worker object calls `release` (or `watch(worker)` does it), which
 * undoes the thread's unfinished claim and bumps the entry's generation: every row the dead thread
 * owned now carries a dead token, and the entry can be reused.
 *
 * Memory: 64 + capacity * (64 + 8 * roundUp(counters, 16)) bytes.
 */
export class Roster {
  readonly #buf: SharedArrayBuffer;
  readonly #i32: Int32Array;
  readonly #f64: Float64Array;
  readonly #capacity: number;
  readonly #counterStride: number;
  readonly #counterCount: number;
  readonly #recoverers = new Map<number, IntentRecoverer>();
  readonly #releaseHooks: Array<(index: number) => void> = [];

  static byteLength(capacity: number, counters: number): number {
    const stride = counters === 0 ? 0 : Math.ceil(counters / kCounterPad) * kCounterPad;
    return (kRosterHeaderWords + capacity * kEntryStride) * 4 + capacity * stride * 8;
  }

  static create(options: RosterOptions = {}): Roster {
    const capacity = checkInteger('capacity', options.capacity ?? 1024, 1, kMaxRosterCapacity);
    const counters = checkInteger('counters', options.counters ?? 0, 0, 1024);
    const buffer = new SharedArrayBuffer(Roster.byteLength(capacity, counters));
    const hdr = new Int32Array(buffer, 0, kRosterHeaderWords);
    hdr[kRosterHdrCapacity] = capacity;
    hdr[kRosterHdrCounters] = counters;
    Atomics.store(hdr, kRosterHdrMagic, kRosterMagic);
    return new Roster(buffer);
  }

  static attach(descriptor: RosterDescriptor): Roster {
    if (descriptor?.kind !== 'native-free-shm/roster' || !(descriptor.buffer instanceof SharedArrayBuffer)) {
      throw new ShmError('shm_bad_descriptor', 'not a roster descriptor');
    }
    return new Roster(descriptor.buffer);
  }

  private constructor(buffer: SharedArrayBuffer) {
    const hdr = new Int32Array(buffer, 0, kRosterHeaderWords);
    if (Atomics.load(hdr, kRosterHdrMagic) !== kRosterMagic) throw new ShmError('shm_bad_descriptor', 'roster magic mismatch');
    this.#buf = buffer;
    this.#capacity = hdr[kRosterHdrCapacity];
    this.#counterCount = hdr[kRosterHdrCounters];
    this.#counterStride = this.#counterCount === 0 ? 0 : Math.ceil(this.#counterCount / kCounterPad) * kCounterPad;
    this.#i32 = new Int32Array(buffer, 0, kRosterHeaderWords + this.#capacity * kEntryStride);
    const f64Offset = (kRosterHeaderWords + this.#capacity * kEntryStride) * 4;
    this.#f64 = new Float64Array(buffer, f64Offset, this.#capacity * this.#counterStride);
  }

  get descriptor(): RosterDescriptor {
    return { kind: 'native-free-shm/roster', buffer: this.#buf };
  }

  get capacity(): number {
    return this.#capacity;
  }

  /** Registers a table in this thread so that `release` can undo a dead writer's claim on it. */
  register(recoverer: IntentRecoverer): void {
    this.#recoverers.set(recoverer.tableId, recoverer);
  }

  /**
   * Runs `hook(index)` in this thread whenever this thread releases an entry, after the entry's
   * claim was undone and before it is reused: the place to give back what the dead member held.
   */
  onRelease(hook: (index: number) => void): void {
    this.#releaseHooks.push(hook);
  }

  /** Index of counter 0 of entry `index` in a member's `counters` array. */
  counterBaseOf(index: number): number {
    return index * this.#counterStride;
  }

  /**
   * Joins the calling thread (idempotent per thread and roster). Throws `shm_roster_full`
   * when every entry is taken.
   */
  join(): RosterMember {
    const existing = joined.get(this.#buf);
    if (existing !== undefined) return existing;
    const ownerValue = threadId + 1;
    for (let i = 0; i < this.#capacity; i++) {
      const at = kRosterHeaderWords + i * kEntryStride;
      if (Atomics.compareExchange(this.#i32, at + kEntryOwner, 0, ownerValue) === 0) {
        Atomics.store(this.#i32, at + kEntryIntentSlot, -1);
        const gen = Atomics.load(this.#i32, at + kEntryGen) & kTokenGenMask;
        const member: RosterMember = {
          index: i,
          gen,
          token: (gen << kTokenIndexBits) | i,
          counters: this.#f64,
          counterBase: i * this.#counterStride,
        };
        joined.set(this.#buf, member);
        return member;
      }
    }
    throw new ShmError('shm_roster_full', `all ${this.#capacity} roster entries are taken`);
  }

  /** Records, before a claim, which slot of which table the member is about to take. */
  setIntent(member: RosterMember, tableId: number, slot: number, fromCtl: number): void {
    const at = kRosterHeaderWords + member.index * kEntryStride;
    // Plain stores: the claim's compareExchange that follows publishes them to any thread that
    // later reads the claimed control word.
    this.#i32[at + kEntryIntentTable] = tableId;
    this.#i32[at + kEntryIntentFrom] = fromCtl;
    this.#i32[at + kEntryIntentSlot] = slot;
  }

  clearIntent(member: RosterMember): void {
    this.#i32[kRosterHeaderWords + member.index * kEntryStride + kEntryIntentSlot] = -1;
  }

  /** True while the member that minted `token` has not been released. */
  alive(token: number): boolean {
    const index = token & (kMaxRosterCapacity - 1);
    if (index >= this.#capacity) return false;
    const at = kRosterHeaderWords + index * kEntryStride;
    return Atomics.load(this.#i32, at + kEntryOwner) !== 0
      && (Atomics.load(this.#i32, at + kEntryGen) & kTokenGenMask) === token >>> kTokenIndexBits;
  }

  /** The Node thread (`threadId`) holding entry `index`, or undefined while the entry is free. */
  ownerThread(index: number): number | undefined {
    if (index < 0 || index >= this.#capacity) return undefined;
    const owner = Atomics.load(this.#i32, kRosterHeaderWords + index * kEntryStride + kEntryOwner);
    return owner === 0 ? undefined : owner - 1;
  }

  /**
   * Releases every entry held by the Node thread `nodeThreadId` (a thread that exited or was
   * terminated): undoes its unfinished claim in each table registered in this thread, then
   * retires the generation. Returns the number of entries released.
   */
  release(nodeThreadId: number): number {
    let released = 0;
    for (let i = 0; i < this.#capacity; i++) {
      const at = kRosterHeaderWords + i * kEntryStride;
      if (Atomics.load(this.#i32, at + kEntryOwner) !== nodeThreadId + 1) continue;
      const slot = Atomics.load(this.#i32, at + kEntryIntentSlot);
      if (slot >= 0) {
        const table = this.#recoverers.get(Atomics.load(this.#i32, at + kEntryIntentTable));
        table?.recoverIntent(slot, Atomics.load(this.#i32, at + kEntryIntentFrom), i);
        Atomics.store(this.#i32, at + kEntryIntentSlot, -1);
      }
      for (const hook of this.#releaseHooks) hook(i);
      Atomics.add(this.#i32, at + kEntryGen, 1);
      Atomics.store(this.#i32, at + kEntryOwner, 0);
      // Counted once retired: whoever reads the new count sees the entry dead (`alive` false).
      Atomics.add(this.#i32, kRosterHdrReleases, 1);
      released++;
    }
    if (nodeThreadId === threadId) joined.delete(this.#buf);
    return released;
  }

  /** Releases the worker's entries when it exits, however it exits. */
  watch(worker: Worker): void {
    const id = worker.threadId; // becomes -1 after exit: capture it now
    worker.once('exit', () => this.release(id));
  }

  /**
   * Entries released so far, by any thread (a count that only grows). An entry is counted after it
   * is retired, so a reader that sees the count move sees that entry's tokens dead.
   */
  get releases(): number {
    return Atomics.load(this.#i32, kRosterHdrReleases);
  }

  /** Sum of counter `k` over every entry, released ones included (their counts stay). */
  sum(k: number): number {
    let total = 0;
    for (let i = 0; i < this.#capacity; i++) total += this.#f64[i * this.#counterStride + k];
    return total;
  }

  /**
   * Counter `k` of every entry that has ever counted, by entry index. An entry outlives its thread:
   * a thread that joins later may reuse it and keeps counting from there, so each value only grows.
   */
  perEntry(k: number): Array<{ entry: number; value: number }> {
    const out: Array<{ entry: number; value: number }> = [];
    for (let i = 0; i < this.#capacity; i++) {
      const value = this.#f64[i * this.#counterStride + k];
      if (value !== 0) out.push({ entry: i, value });
    }
    return out;
  }

  get counterCount(): number {
    return this.#counterCount;
  }
}
