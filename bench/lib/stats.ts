/**
 * Statistics the benchmarks share: medians, min–max summaries, percentiles, latency distributions
 * and a least-squares slope. No side effects on import.
 */

/** Median, min and max of repeated runs, with the runs themselves. */
export interface Summary {
  median: number;
  min: number;
  max: number;
  runs: number[];
}

/** A median with its min–max, without the runs (the HTTP report's ratios and ranges). */
export interface Range {
  median: number;
  min: number;
  max: number;
}

/** Median of `xs` (mean of the middle two for an even count); NaN when empty. */
export function median(xs: readonly number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

export function range(xs: readonly number[]): Range {
  return { median: median(xs), min: Math.min(...xs), max: Math.max(...xs) };
}

export function summarize(runs: number[]): Summary {
  const sorted = [...runs].sort((a, b) => a - b);
  return { median: median(sorted), min: sorted[0], max: sorted[sorted.length - 1], runs };
}

/** Nearest-rank percentile of an ascending array, `p` in 0..1. */
export function percentile(sorted: Float64Array | readonly number[], p: number): number {
  const n = sorted.length;
  return sorted[Math.min(n - 1, Math.max(0, Math.ceil(p * n) - 1))];
}

/**
 * Percentile `p` (0..100) of unsorted samples as the HTTP and slow-reader reports take it: the
 * sample at index floor(p/100 · n) of the sorted copy (one rank above nearest-rank at whole ranks).
 * NaN when empty.
 */
export function pct(xs: readonly number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

export interface Distribution {
  samples: number;
  p50: number;
  p99: number;
  /** Nearest rank: with n samples, the ceil(n / 1000) - 1 largest lie above it. */
  p999: number;
  min: number;
  max: number;
  mean: number;
}

export function distribution(values: readonly number[]): Distribution {
  const sorted = Float64Array.from(values).sort();
  let sum = 0;
  for (const v of sorted) sum += v;
  return {
    samples: sorted.length,
    p50: percentile(sorted, 0.5),
    p99: percentile(sorted, 0.99),
    p999: percentile(sorted, 0.999),
    min: sorted[0],
    max: sorted[sorted.length - 1],
    mean: sum / sorted.length,
  };
}

/** How many samples lie above the nearest-rank p99.9 of n samples. */
export function aboveP999(n: number): number {
  return n - Math.ceil(0.999 * n);
}

/** Least-squares slope of y over x (e.g. RSS MB over minutes); 0 points give 0. */
export function slope(points: readonly (readonly [number, number])[]): number {
  const n = points.length;
  const mx = points.reduce((a, p) => a + p[0], 0) / Math.max(1, n);
  const my = points.reduce((a, p) => a + p[1], 0) / Math.max(1, n);
  return points.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0) / Math.max(1e-9, points.reduce((a, p) => a + (p[0] - mx) ** 2, 0));
}
