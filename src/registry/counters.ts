/**
 * Node-wide counts and structural checks of a registry, read from any thread: the per-thread
 * counters summed over the roster, and scans of both tables. For metrics, tests and diagnostics,
 * never the request path.
 */
import type { Attachment } from './attachment.js';
import {
  kCtCancellations, kCtCancellationsRefused, kCtEvictions, kCtExpired, kCtInFlightSwept, kCtTrackRefused, kCtTracked, kCtUntracked, kStRows,
} from './layout.js';

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

/**
 * Totals from the shared per-thread counters, `inFlight` by a scan of the in-flight table (exact,
 * O(capacity): about a millisecond at the default size).
 */
export function readCounters(a: Attachment): RegistryCounters {
  const r = a.roster;
  return {
    inFlight: a.inFlight.countLive(),
    cancellationRows: Atomics.load(a.state, kStRows),
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

/** Rows counted by scanning the tables (O(capacity)). */
export function scanRows(a: Attachment): { cancellationRows: number; inFlightRows: number } {
  return { cancellationRows: a.cancels.countLive(), inFlightRows: a.inFlight.countLive() };
}

/** Structural check of both tables at rest (see `ShmTable.verify`); empty when sound. */
export function verifyTables(a: Attachment): string[] {
  return [...a.inFlight.verify().map((p) => `in-flight: ${p}`), ...a.cancels.verify().map((p) => `cancellations: ${p}`)];
}
