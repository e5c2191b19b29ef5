import { describe, it } from 'vitest';
import { loadUws } from '../../src/transport/http/uws/load.js';
import { nodeReusePort } from '../../src/transport/http/node/reuse-port.js';

export type Adapter = 'uws' | 'node';

/**
 * Why uWebSockets.js cannot serve under the Node running the tests (undefined when it can). Node 22
 * and 24 have no native binding on this machine (see README: which Node gets uWS), so there the
 * uWS cases are skipped, visibly, with this reason; they never silently pass.
 */
export const kUwsUnavailable: string | undefined = (() => {
  try {
    loadUws();
    return undefined;
  } catch (error) {
    return (error as Error).message;
  }
})();

/** Whether the uWS cases run here. */
export const kUwsLoads = kUwsUnavailable === undefined;

/** Whether node:http shares a port between threads here (Node ≥ 22.12 / ≥ 23.1 on Linux). */
export const kNodeReusePort = nodeReusePort().ok;

/** The adapters that can serve under this Node: ['uws', 'node'] where uWS loads, else ['node']. */
export const kAdapters: readonly Adapter[] = kUwsLoads ? ['uws', 'node'] : ['node'];

function skippedTitle(what: string): string {
  return `${what} [uws] — SKIPPED: uWebSockets.js cannot load under Node ${process.versions.node}: ${kUwsUnavailable ?? ''}`;
}

/**
 * `kAdapters` for `describe.each` / `it.each`, registering in the current suite a visibly skipped
 * entry named after `what` when the uWS cases cannot run here.
 */
export function adapters(what: string): readonly Adapter[] {
  if (!kUwsLoads) describe.skip(skippedTitle(what), () => { it('needs a native uWebSockets.js binding', () => {}); });
  return kAdapters;
}

/** The cases of an `it.each` table whose `http` is 'uws' are kept only where uWS loads (skipped visibly otherwise). */
export function adapterCases<T extends { http: Adapter }>(what: string, cases: readonly T[]): T[] {
  if (kUwsLoads) return [...cases];
  if (cases.some((c) => c.http === 'uws')) describe.skip(skippedTitle(what), () => { it('needs a native uWebSockets.js binding', () => {}); });
  return cases.filter((c) => c.http !== 'uws');
}

/** A uWS-only test: runs where uWS loads, else is registered as skipped with the reason in its name. */
export function itUws(name: string, fn: () => Promise<unknown> | unknown, timeout?: number): void {
  if (kUwsLoads) it(name, fn, timeout);
  else it.skip(skippedTitle(name), () => {});
}

/** The suffix a conditionally skipped test carries in its name: why it does not run here ('' when it runs). */
export function skipNote(runs: boolean, reason: string): string {
  return runs ? '' : ` — SKIPPED: ${reason}`;
}

/** Why a case needing node:http's reusePort does not run under this Node. */
export const kNoReusePortReason = `node:http has no reusePort under Node ${process.versions.node} (needs ≥ 22.12 on Linux)`;
