/**
 * Word layouts of the shared buffers. Every offset that two threads must agree on lives here,
 * so a change to one structure is a change to one file (piscina keeps its slot names the same way).
 */

/** Low two bits of a slot's control word. */
export const kStateMask = 0b11;
/** Never used since creation: ends every probe chain. */
export const kEmpty = 0;
/** Claimed by a writer that is filling the key and value; the writer's roster index sits above kSeqShift. */
export const kWriting = 1;
/** Visible to readers; key and value are immutable until the slot leaves this state. */
export const kLive = 2;
/** Deleted; probes continue past it, inserts may reuse it. */
export const kTombstone = 3;

/** A user flag carried in the control word (the registry's "cancelled"). Raising it keeps the incarnation. */
export const kFlagBit = 1 << 2;
/** Set by a thread that parks an Atomics.waitAsync on the word: a remover must notify. */
export const kWaitedBit = 1 << 3;
/** Bits above this hold the incarnation sequence (LIVE, TOMBSTONE) or the writer's roster index (WRITING). */
export const kSeqShift = 4;
export const kSeqMask = 0x0fffffff;
/** The bits that name an incarnation: sequence and state, not the flag bits. */
export const kIdentityMask = ~(kFlagBit | kWaitedBit);

/** Table header (Int32 words). */
export const kTableMagic = 0x53484d54; // 'SHMT'
/** 2: one row = control word, hash, length, probe limit, key, value, together (version 1 kept metadata apart). */
export const kTableVersion = 2;
export const kHdrMagic = 0;
export const kHdrVersion = 1;
export const kHdrSlots = 2;
export const kHdrKeyWords = 3;
export const kHdrValueWords = 4;
export const kHdrSeed = 5;
export const kHdrTableId = 6;
/** 64 bytes: rows start on a cache-line boundary (a SharedArrayBuffer is page-aligned). */
export const kHeaderWords = 16;

/**
 * One row per slot, everything a lookup reads in one place: control word, hash, key length, the
 * probe limit of the rows whose home is this slot, then the key and the value (a small value first).
 * A lookup that hits
 * at its home reads one row (one cache miss for short keys) instead of a metadata line plus a key
 * line (measured: bench/results/registry-latest.md, lookups row).
 */
export const kRowCtl = 0;
export const kRowHash = 1;
export const kRowLen = 2;
export const kRowDist = 3;
export const kRowKey = 4;
/** Rows are padded to whole 64-byte lines. */
export const kLineWords = 16;
/** Values of at most this many words sit before the key (on the control word's line), larger ones after it. */
export const kSmallValueWords = 4;

/** Roster (thread table) layout. */
export const kRosterMagic = 0x53485253; // 'SHRS'
export const kRosterHdrMagic = 0;
export const kRosterHdrCapacity = 1;
export const kRosterHdrCounters = 2;
/** Entries released so far (each counted once it is retired). */
export const kRosterHdrReleases = 3;
export const kRosterHeaderWords = 16;
/** One roster entry is 16 Int32 words (64 bytes): its own cache line. */
export const kEntryStride = 16;
/** Node threadId + 1 of the member, 0 when free. */
export const kEntryOwner = 0;
/** Bumped each time the entry is released: tokens of earlier incarnations are dead. */
export const kEntryGen = 1;
/** Intent record: written before a writer claims a slot, so a dead writer's claim can be undone. */
export const kEntryIntentTable = 2;
export const kEntryIntentSlot = 3;
export const kEntryIntentFrom = 4;
/** Roster index bits in an owner token; the generation sits above them. */
export const kTokenIndexBits = 12;
export const kMaxRosterCapacity = 1 << kTokenIndexBits;
export const kTokenGenMask = (1 << (31 - kTokenIndexBits)) - 1;
/** Per-member counters are Float64 blocks padded to 128 bytes against false sharing. */
export const kCounterPad = 16;
