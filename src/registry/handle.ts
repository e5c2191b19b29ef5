import { kFlagBit, kIdentityMask } from '../../native-free-shm/index.js';
import type { ShmTable } from '../../native-free-shm/index.js';
import { CancelledError } from '../errors.js';
import type { RequestId } from './key.js';

/** What a handle needs of its registry (kept narrow so the handle cannot reach the rest). */
export interface ReasonSource {
  reason(id: RequestId, scope: string): string | undefined;
}

/** Shared by every handle of one registry in one thread, so a handle itself stays small. */
export interface HandleContext {
  readonly table: ShmTable;
  readonly words: Int32Array;
  readonly reasons: ReasonSource;
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

let settle: (handle: TrackHandle, removedCtl: number) => void;

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
  /** Whether the row was cancelled when it was last seen (kept after the row is gone). */
  #flagged = false;
  #reason: string | undefined;
  #controller: AbortController | undefined;

  static {
    settle = (handle, removedCtl) => {
      if ((removedCtl & kFlagBit) !== 0) handle.#flagged = true;
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
    if (((c ^ this.ctl) & kIdentityMask) !== 0) return this.#flagged; // row gone: what we last knew
    if ((c & kFlagBit) === 0) return false;
    this.#flagged = true;
    return true;
  }

  /** The sanitised reason given with the cancellation, if any (read once the request is cancelled). */
  get reason(): string | undefined {
    if (this.#reason === undefined && this.cancelled) this.#reason = this.#ctx.reasons.reason(this.id, this.scope);
    return this.#reason;
  }

  throwIfCancelled(): void {
    if (this.cancelled) throw new CancelledError(this.reason);
  }

  /**
   * Aborts (with a CancelledError) when the request is cancelled, from whatever thread. Made on first
   * access; it parks an `Atomics.waitAsync` on the row, so nothing polls.
   */
  get signal(): AbortSignal {
    this.#controller ??= this.#watch();
    return this.#controller.signal;
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
          if (value !== 0) this.#flagged = true;
          if (this.#flagged) controller.abort(new CancelledError(this.reason));
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
