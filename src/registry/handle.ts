import * as shm from '../../native-free-shm/index.js';
import type { ShmTable } from '../../native-free-shm/index.js';
import { CancelledError } from '../errors.js';
import * as layout from './layout.js';
import type { RequestId } from './key.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const { kFlagBit, kIdentityMask } = shm;
const { kEpochArmed } = layout;

/** What a handle needs of its registry (kept narrow so the handle cannot reach the rest). */
export interface ReasonSource {
  /** The reason of the request in in-flight `slot`, once its flag was seen. */
  reasonOf(slot: number, id: RequestId, scope: string): string | undefined;
}

/** Shared by every handle of one registry in one thread, so a handle itself stays small. */
export interface HandleContext {
  readonly table: ShmTable;
  readonly words: Int32Array;
  readonly reasons: ReasonSource;
  /** This thread's cancel watcher: set for the handles `track` makes here (rows this thread owns), not for adopted ones. */
  readonly watcher?: CancelWatcher | undefined;
}

/** A structured-cloneable reference to a tracked request, for `Registry.adopt` in another thread. */
export interface HandleRef {
  readonly slot: number;
  readonly ctl: number;
  readonly id: RequestId;
  readonly scope: string;
}

/** Why `track` refused: a bad id, or the in-flight table is at capacity (serve 503). */
export interface TrackRefusal {
  readonly ok: false;
  readonly error: 'invalid_request_id' | 'in_flight_capacity_exhausted';
}

export const kRefusedInvalidId: TrackRefusal = Object.freeze({ ok: false, error: 'invalid_request_id' });
export const kRefusedCapacity: TrackRefusal = Object.freeze({ ok: false, error: 'in_flight_capacity_exhausted' });

const kFlagged = 1;
const kWatching = 2;
const kReleased = 4;

let settle: (handle: TrackHandle, removedCtl: number) => void;
/** 0: live, not cancelled; 1: cancelled; 2: row gone without a cancellation. */
let probe: (handle: TrackHandle) => 0 | 1 | 2;
let fire: (handle: TrackHandle) => void;

/**
 * One per registry per thread: the handles of this thread's rows whose cancellation someone awaits
 * (a run's `whenCancelled`, a handler's `signal`), and ONE `Atomics.waitAsync` on the thread's cancel
 * epoch, which whoever flags a row this thread owns bumps and notifies (see `InFlightRows.raise`). On a
 * wake it re-parks first, then checks only the handles it holds, so nothing is paid per request but a
 * Set insert and delete.
 */
export class CancelWatcher {
  readonly #words: Int32Array;
  readonly #at: number;
  readonly #watched = new Set<TrackHandle>();
  #parked = false;
  readonly #wake = (): void => {
    this.#parked = false;
    if (this.#watched.size === 0) return; // the next add parks again (and checks its own handle)
    this.#park(); // before the scan: a cancel after it wakes us again
    for (const handle of this.#watched) {
      const state = probe(handle);
      if (state === 0) continue;
      this.#watched.delete(handle);
      if (state === 1) fire(handle);
    }
  };

  constructor(words: Int32Array, at: number) {
    this.#words = words;
    this.#at = at;
  }

  /** Handles awaiting cancellation now (tests, diagnostics). */
  get size(): number {
    return this.#watched.size;
  }

  add(handle: TrackHandle): void {
    this.#watched.add(handle);
    if (!this.#parked) this.#park();
  }

  delete(handle: TrackHandle): void {
    this.#watched.delete(handle);
  }

  #park(): void {
    const words = this.#words;
    const at = this.#at;
    if (words[at + kEpochArmed] === 0) Atomics.store(words, at + kEpochArmed, 1);
    for (;;) {
      const wait = Atomics.waitAsync(words, at, Atomics.load(words, at));
      if (wait.async) {
        this.#parked = true;
        void wait.value.then(this.#wake);
        return;
      }
      // The epoch moved between the load and the wait: read it again.
    }
  }
}

/**
 * One running request's row in the in-flight table. `cancelled` is one atomic load of the row's
 * control word, valid from any thread (`adopt` a `ref` elsewhere); `signal` fires without polling.
 */
export class TrackHandle {
  readonly id: RequestId;
  readonly scope: string;
  /** The row's slot and its control word when published: the row's identity. */
  readonly slot: number;
  readonly ctl: number;
  readonly #ctx: HandleContext;
  /**
   * kFlagged: the row was cancelled when last seen (kept after the row is gone); kWatching: held by
   * this thread's watcher; kReleased: untracked here, its row is gone. One field instead of three,
   * and the rarely used reason and controller in one object made on demand: a handle is allocated
   * per request, and its size is part of the bookkeeping cost (bench/registry, registry row).
   */
  #bits = 0;
  /** Called once when the request is cancelled (the run's; see `whenCancelled`). */
  #onCancel: (() => void) | undefined;
  #late: { reason: string | undefined; controller: AbortController | undefined } | undefined;

  static {
    settle = (handle, removedCtl) => {
      handle.#bits |= (removedCtl & kFlagBit) !== 0 ? kReleased | kFlagged : kReleased;
      // A cancelled handle stays with the watcher: the canceller's epoch bump (after its flag) is
      // on its way, and the wake fires it as the per-row waiter used to.
      if ((handle.#bits & (kWatching | kFlagged)) === kWatching) {
        handle.#bits &= ~kWatching;
        handle.#ctx.watcher!.delete(handle);
      }
    };
    probe = (handle) => {
      const ctx = handle.#ctx;
      const c = Atomics.load(ctx.words, ctx.table.ctlIndex(handle.slot));
      if (((c ^ handle.ctl) & kIdentityMask) !== 0) return (handle.#bits & kFlagged) !== 0 ? 1 : 2;
      if ((c & kFlagBit) === 0) return 0;
      handle.#bits |= kFlagged;
      return 1;
    };
    fire = (handle) => {
      handle.#bits &= ~kWatching;
      handle.#late?.controller?.abort(new CancelledError(handle.reason));
      const onCancel = handle.#onCancel;
      handle.#onCancel = undefined;
      onCancel?.();
    };
  }

  constructor(ctx: HandleContext, slot: number, ctl: number, id: RequestId, scope: string) {
    this.#ctx = ctx;
    this.slot = slot;
    this.ctl = ctl;
    this.id = id;
    this.scope = scope;
  }

  /** Tells a handle from a refusal. */
  get ok(): true {
    return true;
  }

  /** True once a cancellation was recorded for this request. One `Atomics.load`. */
  get cancelled(): boolean {
    const ctx = this.#ctx;
    const c = Atomics.load(ctx.words, ctx.table.ctlIndex(this.slot));
    if (((c ^ this.ctl) & kIdentityMask) !== 0) return (this.#bits & kFlagged) !== 0; // row gone: what we last knew
    if ((c & kFlagBit) === 0) return false;
    this.#bits |= kFlagged;
    return true;
  }

  /** The sanitised reason given with the cancellation, if any (read once the request is cancelled). */
  get reason(): string | undefined {
    const late = this.#late;
    if (late?.reason !== undefined) return late.reason;
    if (!this.cancelled) return undefined;
    const reason = this.#ctx.reasons.reasonOf(this.slot, this.id, this.scope);
    if (late === undefined) this.#late = { reason, controller: undefined };
    else late.reason = reason;
    return reason;
  }

  throwIfCancelled(): void {
    if (this.cancelled) throw new CancelledError(this.reason);
  }

  /**
   * Aborts (with a CancelledError) when the request is cancelled, from whatever thread. Made on first
   * access. A handle `track` made is driven by its thread's one cancel watcher; an adopted one parks
   * an `Atomics.waitAsync` on its row. Nothing polls.
   */
  get signal(): AbortSignal {
    const late = this.#late ??= { reason: undefined, controller: undefined };
    if (late.controller === undefined) {
      if (this.#ctx.watcher === undefined) {
        late.controller = this.#watch();
      } else {
        late.controller = new AbortController();
        if (this.cancelled) late.controller.abort(new CancelledError(this.reason));
        else this.#attach();
      }
    }
    return late.controller.signal;
  }

  /**
   * Calls `onCancel` once when the request is cancelled, from whatever thread (now, if it already
   * is), after `signal` aborts. One callback per handle: the engine's run. Costs no AbortController
   * and no wait of its own on a handle `track` made.
   */
  whenCancelled(onCancel: () => void): void {
    if (this.cancelled) {
      onCancel();
      return;
    }
    if (this.#ctx.watcher === undefined) {
      this.signal.addEventListener('abort', onCancel, { once: true });
      return;
    }
    this.#onCancel = onCancel;
    this.#attach();
  }

  #attach(): void {
    if ((this.#bits & (kWatching | kReleased)) !== 0) return;
    this.#bits |= kWatching;
    this.#ctx.watcher!.add(this);
    // Flagged before the watcher read its epoch: that wake may have been spent already.
    if (this.cancelled) {
      this.#ctx.watcher!.delete(this);
      fire(this);
    }
  }

  get ref(): HandleRef {
    return { slot: this.slot, ctl: this.ctl, id: this.id, scope: this.scope };
  }

  #watch(): AbortController {
    const controller = new AbortController();
    const { table, words } = this.#ctx;
    const at = table.ctlIndex(this.slot);
    const step = (): void => {
      for (;;) {
        const value = table.markWaited(this.slot, this.ctl);
        if (value === 0 || (value & kFlagBit) !== 0) {
          if (value !== 0) this.#bits |= kFlagged;
          if ((this.#bits & kFlagged) !== 0) controller.abort(new CancelledError(this.reason));
          return; // cancelled, or the row is gone: nothing more to wait for
        }
        const wait = Atomics.waitAsync(words, at, value);
        if (wait.async) {
          void wait.value.then(step);
          return;
        }
      }
    };
    step();
    return controller;
  }
}

/** Records, for the handle, the control word its row had when it was removed. */
export function settleHandle(handle: TrackHandle, removedCtl: number): void {
  settle(handle, removedCtl);
}
