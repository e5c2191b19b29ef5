/**
 * The registry itself: allocating one, attaching to one, and the `Registry` each thread uses. It
 * wires the parts (in-flight.ts, its base class: the multiset of running requests;
 * cancellation-rows.ts: rows and reasons; policy.ts: quota and eviction; janitor.ts: cleanup;
 * counters.ts) and holds the one sequence that spans them, a cancel: quota, flags, row, event.
 */
import type { Worker } from 'node:worker_threads';
import { Roster, ShmTable } from '../../native-free-shm/index.js';
import { requestCancelledChannel } from './channels.js';
import type { RequestCancelledEvent } from './channels.js';
import { attach } from './attachment.js';
import type { Attachment, RegistryDescriptor } from './attachment.js';
import { CancellationRows } from './cancellation-rows.js';
import { readCounters, scanRows, verifyTables } from './counters.js';
import type { RegistryCounters } from './counters.js';
import type { TrackHandle } from './handle.js';
import * as inFlight from './in-flight.js';
import { InFlightRows } from './in-flight.js';
import { startJanitor, sweep } from './janitor.js';
import type { CleanupResult, JanitorOptions } from './janitor.js';
import * as keys from './key.js';
import type { RequestId } from './key.js';
import * as layout from './layout.js';
import { QuotaPolicy, checkRegistryOptions, kCancelValueWords } from './policy.js';
import type { RegistryOptions } from './policy.js';
import { sanitizeReason } from './reason.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const { kCtCancellations, kCtCancellationsRefused, kStBuckets } = layout;
const { checkScope, kMaxKeyBytes } = keys;
const { raiseEncoded, raiseRow, trackedEncoded } = inFlight;

export type CancelResult =
  | { readonly ok: true }
  | { readonly ok: false; readonly error: 'cancellation_limit_reached' | 'invalid_request_id' };

const kOk: CancelResult = Object.freeze({ ok: true });
const kLimit: CancelResult = Object.freeze({ ok: false, error: 'cancellation_limit_reached' });
const kInvalid: CancelResult = Object.freeze({ ok: false, error: 'invalid_request_id' });

/** Allocates a registry in shared memory; the calling thread is attached to it. */
export function createRegistry(options: RegistryOptions = {}): Registry {
  const { maxRows, maxRowsPerScope, inFlightCapacity, maxThreads, cancellationSlots, buckets } = checkRegistryOptions(options);
  const roster = Roster.create({ capacity: maxThreads, counters: layout.kCounterCount });
  const inFlight = ShmTable.create({ capacity: inFlightCapacity, maxKeyBytes: kMaxKeyBytes, valueWords: 2, tableId: layout.kTableInFlight }, roster);
  // One batch of slack: writers racing past the cap overshoot it before a reclaim catches up.
  const cancellations = ShmTable.create({
    capacity: cancellationSlots,
    maxKeyBytes: kMaxKeyBytes,
    valueWords: kCancelValueWords,
    tableId: layout.kTableCancellations,
    seed: inFlight.seed, // one hash serves both tables
  }, roster);
  const state = new SharedArrayBuffer((layout.epochBase(buckets) + maxThreads * layout.kEpochStride) * 4);
  const words = new Int32Array(state);
  words[layout.kStPool] = inFlightCapacity;
  Atomics.store(words, layout.kStMagic, layout.kStateMagic);
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
 * `track` → run → `untrack` → `clear` (in a finally). `track`, `untrack`, `adopt` and `watching`
 * are its base class's (in-flight.ts).
 */
export class Registry extends InFlightRows {
  readonly descriptor: RegistryDescriptor;
  readonly maxRows: number;
  readonly maxRowsPerScope: number;
  readonly inFlightCapacity: number;
  readonly #a: Attachment;
  readonly #rows: CancellationRows;
  /** Quota and eviction: called only when a bucket is at the quota or the cap is reached. */
  readonly #policy: QuotaPolicy;

  constructor(descriptor: RegistryDescriptor) {
    const a = attach(descriptor);
    const quota = new QuotaPolicy(a);
    const rows = new CancellationRows(a, quota);
    super(a, rows);
    this.descriptor = descriptor;
    this.maxRows = descriptor.maxRows;
    this.maxRowsPerScope = descriptor.maxRowsPerScope;
    this.inFlightCapacity = descriptor.inFlightCapacity;
    this.#a = a;
    this.#policy = quota;
    this.#rows = rows;
  }

  /** True while at least one request with this id is tracked in this scope. */
  inFlight(id: unknown, scope: string): boolean {
    return this.#a.enc.encode(id, checkScope(scope)) && trackedEncoded(this.#a);
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
    if (!result.ok) raiseRow(this.#a, handle.slot, handle.ctl);
    return kOk;
  }

  #record(id: unknown, reason: unknown, scope: string, only: TrackHandle | undefined): CancelResult {
    if (id === null || id === undefined) return kOk;
    const a = this.#a;
    const enc = a.enc;
    if (!enc.encode(id, checkScope(scope))) return kInvalid;
    const bucket = kStBuckets + (enc.scopeHash & a.bucketMask);
    // A plain read of the bucket (an Atomics.load is a ~9 ns call on Node 20, ahead of the raise):
    // it only gates the exact test, and the bucket is an approximate count while writers race anyway.
    if (only === undefined && this.maxRowsPerScope !== Infinity && a.state[bucket] >= this.maxRowsPerScope && this.#policy.scopeFull(scope)) {
      a.counters[a.cb + kCtCancellationsRefused]++;
      return kLimit;
    }
    // Raise the running requests' flags first: that is what a polling tool waits for (measured:
    // bench/results/registry-latest.md, cancel → observed). The reason becomes readable a moment
    // later, when the row below is published; until then this thread's cancelling word is non-zero
    // and the reason's reader waits on it, so a tool that reads the reason right after the flag still gets it.
    const rows = this.#rows;
    rows.cancelling();
    try {
      if (only !== undefined) raiseRow(a, only.slot, only.ctl);
      else raiseEncoded(a);
      if (!rows.writeEncoded(reason, bucket)) {
        // Every slot is taken by writers that are mid-insert: nothing left to evict. Flags raised
        // above stay raised (the request is cancelled, without a reason), as for cancelRequest.
        a.counters[a.cb + kCtCancellationsRefused]++;
        return kLimit;
      }
    } finally {
      rows.published();
    }
    a.counters[a.cb + kCtCancellations]++;
    if (requestCancelledChannel.hasSubscribers) {
      const event: RequestCancelledEvent = { requestId: id as RequestId, scope, reason: sanitizeReason(reason) };
      requestCancelledChannel.publish(event);
    }
    return kOk;
  }

  /** True when a cancellation row exists for (scope, id). */
  cancelled(id: unknown, scope: string): boolean {
    return this.#a.enc.encode(id, checkScope(scope)) && this.#rows.hasEncoded();
  }

  /** The sanitised reason of the cancellation row for (scope, id); undefined when none or no reason. */
  reason(id: unknown, scope: string): string | undefined {
    return this.#rows.reason(id, scope);
  }

  /** Removes the cancellation row for (scope, id). Idempotent; writes nothing when there is none. */
  clear(id: unknown, scope: string): void {
    this.#rows.clear(id, scope);
  }

  /**
   * Removes cancellation rows older than `ttlMs` (strictly) and in-flight rows whose owning thread
   * has exited (see `watch`). `Infinity` sweeps only the in-flight rows, without reading the
   * cancellation table. Publishes `sluice:cancellation:cleanup`.
   */
  cleanup(ttlMs: number): CleanupResult {
    return sweep(this.#a, ttlMs);
  }

  /**
   * Runs `cleanup(ttlMs)` every `intervalMs` (defaults: 5 minutes, every 60 s) on an unref'd
   * timer; returns a function that stops it. The supervisor runs one per node.
   */
  startJanitor(options: JanitorOptions = {}): () => void {
    return startJanitor((ttlMs) => this.cleanup(ttlMs), options);
  }

  /**
   * Declares a thread gone (its Worker's `threadId`): undoes its unfinished writes now, and makes its
   * in-flight rows collectable by the next `cleanup`. Call it from the thread that owns the Worker,
   * or let `watch` do it.
   */
  threadExited(threadId: number): void {
    this.#a.roster.release(threadId);
  }

  /** Calls `threadExited` when the worker exits, however it exits. */
  watch(worker: Worker): void {
    this.#a.roster.watch(worker);
  }

  /**
   * Node-wide counts from any thread, from the shared per-thread counters (O(threads): cheap enough
   * for every scrape). `inFlight` is what `scan()` counts at rest.
   */
  counters(): RegistryCounters {
    return readCounters(this.#a);
  }

  /** Rows counted by scanning the tables (O(capacity); for tests and diagnostics). */
  scan(): { cancellationRows: number; inFlightRows: number } {
    return scanRows(this.#a);
  }

  /** Structural check of both tables at rest (see `ShmTable.verify`); empty when sound. */
  verify(): string[] {
    return verifyTables(this.#a);
  }

  /** Test seam: records a row with a chosen timestamp, as `cancel` would (no in-flight gate). */
  seedCancellation(id: RequestId, scope: string, cancelledAt: number, reason?: string): CancelResult {
    const result = this.cancel(id, reason, scope);
    if (result.ok) this.#rows.backdate(id, scope, cancelledAt);
    return result;
  }
}
