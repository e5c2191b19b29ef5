/**
 * Configuration of the registry benchmark (bench/registry.ts): sizes, repetitions, the phases and
 * the performance targets (docs/benchmarks.md). No side effects on import.
 */

export const kCommand = 'npm run bench:registry';
export const kReps = 5;
export const kTableCapacity = 65_536;
export const kFill = kTableCapacity / 2; // 50% of the stated capacity (power of two: index masks below)
export const kMaxKeyBytes = 32;
export const kKeyBytes = 20;
export const kValueWords = 2;
export const kLookupsPerRep = kFill * 256; // 8.4 M
export const kPairKeys = 4_096;
export const kPairsPerRep = 4_000_000;
export const kChurnPairs = 5_000_000;
export const kRegistryRequestsPerRep = 2_000_000;
export const kScope = 'session:0123456789abcdef0123456789abcdef';
export const kPollSamples = 2_000;
export const kSignalSamples = 1_000;
export const kLatencyRounds = 3;
export const kLatencyWarmup = 300;
export const kMessageTimeoutMs = 10_000;
// S5: two worker threads on one table (per thread, per rep).
export const kContentionReps = 5;
export const kContentionLookups = 1 << 21; // 2.1 M
export const kContentionPairs = 1 << 21;
export const kContentionHotPairs = 1 << 20;
/** Homes of the hot-window keys: 64 slots, 16 cache lines of slot metadata. */
export const kHotHomes = 64;
export const kHotKeysPerThread = 256;

export const kPhases = ['registry', 'lookups', 'hot-key', 'insert-delete', 'churn', 'latency', 'contention', 'memory', 'kernels'] as const;
export type Phase = (typeof kPhases)[number];

/**
 * Issue 17's targets (ratios where it says ratio, both sides measured in the same run), then the
 * The first round's figures kept as info: the first round's absolute rate floors and the signal latency.
 */
export const kTargets = {
  lookupsVsMap: 1.0,
  insertDeleteVsMap: 1.5,
  registryNs: 100,
  pollP50Us: 1,
  cancellationTableBytes: 4 * 1024 * 1024,
  infoLookupsPerSec: 50e6,
  infoInsertDeletePerSec: 15e6,
  infoSignalP50Us: 100,
} as const;

/**
 * Cancels nobody waits for, before the measured rounds: V8 optimises `reg.cancel` only after some
 * thousands of calls (measured: p50 2.2 µs over a process's first 5000 calls, 0.6 µs after), and
 * the rounds should measure the mechanism, as the HTTP runs measure a warmed-up server.
 */
export const kCancelWarmup = 30_000;
