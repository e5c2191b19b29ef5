/**
 * The cancellation rows: one row per cancelled (scope, id) in the shared cancellation table, holding
 * when it was cancelled and the sanitised reason; how a row is written (the newest wins), read back
 * (copied, then checked still current), and removed by `clear`. Also this thread's cancelling word,
 * which lets a reader that saw a flag wait for the row its canceller is about to publish.
 */
import type { ShmTable } from '../../native-free-shm/index.js';
import type { Attachment } from './attachment.js';
import { cancellingWord } from './attachment.js';
import type { ReasonSource } from './handle.js';
import * as keys from './key.js';
import type { KeyEncoder, RequestId } from './key.js';
import * as layout from './layout.js';
import * as policy from './policy.js';
import type { QuotaPolicy } from './policy.js';
import { kMaxReasonBytes, sanitizeReason } from './reason.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const {
  kCvAt, kCvReason, kCvReasonLen, kCvScopeHash, kCvStamp, kIvCanceller, kStBuckets, kStRows, kStStamp,
  kCancellingBusy, kCancellingIdle, kCancellingWaited,
} = layout;
const { rowGone } = policy;
const { checkScope, writeWtf8 } = keys;

/**
 * How long `reasonOf` spins on a canceller's word before it parks in `Atomics.wait`: publishing the
 * row normally takes a microsecond or so, far less than a wait and a wake.
 */
const kReasonSpins = 2_000;
/** Each park is this short, so a canceller that died unwatched is noticed by `reasonOf`'s bound. */
const kReasonParkMs = 5;
/**
 * The bound of `reasonOf`'s wait. Not a timing assumption: a canceller descheduled between raising
 * and publishing is waited for however long it takes (measured: more than 5 ms on a loaded 2-core
 * machine), and one that dies there is released (its word cleared) by whoever owns its Worker.
 * Only a thread that died unwatched, so never released, runs into it; the reason then reads as absent.
 */
const kReasonWaitMs = 1_000;
/** `#readReason` found no cancellation row (as opposed to a row without a reason: undefined). */
const kNoRow = null;
const kDecoder = new TextDecoder();

/** The cancellation rows of one attached registry, for this thread; the reason source of its handles. */
export class CancellationRows implements ReasonSource {
  /** The rest of the attachment, read off the request path (`clear` reads only the fields below). */
  readonly #a: Attachment;
  readonly #table: ShmTable;
  readonly #state: Int32Array;
  readonly #enc: KeyEncoder;
  readonly #bucketMask: number;
  readonly #policy: QuotaPolicy;
  readonly #reasonBytes = new Uint8Array(kMaxReasonBytes + 4);
  readonly #reasonWords = new Int32Array(this.#reasonBytes.buffer);
  /** This thread's cancelling word in the state (see kEpochCancelling), -1 if it has no epoch line. */
  readonly #cancelling: number;

  constructor(a: Attachment, quota: QuotaPolicy) {
    this.#a = a;
    this.#policy = quota;
    this.#table = a.cancels;
    this.#enc = a.enc;
    this.#state = a.state;
    this.#bucketMask = a.bucketMask;
    this.#cancelling = cancellingWord(a, a.member.index);
    // A dead writer's claim, undone by release: give back what it had counted.
    a.cancels.onRecovered = () => { Atomics.sub(a.state, kStRows, 1); };
    a.roster.onRelease((index) => {
      // A thread that died inside `cancel` must not leave readers waiting for its row.
      const at = cancellingWord(a, index);
      if (at >= 0 && Atomics.exchange(a.state, at, kCancellingIdle) === kCancellingWaited) Atomics.notify(a.state, at);
    });
  }

  /**
   * This thread is about to raise flags whose reason is not published yet: until `published`,
   * `reasonOf` in other threads waits on this word. The raise's compare-and-swap publishes the store.
   */
  cancelling(): void {
    const at = this.#cancelling;
    if (at >= 0) this.#state[at] = kCancellingBusy;
  }

  /** The row of this thread's cancel is published (or given up): wake whoever waits for it. */
  published(): void {
    const at = this.#cancelling;
    if (at >= 0 && Atomics.exchange(this.#state, at, kCancellingIdle) === kCancellingWaited) Atomics.notify(this.#state, at);
  }

  /** True when a cancellation row exists for the key in the encoder (the caller just encoded it). */
  hasEncoded(): boolean {
    const enc = this.#enc;
    const key = enc.key;
    return this.#table.find(key.words, key.length, enc.hash) >= 0;
  }

  /**
   * Writes the cancellation row of the key in the encoder (one row per key: the newest wins).
   * False when no slot could be had even after reclaiming.
   */
  writeEncoded(reason: unknown, bucket: number): boolean {
    const state = this.#state;
    // Counted before the cap is checked, not after: a thread reclaiming while this one goes on
    // without it (reclaim(false) waits for no one) then sees this row when it re-reads the count,
    // so the rows at rest never stay above maxRows. The row is not in the table yet, so the
    // reclaim it may start here evicts others, never it.
    if (Atomics.add(state, kStRows, 1) >= this.#a.maxRows) this.#policy.reclaim(false);
    const text = sanitizeReason(reason);
    // sanitizeReason drops unpaired surrogates and keeps ≤ kMaxReasonChars code points, so the
    // WTF-8 writer produces plain UTF-8 and always fits (a JS loop: encodeInto is a C++ call).
    const reasonLength = text === undefined ? -1 : writeWtf8(text, this.#reasonBytes, 0, kMaxReasonBytes);
    const table = this.#table;
    const enc = this.#enc;
    const key = enc.key;
    const hash = enc.hash;
    const stamp = (Atomics.add(state, kStStamp, 1) + 1) | 0;
    Atomics.add(state, bucket, 1);
    let slot = table.claim(key.words, key.length, hash, this.#a.member);
    for (let tries = 0; slot < 0 && tries < 4; tries++) {
      this.#policy.reclaim(true);
      slot = table.claim(key.words, key.length, hash, this.#a.member);
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
    this.#keepNewest(slot, table.publish(slot, this.#a.member), stamp, bucket);
    return true;
  }

  /** Keeps one row per key: the newest stamp wins, so racing cancels never both remove each other. */
  #keepNewest(slot: number, ctl: number, stamp: number, bucket: number): void {
    const table = this.#table;
    const key = this.#enc.key;
    const w = table.i32;
    for (let s = table.find(key.words, key.length, this.#enc.hash); s >= 0; s = table.next()) {
      if (s === slot) continue;
      if (((w[table.valueIndex(s) + kCvStamp] - stamp) | 0) < 0) {
        if (table.remove(s, table.matchCtl) !== 0) rowGone(this.#state, bucket);
      } else {
        if (table.remove(slot, ctl) !== 0) rowGone(this.#state, bucket);
        break;
      }
    }
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
  reasonOf(slot: number, id: RequestId, scope: string): string | undefined {
    let found = this.#readReason(id, scope);
    if (found !== kNoRow) return found;
    const state = this.#state;
    let deadline = 0;
    for (;;) {
      const inFlight = this.#a.inFlight;
    const by = inFlight.i32[inFlight.valueIndex(slot) + kIvCanceller] - 1;
      // Our own cancel (a subscriber reading the reason from inside it) cannot be waited for.
      const at = by < 0 || by === this.#a.member.index ? -1 : cancellingWord(this.#a, by);
      if (at < 0) break;
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
    const table = this.#table;
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

  /** See `Registry.clear`. */
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
    const table = this.#table;
    const bucket = kStBuckets + (enc.scopeHash & this.#bucketMask);
    for (let s = table.find(key.words, key.length, enc.hash); s >= 0; s = table.next()) {
      if (table.remove(s, table.matchCtl) !== 0) rowGone(this.#state, bucket);
    }
  }

  /** Test seam: backdates the row of (scope, id), if there is one, to `cancelledAt`. */
  backdate(id: RequestId, scope: string, cancelledAt: number): void {
    const enc = this.#enc;
    if (!enc.encode(id, checkScope(scope))) return;
    const key = enc.key;
    const table = this.#table;
    const slot = table.find(key.words, key.length, enc.hash);
    if (slot >= 0) table.f64[(table.valueIndex(slot) + kCvAt) >>> 1] = cancelledAt;
  }
}
