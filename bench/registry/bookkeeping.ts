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
}

export function benchRegistry(): RegistryResults {
  const reg = createRegistry({ maxRows: 10_000, maxRowsPerScope: 256, inFlightCapacity: 65_536 });
  const inFlight = new Map<string, number>();
  const cancels = new Map<string, number>();
  registryRequests(reg, kRegistryRequestsPerRep / 4); // warm-up
  mapRequests(inFlight, cancels, kRegistryRequestsPerRep / 4);
  const regRuns: number[] = [];
  const mapRuns: number[] = [];
  for (let r = 0; r < kReps; r++) {
    regRuns.push((registryRequests(reg, kRegistryRequestsPerRep) * 1e9) / kRegistryRequestsPerRep);
    mapRuns.push((mapRequests(inFlight, cancels, kRegistryRequestsPerRep) * 1e9) / kRegistryRequestsPerRep);
  }
  const counts = reg.counters();
  if (counts.inFlight !== 0) throw new Error(`registry leaked ${counts.inFlight} in-flight rows`);
  return { requestsPerRep: kRegistryRequestsPerRep, registryNs: summarize(regRuns), mapNs: summarize(mapRuns) };
}
