/**
 * Cleanup: the TTL sweep behind `Registry.cleanup` (cancellation rows past their age, in-flight
 * rows of threads that exited) and the janitor, its timer. Off the request path.
 */
import { kLive, kStateMask } from '../../native-free-shm/index.js';
import { SluiceError } from '../errors.js';
import { integer } from '../validate.js';
import { cancellationCleanupChannel } from './channels.js';
import type { CancellationCleanupEvent } from './channels.js';
import { kCtExpired, kCtInFlightSwept, kCvAt, kCvScopeHash, kIvOwner, kStBuckets, kStPool, kStRows } from './layout.js';
import { rowGone } from './policy.js';
import type { PolicyContext } from './policy.js';

export interface CleanupResult {
  /** Cancellation rows older than the TTL. */
  removed: number;
  /** In-flight rows whose owning thread had exited. */
  inFlightRemoved: number;
}

/**
 * The janitor's options, `[default, min, max]`: `startJanitor` checks them, and createServer's
 * `janitor` option (server/options.ts) reads the same bounds.
 */
export const kJanitorBounds = {
  intervalMs: [60_000, 1, 2 ** 31 - 1],
  ttlMs: [300_000, 0, Number.MAX_SAFE_INTEGER],
} as const satisfies Record<string, readonly [number, number, number]>;

export interface JanitorOptions {
  /** How often it sweeps. Default 60 s. */
  intervalMs?: number;
  /** The age past which a cancellation row goes. Default 5 minutes. */
  ttlMs?: number;
}

/** Per attached registry: the roster's release count its last in-flight sweep started from. */
const sweptReleases = new WeakMap<PolicyContext, number>();

/**
 * Removes cancellation rows older than `ttlMs` (strictly) and in-flight rows whose owning thread
 * has exited. Publishes `sluice:cancellation:cleanup`.
 *
 * A table is read only when it may hold something to remove: the cancellation table when it holds
 * rows, the in-flight table when a thread has been released since this thread's last sweep. Both
 * are large (64 MiB at the defaults), and a read of every page would cost the janitor's thread
 * (the one serving stdio) a stall every interval and fault the whole tables into memory.
 */
export function sweep(c: PolicyContext, ttlMs: number): CleanupResult {
  if (typeof ttlMs !== 'number' || !(ttlMs >= 0)) throw new SluiceError('invalid_option', `ttlMs must be a number >= 0, got ${String(ttlMs)}`);
  const now = Date.now();
  let removed = 0;
  const cancels = c.cancels;
  // Infinity keeps every cancellation row, so that table is not read at all (a worker's exit sweeps
  // only its rows). The row count is added before a row is claimed: 0 means none.
  const cancelSlots = ttlMs === Infinity || Atomics.load(c.state, kStRows) === 0 ? 0 : cancels.slots;
  for (let s = 0; s < cancelSlots; s++) {
    const ctl = cancels.ctl(s);
    if ((ctl & kStateMask) !== kLive) continue;
    const v = cancels.valueIndex(s);
    if (now - cancels.f64[(v + kCvAt) >>> 1] > ttlMs && cancels.remove(s, ctl) !== 0) {
      rowGone(c.state, kStBuckets + (cancels.i32[v + kCvScopeHash] & c.bucketMask));
      removed++;
    }
  }
  let inFlightRemoved = 0;
  const inFlight = c.inFlight;
  // Read before the scan: a thread released during it moves the count, and the next sweep reads again.
  const releases = c.roster.releases;
  const inFlightSlots = releases === (sweptReleases.get(c) ?? 0) ? 0 : inFlight.slots;
  sweptReleases.set(c, releases);
  for (let s = 0; s < inFlightSlots; s++) {
    const ctl = inFlight.ctl(s);
    if ((ctl & kStateMask) !== kLive) continue;
    if (!c.roster.alive(inFlight.i32[inFlight.valueIndex(s) + kIvOwner]) && inFlight.remove(s, ctl) !== 0) {
      Atomics.add(c.state, kStPool, 1);
      inFlightRemoved++;
    }
  }
  c.counters[c.cb + kCtExpired] += removed;
  c.counters[c.cb + kCtInFlightSwept] += inFlightRemoved;
  const result: CleanupResult = { removed, inFlightRemoved };
  if (cancellationCleanupChannel.hasSubscribers) {
    const event: CancellationCleanupEvent = { removed, inFlightRemoved };
    cancellationCleanupChannel.publish(event);
  }
  return result;
}

/** Runs `cleanup(ttlMs)` every `intervalMs` on an unref'd timer; returns a function that stops it. */
export function startJanitor(cleanup: (ttlMs: number) => unknown, options: JanitorOptions = {}): () => void {
  const intervalMs = integer('intervalMs', options.intervalMs, ...kJanitorBounds.intervalMs);
  const ttlMs = integer('ttlMs', options.ttlMs, ...kJanitorBounds.ttlMs);
  const timer = setInterval(() => cleanup(ttlMs), intervalMs);
  timer.unref();
  return () => clearInterval(timer);
}
