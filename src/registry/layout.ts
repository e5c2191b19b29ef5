/** Word offsets of the registry's state buffer (Int32), each hot word on its own 64-byte line. */
export const kStateMagic = 0x534c4347; // 'SLCG'
export const kStMagic = 0;
/** Cancellation rows (approximate while writers race; exact at rest). */
export const kStRows = 16;
/** In-flight capacity not handed out to any thread (threads take it in chunks: see InFlightRows.track). */
export const kStPool = 32;
/** Insertion stamps of cancellation rows: the newest row of a key wins. */
export const kStStamp = 48;
/** Bumped by every cancellation-row delete: a scope found at quota stays at quota until it moves. */
export const kStDeleteVersion = 64;
/** Owner token of the thread running a global-cap reclaim, 0 when none. */
export const kStReclaimLock = 80;
export const kStBuckets = 96;

/**
 * Per-thread cancel epochs, after the buckets: one 64-byte line per roster entry. Word 0 is bumped by
 * whoever flags an in-flight row that entry owns; word 1 is 1 once that thread has parked a waiter on
 * word 0 (so a canceller can skip Atomics.notify, which takes a process-wide lock, when nobody waits).
 */
export const kEpochStride = 16;
export const kEpochArmed = 1;
/**
 * Word 2 is non-zero while that thread is inside `cancel`, between raising flags and publishing the
 * cancellation row that holds the reason: 1 = cancelling, 2 = cancelling and a reader waits on the
 * word (the canceller then notifies when it clears it). A reader that saw a flag but finds no row
 * yet waits while it is non-zero (see `CancellationRows.reasonOf`). Cleared on release if the thread dies there.
 */
export const kEpochCancelling = 2;
export const kCancellingIdle = 0;
export const kCancellingBusy = 1;
export const kCancellingWaited = 2;
/** Word offset of entry 0's epoch line, for a state buffer with `buckets` bucket words. */
export function epochBase(buckets: number): number {
  return (kStBuckets + buckets + kEpochStride - 1) & ~(kEpochStride - 1);
}

/** Cancellation row values (Int32 words; cancelledAt is a Float64 over words 0-1). */
export const kCvAt = 0;
export const kCvStamp = 2;
export const kCvScopeHash = 3;
export const kCvReasonLen = 4;
export const kCvReason = 5;

/** In-flight row values. */
export const kIvOwner = 0;
/**
 * Roster index + 1 of the thread that last raised the row's flag, written just before its raise
 * (whose compare-and-swap publishes it). A hint, not part of the row's identity: it only tells a
 * reader which thread's cancelling word to wait on (any canceller of the key publishes a row for it
 * before it clears that word).
 */
export const kIvCanceller = 1;

/** Per-thread counters (Float64, summed over the roster). */
export const kCtTracked = 0;
export const kCtUntracked = 1;
export const kCtTrackRefused = 2;
export const kCtCancellations = 3;
export const kCtCancellationsRefused = 4;
export const kCtEvictions = 5;
export const kCtExpired = 6;
export const kCtInFlightSwept = 7;
/** In-flight capacity this thread holds (not a count: a balance, given back on release). */
export const kCtAllowance = 8;
export const kCounterCount = 9;

export const kTableInFlight = 0;
export const kTableCancellations = 1;
