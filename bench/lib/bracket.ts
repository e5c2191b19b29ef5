/**
 * Candidates measured between runs of their baseline: on a VM whose speed drifts within a minute,
 * a ratio to a baseline run far away in time measures the drift as much as the code. No side
 * effects on import.
 */

/** One run: req/s and the server's CPU µs per request. */
export interface Sample { readonly rps: number; readonly cpu: number }

/** A candidate's ratios to its baseline: req/s (higher is better) and CPU per request the other way up (1 = as cheap). */
export interface Ratio { readonly rps: number; readonly cpu: number }

/**
 * Runs baseline, c1, baseline, c2, …, baseline (a baseline run shared by the candidates on either
 * side of it) and returns each candidate's ratios to the mean of the two baseline runs beside it.
 */
export async function bracketed<B, C>(baseline: B, candidates: readonly C[], measure: (key: B | C) => Promise<Sample>): Promise<Map<C, Ratio>> {
  const ratios = new Map<C, Ratio>();
  let before = await measure(baseline);
  for (const key of candidates) {
    const it = await measure(key);
    const after = await measure(baseline);
    ratios.set(key, { rps: it.rps / ((before.rps + after.rps) / 2), cpu: ((before.cpu + after.cpu) / 2) / it.cpu });
    before = after;
  }
  return ratios;
}
