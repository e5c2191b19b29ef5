/**
 * Phase 5: the registry's bookkeeping per request (track + untrack + clear) against two plain Maps.
 * No side effects on import.
 */
import { createRegistry } from '../../src/index.js';
import type { Registry } from '../../src/index.js';
import { summarize } from '../lib/stats.js';
import type { Summary } from '../lib/stats.js';
import { kRegistryRequestsPerRep, kReps, kScope } from './config.js';
import { now } from './table.js';

function registryRequests(reg: Registry, total: number): number {
  const scope = kScope; // a local: an imported binding is read through its cell at every use
  const start = now();
  for (let i = 0; i < total; i++) {
    const id = i & 1023;
    const h = reg.track(id, scope);
    if (!h.ok) throw new Error(`track refused: ${h.error}`);
    reg.untrack(h);
    reg.clear(id, scope);
  }
  return (now() - start) / 1000;
}

function mapRequests(inFlight: Map<string, number>, cancels: Map<string, number>, total: number): number {
  const scope = kScope;
  const start = now();
  for (let i = 0; i < total; i++) {
    const id = i & 1023;
    const key = `${scope}\u0000${id}`;
    inFlight.set(key, i); // track
    inFlight.delete(key); // untrack
    if (cancels.has(key)) cancels.delete(key); // clear
  }
  return (now() - start) / 1000;
}

export interface RegistryResults {
  requestsPerRep: number;
  registryNs: Summary;
  mapNs: Summary;
  /** The same requests while other scopes hold cancellation rows, so `clear` looks its key up (info). */
  registryWithRowsNs: Summary;
  /** The Map baseline with the same number of rows in its cancellations Map. */
  mapWithRowsNs: Summary;
  /** Cancellation rows of other scopes present during the `WithRows` runs. */
  otherRows: number;
}

/** Cancellation rows other scopes hold in the `WithRows` runs (4 scopes, within the per-scope quota). */
const kOtherRows = 1_000;

/** `scale`: the share of the full run's requests per repeat (bench:smoke runs a quarter). */
export function benchRegistry(scale = 1): RegistryResults {
  const perRep = Math.round(kRegistryRequestsPerRep * scale);
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const withRows = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const inFlight = new Map<string, number>();
  const cancels = new Map<string, number>();
  const cancelsWithRows = new Map<string, number>();
  for (let i = 0; i < kOtherRows; i++) {
    const scope = `session:other-${i & 3}`;
    if (!withRows.cancel(i, 'other', scope).ok) throw new Error('prefill cancel refused');
    cancelsWithRows.set(`${scope}\u0000${i}`, i);
  }
  registryRequests(reg, perRep / 4); // warm-up
  mapRequests(inFlight, cancels, perRep / 4);
  registryRequests(withRows, perRep / 4);
  mapRequests(inFlight, cancelsWithRows, perRep / 4);
  const regRuns: number[] = [];
  const mapRuns: number[] = [];
  const regRowsRuns: number[] = [];
  const mapRowsRuns: number[] = [];
  const perRequest = (seconds: number): number => (seconds * 1e9) / perRep;
  for (let r = 0; r < kReps; r++) {
    regRuns.push(perRequest(registryRequests(reg, perRep)));
    mapRuns.push(perRequest(mapRequests(inFlight, cancels, perRep)));
    regRowsRuns.push(perRequest(registryRequests(withRows, perRep)));
    mapRowsRuns.push(perRequest(mapRequests(inFlight, cancelsWithRows, perRep)));
  }
  for (const [name, r] of [['registry', reg], ['registry with rows', withRows]] as const) {
    const counts = r.counters();
    if (counts.inFlight !== 0) throw new Error(`${name} leaked ${counts.inFlight} in-flight rows`);
  }
  if (withRows.counters().cancellationRows !== kOtherRows) throw new Error('the other scopes\' cancellation rows changed');
  return {
    requestsPerRep: perRep,
    registryNs: summarize(regRuns),
    mapNs: summarize(mapRuns),
    registryWithRowsNs: summarize(regRowsRuns),
    mapWithRowsNs: summarize(mapRowsRuns),
    otherRows: kOtherRows,
  };
}
