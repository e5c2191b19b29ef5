/**
 * Memory of a registry at default options: the bytes of each shared buffer, measured on a live
 * registry and checked against `registryMemory()` (the documented formula). No side effects on import.
 */
import { createRegistry, registryMemory } from '../../src/index.js';
import type { RegistryMemory } from '../../src/index.js';

export interface MemoryResults extends RegistryMemory {
  /** Default maxRows, and cancellation-table bytes per row of it. */
  maxRows: number;
  cancellationBytesPerRow: number;
}

export function benchMemory(): MemoryResults {
  const reg = createRegistry();
  const d = reg.descriptor;
  const measured: RegistryMemory = {
    roster: d.roster.buffer.byteLength,
    inFlight: d.inFlight.buffer.byteLength,
    cancellations: d.cancellations.buffer.byteLength,
    state: d.state.byteLength,
    total: 0,
  };
  measured.total = measured.roster + measured.inFlight + measured.cancellations + measured.state;
  const formula = registryMemory();
  for (const k of Object.keys(formula) as Array<keyof RegistryMemory>) {
    if (formula[k] !== measured[k]) throw new Error(`registryMemory().${k} = ${formula[k]}, but the registry allocated ${measured[k]} bytes`);
  }
  return { ...measured, maxRows: reg.maxRows, cancellationBytesPerRow: measured.cancellations / reg.maxRows };
}
