/**
 * Node-wide counts and structural checks of a registry, read from any thread: the per-thread
 * counters summed over the roster (metrics), and scans of both tables (tests and diagnostics).
 * Never the request path.
 */
import type { Attachment } from './attachment.js';
import {
  kCtCancellations, kCtCancellationsRefused, kCtEvictions, kCtExpired, kCtInFlightSwept, kCtTrackRefused, kCtTracked, kCtUntracked, kStRows,
} from './layout.js';

/** Node-wide counts, from any thread. Totals are cumulative since the registry was created. */
export interface RegistryCounters {
  /** Requests tracked now: tracked − untracked − inFlightSwept (`Registry.scan` counts the rows themselves). */
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
 * Totals from the shared per-thread counters: O(roster), no table is read. `inFlight` is tracked −
 * untracked − swept, the rows a scan would count at rest. A scan of the in-flight table read every
 * page of it (48 MiB at the default capacity): on a serving thread's /metrics render that stalled
 * its requests 1–4 ms a scrape, and the first scrape of a fresh server 150 ms with 50 MiB faulted in.
 */
export function readCounters(a: Attachment): RegistryCounters {
  const r = a.roster;
  // Removals are read before tracks (a row's track precedes its removal): while threads work the
  // difference may read a few rows high, never low by more than the rows being published. At rest it is exact.
  const inFlightSwept = r.sum(kCtInFlightSwept);
  const untracked = r.sum(kCtUntracked);
  const tracked = r.sum(kCtTracked);
  return {
    // Not below 0 even if a thread was terminated between a removal and its count.
    inFlight: Math.max(0, tracked - untracked - inFlightSwept),
    cancellationRows: Atomics.load(a.state, kStRows),
    tracked,
    untracked,
    trackRefused: r.sum(kCtTrackRefused),
    cancellations: r.sum(kCtCancellations),
    cancellationsRefused: r.sum(kCtCancellationsRefused),
    evictions: r.sum(kCtEvictions),
    expired: r.sum(kCtExpired),
    inFlightSwept,
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
