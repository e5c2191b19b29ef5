import { randomInt } from 'node:crypto';
import { ShmError, checkInteger } from './errors.js';
import { hashWords, wordsFor } from './hash.js';
import * as layout from './layout.js';
import type { IntentRecoverer, Roster, RosterMember } from './roster.js';

// Local copies of the layout: optimised code reads another module's export through its cell, with a
// hole check, at every use (V8 does not fold imported bindings), while a module-local const becomes
// an immediate. On the lookup path that was a dozen loads and branches per probe.
const kEmpty = layout.kEmpty;
const kWriting = layout.kWriting;
const kLive = layout.kLive;
const kTombstone = layout.kTombstone;
const kStateMask = layout.kStateMask;
const kFlagBit = layout.kFlagBit;
const kWaitedBit = layout.kWaitedBit;
const kIdentityMask = layout.kIdentityMask;
const kSeqShift = layout.kSeqShift;
const kSeqMask = layout.kSeqMask;
const kHeaderWords = layout.kHeaderWords;
const kLineWords = layout.kLineWords;
const kSmallValueWords = layout.kSmallValueWords;
const kRowDist = layout.kRowDist;
const kRowHash = layout.kRowHash;
const kRowKey = layout.kRowKey;
const kRowLen = layout.kRowLen;
const { kHdrKeyWords, kHdrMagic, kHdrSeed, kHdrSlots, kHdrTableId, kHdrValueWords, kHdrVersion, kTableMagic, kTableVersion } = layout;

/** The most a table is filled at its stated capacity: slots = ceil(capacity / kMaxLoad). */
export const kMaxLoad = 0.75;

export interface TableOptions {
  /** Rows the table must hold (its slot count is capacity / 0.75, rounded up). */
  capacity: number;
  /** Longest key in bytes (stored inline, padded to 4). */
  maxKeyBytes: number;
  /** Int32 words of value per slot (rounded up to even, so Float64 values align). Default 0. */
  valueWords?: number;
  /** Small integer naming the table in the roster's intent records (unique per roster). */
  tableId: number;
  /** Hash seed; random by default. */
  seed?: number;
}

/** Structured-cloneable description of a table: post it to a worker and call `ShmTable.attach` there. */
export interface TableDescriptor {
  readonly kind: 'native-free-shm/table';
  readonly buffer: SharedArrayBuffer;
}

/** Called in the releasing thread after a dead writer's claimed slot has been turned into a tombstone. */
export type RecoveredHook = (slot: number) => void;

interface Geometry {
  slots: number;
  keyWords: number;
  valueWords: number;
  /** Words per row, and the offsets of the key and of the value in a row (the value's even, so Float64 values align). */
  stride: number;
  keyOffset: number;
  valueOffset: number;
  totalWords: number;
}

function geometry(slots: number, keyWords: number, valueWords: number): Geometry {
  // A small value goes before the key, on the control word's line (the registry reads an in-flight
  // row's owner right before raising its flag); a large one after it, so the key stays near.
  const small = valueWords <= kSmallValueWords;
  const keyOffset = small ? kRowKey + valueWords : kRowKey;
  const valueOffset = small ? kRowKey : (kRowKey + keyWords + 1) & ~1;
  const stride = Math.ceil((small ? keyOffset + keyWords : valueOffset + valueWords) / kLineWords) * kLineWords;
  // Every row starts on a cache line, so a short one never straddles two.
  return { slots, keyWords, valueWords, stride, keyOffset, valueOffset, totalWords: kHeaderWords + slots * stride };
}

/**
 * A fixed-slot open-addressing hash table in one SharedArrayBuffer, for many threads at once.
 *
 * - Multiset: `claim` + `publish` always add a row; uniqueness, where wanted, is the caller's.
 * - Readers never block and never take a lock: a match is re-validated against the slot's control
 *   word (a per-slot sequence), so a row removed or replaced mid-compare is never reported, and
 *   keys are compared in full, so no other key ever matches.
 * - Writers race with compare-and-swap on the control word only. A writer killed at any point leaves
 *   at most one slot in the WRITING state, invisible to readers; `Roster.release` turns it into a
 *   tombstone. Nothing else can be left half-done.
 * - Tombstones: each home slot keeps the farthest distance any of its rows was ever placed at, and
 *   lookups stop there (or at a never-used slot). Inserts reuse the first free slot, tombstones
 *   included, so churn does not lengthen probes; a lookup in a home that never held a row is one load.
 */
export class ShmTable implements IntentRecoverer {
  readonly slots: number;
  readonly keyWords: number;
  readonly valueWords: number;
  readonly tableId: number;
  readonly seed: number;
  /** Int32 view of the whole buffer; `valueIndex(slot)` indexes into it. */
  readonly i32: Int32Array;
  /** Float64 view of the whole buffer; `valueIndex(slot) / 2` indexes into it. */
  readonly f64: Float64Array;
  /** Control word of the last match returned by `find`/`next`. */
  matchCtl = 0;
  /** Set by the owner of counts kept outside the table. */
  onRecovered: RecoveredHook | undefined;

  readonly #buf: SharedArrayBuffer;
  readonly #roster: Roster;
  readonly #g: Geometry;
  /** slots / 2^32, for `#home`. */
  readonly #homeScale: number;
  /** Words per row, and where the key starts in one. */
  readonly #stride: number;
  readonly #keyOffset: number;
  #claimFrom = 0;
  // Cursor of the current find/next (per thread: a table object is never shared between threads).
  #cKey: Int32Array = new Int32Array(0);
  #cAt = 0;
  #cLen = 0;
  #cHash = 0;
  #cHome = 0;
  #cDist = 0;
  #cLimit = 0;

  /** Bytes a table of these dimensions occupies. */
  static byteLength(capacity: number, maxKeyBytes: number, valueWords = 0): number {
    const slots = Math.max(8, Math.ceil(capacity / kMaxLoad));
    return geometry(slots, wordsFor(maxKeyBytes), valueWords + (valueWords & 1)).totalWords * 4;
  }

  static create(options: TableOptions, roster: Roster): ShmTable {
    const capacity = checkInteger('capacity', options.capacity, 1, 1 << 26);
    const maxKeyBytes = checkInteger('maxKeyBytes', options.maxKeyBytes, 1, 1 << 16);
    let valueWords = checkInteger('valueWords', options.valueWords ?? 0, 0, 1 << 16);
    valueWords += valueWords & 1;
    const tableId = checkInteger('tableId', options.tableId, 0, 1 << 20);
    const slots = Math.max(8, Math.ceil(capacity / kMaxLoad));
    const g = geometry(slots, wordsFor(maxKeyBytes), valueWords);
    const buffer = new SharedArrayBuffer(g.totalWords * 4);
    const hdr = new Int32Array(buffer, 0, kHeaderWords);
    hdr[kHdrVersion] = kTableVersion;
    hdr[kHdrSlots] = slots;
    hdr[kHdrKeyWords] = g.keyWords;
    hdr[kHdrValueWords] = valueWords;
    hdr[kHdrSeed] = options.seed ?? randomInt(0, 2 ** 31);
    hdr[kHdrTableId] = tableId;
    Atomics.store(hdr, kHdrMagic, kTableMagic);
    return new ShmTable(buffer, roster);
  }

  static attach(descriptor: TableDescriptor, roster: Roster): ShmTable {
    if (descriptor?.kind !== 'native-free-shm/table' || !(descriptor.buffer instanceof SharedArrayBuffer)) {
      throw new ShmError('shm_bad_descriptor', 'not a table descriptor');
    }
    return new ShmTable(descriptor.buffer, roster);
  }

  private constructor(buffer: SharedArrayBuffer, roster: Roster) {
    const hdr = new Int32Array(buffer, 0, kHeaderWords);
    if (Atomics.load(hdr, kHdrMagic) !== kTableMagic || hdr[kHdrVersion] !== kTableVersion) {
      throw new ShmError('shm_bad_descriptor', 'table magic or version mismatch');
    }
    this.#buf = buffer;
    this.#roster = roster;
    this.slots = hdr[kHdrSlots];
    this.keyWords = hdr[kHdrKeyWords];
    this.valueWords = hdr[kHdrValueWords];
    this.seed = hdr[kHdrSeed];
    this.tableId = hdr[kHdrTableId];
    this.#g = geometry(this.slots, this.keyWords, this.valueWords);
    this.#homeScale = this.slots / 4294967296;
    this.#stride = this.#g.stride;
    this.#keyOffset = this.#g.keyOffset;
    this.i32 = new Int32Array(buffer);
    this.f64 = new Float64Array(buffer, 0, buffer.byteLength >>> 3);
    roster.register(this);
  }

  get descriptor(): TableDescriptor {
    return { kind: 'native-free-shm/table', buffer: this.#buf };
  }

  get byteLength(): number {
    return this.#buf.byteLength;
  }

  /** The table's seeded hash of a key held in `key` (zero-padded to a whole word). */
  hash(key: Int32Array, byteLength: number): number {
    return hashWords(key, wordsFor(byteLength), byteLength, this.seed);
  }

  #home(hash: number): number {
    // hash × (slots / 2^32), below slots and the same in every thread (exact up to 2^21 slots, rounded
    // alike above), truncated by `| 0`: one conversion, where Math.floor added a rounding and a deopt
    // check on the path to the row's first load.
    return ((hash >>> 0) * this.#homeScale) | 0;
  }

  /** Index of a slot's control word in `i32` (for Atomics.waitAsync / notify). */
  ctlIndex(slot: number): number {
    return kHeaderWords + slot * this.#stride;
  }

  /** The slot's control word, read atomically. */
  ctl(slot: number): number {
    return Atomics.load(this.i32, kHeaderWords + slot * this.#stride);
  }

  /** Index of value word 0 of `slot` in `i32` (even: halve it for `f64`). */
  valueIndex(slot: number): number {
    return kHeaderWords + slot * this.#stride + this.#g.valueOffset;
  }

  /** Index of key word 0 of `slot` in `i32`. */
  keyIndex(slot: number): number {
    return kHeaderWords + slot * this.#stride + this.#keyOffset;
  }

  keyLength(slot: number): number {
    return this.i32[kHeaderWords + slot * this.#stride + kRowLen];
  }

  /**
   * Takes a free slot for `key`, writes the key and returns the slot (now WRITING, invisible to
   * readers), or -1 when no slot is free. Fill the value, then `publish`. One claim at a time per thread.
   * The key is `key[at..]` (`at` lets many keys share one array).
   */
  claim(key: Int32Array, byteLength: number, hash: number, member: RosterMember, at = 0): number {
    // The common case, small enough for V8 to inline into the caller: the home slot itself is free.
    const w = this.i32;
    const home = this.#home(hash);
    const m = kHeaderWords + home * this.#stride;
    // A plain read is enough to choose a candidate: the compare-and-swap below validates it.
    const c = w[m];
    const state = c & kStateMask;
    if (state === kEmpty || state === kTombstone) {
      this.#roster.setIntent(member, this.tableId, home, c);
      if (Atomics.compareExchange(w, m, c, (member.index << kSeqShift) | kWriting) === c) {
        this.#fill(m, key, at, byteLength, hash, m + kRowDist, 1);
        this.#claimFrom = c;
        return home;
      }
    }
    return this.#probe(key, byteLength, hash, member, at, home);
  }

  /** `claim` past the home slot (or after losing it to another writer): the first free slot along the probe. */
  #probe(key: Int32Array, byteLength: number, hash: number, member: RosterMember, at: number, home: number): number {
    const w = this.i32;
    const slots = this.slots;
    const stride = this.#stride;
    const dist = kHeaderWords + home * stride + kRowDist;
    let i = home;
    for (let d = 0; d < slots;) {
      const m = kHeaderWords + i * stride;
      const c = w[m];
      const state = c & kStateMask;
      if (state === kEmpty || state === kTombstone) {
        this.#roster.setIntent(member, this.tableId, i, c);
        if (Atomics.compareExchange(w, m, c, (member.index << kSeqShift) | kWriting) === c) {
          this.#fill(m, key, at, byteLength, hash, dist, d + 1);
          this.#claimFrom = c;
          return i;
        }
        continue; // the slot changed under us: look at it again
      }
      d++;
      if (++i === slots) i = 0;
    }
    this.#roster.clearIntent(member);
    return -1;
  }

  /**
   * Writes hash, length and key into the claimed row at word `m`, then makes sure lookups of its home
   * reach it: the home's probe limit (word `dist`) must be at least `want` before the row is published.
   */
  #fill(m: number, key: Int32Array, at: number, byteLength: number, hash: number, dist: number, want: number): void {
    const w = this.i32;
    w[m + kRowHash] = hash;
    w[m + kRowLen] = byteLength;
    const k = m + this.#keyOffset;
    const words = (byteLength + 3) >>> 2; // wordsFor, inline (an imported function is checked at every call)
    for (let j = 0; j < words; j++) w[k + j] = key[at + j];
    // The limit only grows, so a plain read that already shows `want` is not stale.
    let cur = w[dist];
    while (cur < want) {
      const prev = Atomics.compareExchange(w, dist, cur, want);
      if (prev === cur) break;
      cur = prev;
    }
  }

  /** Makes the claimed row visible. Returns its control word: the row's identity for remove/raise. */
  publish(slot: number, member: RosterMember): number {
    const seq = ((this.#claimFrom >>> kSeqShift) + 1) & kSeqMask;
    const ctl = (seq << kSeqShift) | kLive;
    Atomics.store(this.i32, kHeaderWords + slot * this.#stride, ctl);
    this.#roster.clearIntent(member);
    return ctl;
  }

  /** Gives back a claimed slot without publishing it. */
  abandon(slot: number, member: RosterMember): void {
    const seq = ((this.#claimFrom >>> kSeqShift) + 2) & kSeqMask;
    Atomics.store(this.i32, kHeaderWords + slot * this.#stride, (seq << kSeqShift) | kTombstone);
    this.#roster.clearIntent(member);
  }

  /** First live row with this key, or -1. `matchCtl` holds its control word. */
  find(key: Int32Array, byteLength: number, hash: number, at = 0): number {
    const home = this.#home(hash);
    // A plain read (Atomics.load is a ~7 ns call on Node 20): the limit only grows, and a writer
    // raises it before the release store that publishes its row, so a lookup that starts after
    // that publish reads a limit that covers the row; one racing with it may miss it, which is
    // the lookup being ordered first.
    const limit = this.i32[kHeaderWords + home * this.#stride + kRowDist];
    if (limit === 0) return -1; // no row ever had this home
    return this.#scan(key, at, byteLength, hash, home, 0, limit);
  }

  /** Next live row with the key of the last successful `find`/`next`, or -1. */
  next(): number {
    if (this.#cDist >= this.#cLimit) return -1;
    return this.#scan(this.#cKey, this.#cAt, this.#cLen, this.#cHash, this.#cHome, this.#cDist, this.#cLimit);
  }

  #scan(key: Int32Array, at: number, len: number, hash: number, home: number, from: number, limit: number): number {
    const w = this.i32;
    const slots = this.slots;
    const stride = this.#stride;
    const words = (len + 3) >>> 2;
    let d = from;
    let i = home + d;
    if (i >= slots) i -= slots;
    while (d < limit) {
      const m = kHeaderWords + i * stride;
      const c1 = Atomics.load(w, m);
      const state = c1 & kStateMask;
      if (state === kEmpty) break; // nothing was ever placed at or beyond a never-used slot
      if (state === kLive && w[m + kRowHash] === hash && w[m + kRowLen] === len) {
        const k = m + this.#keyOffset;
        let j = 0;
        while (j < words && w[k + j] === key[at + j]) j++;
        if (j === words) {
          const c2 = Atomics.load(w, m);
          if (((c1 ^ c2) & kIdentityMask) === 0) {
            // Remember where we are only on a match: the common single lookup stores nothing.
            this.#cKey = key;
            this.#cAt = at;
            this.#cLen = len;
            this.#cHash = hash;
            this.#cHome = home;
            this.#cDist = d + 1;
            this.#cLimit = limit;
            this.matchCtl = c2;
            return i;
          }
          continue; // replaced while we compared: look again
        }
      }
      d++;
      if (++i === slots) i = 0;
    }
    this.#cLimit = 0;
    return -1;
  }

  /**
   * Deletes the row if it is still the incarnation `ctl` names. Returns the control word it
   * replaced (non-zero: carries the flag bits) or 0 if the row was already gone.
   */
  remove(slot: number, ctl: number): number {
    const w = this.i32;
    const m = kHeaderWords + slot * this.#stride;
    const t = ((((ctl >>> kSeqShift) + 1) & kSeqMask) << kSeqShift) | kTombstone;
    let expected = ctl; // first guess: no flag raised since publish, which saves a load
    for (;;) {
      const c = Atomics.compareExchange(w, m, expected, t);
      if (c === expected) {
        if ((c & kWaitedBit) !== 0) Atomics.notify(w, m);
        return c;
      }
      if (((c ^ ctl) & kIdentityMask) !== 0) return 0; // another incarnation, or gone
      expected = c; // same row, flag bits changed: try again with them
    }
  }

  /** Sets `kFlagBit` on the row if it is still the incarnation `ctl` names; wakes its waiters. */
  raise(slot: number, ctl: number): boolean {
    const w = this.i32;
    const m = kHeaderWords + slot * this.#stride;
    // First guess: the row as published (no flag bits yet), so the common raise is one
    // compare-and-swap and no load ahead of it (what a polling reader waits for).
    let c = ctl & kIdentityMask;
    for (;;) {
      const seen = Atomics.compareExchange(w, m, c, c | kFlagBit);
      if (seen === c) {
        // Waiters set kWaitedBit before they park, so a word without it has nobody to wake
        // (and Atomics.notify takes a process-wide lock: skip it when it cannot matter).
        if ((c & kWaitedBit) !== 0) Atomics.notify(w, m);
        return true;
      }
      if (((seen ^ ctl) & kIdentityMask) !== 0 || (seen & kFlagBit) !== 0) return false;
      c = seen; // same row, the waited bit changed: try again with it
    }
  }

  /**
   * Marks the row as waited on (so removers notify) and returns the control word to wait on,
   * or 0 if the row is gone.
   */
  markWaited(slot: number, ctl: number): number {
    const w = this.i32;
    const m = kHeaderWords + slot * this.#stride;
    for (;;) {
      const c = Atomics.load(w, m);
      if (((c ^ ctl) & kIdentityMask) !== 0) return 0;
      if ((c & kWaitedBit) !== 0) return c;
      if (Atomics.compareExchange(w, m, c, c | kWaitedBit) === c) return c | kWaitedBit;
    }
  }

  /** Roster callback: undoes a dead writer's claim on `slot` if it still holds it. */
  recoverIntent(slot: number, fromCtl: number, writerIndex: number): void {
    if (slot < 0 || slot >= this.slots) return;
    const m = kHeaderWords + slot * this.#stride;
    const held = (writerIndex << kSeqShift) | kWriting;
    const seq = ((fromCtl >>> kSeqShift) + 2) & kSeqMask;
    if (Atomics.compareExchange(this.i32, m, held, (seq << kSeqShift) | kTombstone) === held) {
      this.onRecovered?.(slot);
    }
  }

  /**
   * Checks the structural invariants from a quiescent point (no writer running): every live row
   * is reachable from its home within the recorded distance, and no slot is left WRITING.
   * Returns a list of problems (empty when sound). For tests and diagnostics; O(slots).
   */
  verify(): string[] {
    const problems: string[] = [];
    const { slots, stride } = this.#g;
    for (let i = 0; i < slots; i++) {
      const m = kHeaderWords + i * stride;
      const c = Atomics.load(this.i32, m);
      const state = c & kStateMask;
      if (state === kWriting) problems.push(`slot ${i} is stuck WRITING (writer ${c >>> kSeqShift})`);
      if (state !== kLive) continue;
      const home = this.#home(this.i32[m + kRowHash]);
      const dist = i >= home ? i - home : i + slots - home;
      if (dist >= Atomics.load(this.i32, kHeaderWords + home * stride + kRowDist)) problems.push(`slot ${i} lies beyond its home's probe limit`);
      for (let j = home; j !== i; j = j + 1 === slots ? 0 : j + 1) {
        if ((Atomics.load(this.i32, kHeaderWords + j * stride) & kStateMask) === kEmpty) {
          problems.push(`slot ${i} is cut off from its home by a never-used slot ${j}`);
          break;
        }
      }
    }
    return problems;
  }

  /** The longest probe limit of any home: how far the worst lookup may have to look. O(slots). */
  maxProbe(): number {
    let worst = 0;
    for (let i = 0; i < this.slots; i++) worst = Math.max(worst, Atomics.load(this.i32, kHeaderWords + i * this.#stride + kRowDist));
    return worst;
  }

  /** Live rows, counted by a scan. O(slots). */
  countLive(): number {
    let n = 0;
    for (let i = 0; i < this.slots; i++) if ((this.ctl(i) & kStateMask) === kLive) n++;
    return n;
  }
}

export { kFlagBit, kLive, kStateMask, kWaitedBit, kIdentityMask, kTombstone, kWriting, kEmpty } from './layout.js';
