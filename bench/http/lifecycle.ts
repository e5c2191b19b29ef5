/**
 * S2: session per call (initialize → initialized → tools/call → DELETE) from a Node generator pinned
 * to CPU 0 (bench/servers/lifecycle-driver.mjs). No side effects on import.
 */
import { join } from 'node:path';
import { pinned } from '../lib/machine.js';
import { stopServer } from '../lib/process.js';
import { collect, kServers, start } from './wrk.js';

/** S2: initialize → initialized → tools/call → DELETE, from a Node generator pinned to CPU 0. */
export interface Lifecycle { label: string; lifecyclesPerSecond: number[]; p50ms: number[]; p99ms: number[]; errors: number }

export async function s2(seconds: number, reps: number): Promise<Lifecycle[]> {
  const out = [
    { label: 'Sluice (1 HTTP worker, sessions)', script: 'sluice-echo.mjs', args: ['sessions', '1'], lifecyclesPerSecond: [] as number[], p50ms: [] as number[], p99ms: [] as number[], errors: 0 },
    { label: 'official SDK v1, stateful', script: 'sdk-v1.mjs', args: ['stateful'], lifecyclesPerSecond: [] as number[], p50ms: [] as number[], p99ms: [] as number[], errors: 0 },
  ];
  for (let rep = 0; rep < reps; rep++) {
    for (const c of out) {
      const s = await start(c.script, c.args);
      try {
        const driver = join(kServers, 'lifecycle-driver.mjs');
        const text = await collect(pinned(0, process.execPath, [driver, String(s.port), '16', String(seconds)]), 'lifecycle driver');
        const r = JSON.parse(text) as { lifecycles: number; errors: number; p50ms: number; p99ms: number };
        c.lifecyclesPerSecond.push(r.lifecycles / seconds);
        c.p50ms.push(r.p50ms);
        c.p99ms.push(r.p99ms);
        c.errors += r.errors;
      } finally {
        await stopServer(s);
      }
    }
  }
  return out;
}
