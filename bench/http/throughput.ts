/**
 * Closed-loop throughput under wrk: S0 calibration (hello world on uWS and node:http), S1 the
 * tools/call echo of every contender at c = 1, 32, 64, and S7 two HTTP workers on both cores.
 * No side effects on import.
 */
import { send } from '../lib/http-client.js';
import { stopServer } from '../lib/process.js';
import { checkEcho, legacyEcho } from './contenders.js';
import type { Contender } from './contenders.js';
import { start, wrk } from './wrk.js';
import type { WrkResult } from './wrk.js';

export interface Row { scenario: string; label: string; connections: number; runs: WrkResult[] }

// wrk stays the generator of S0, S1 and S7: they are throughput ceilings (Sluice against the raw
// uWS echo and the other servers, ~90-130k req/s on one server core), which need the strongest
// generator on the other core. `sluice bench` now matches wrk's req/s against the raw uWS echo at
// 53k req/s but costs a little more CPU per request (14.6 µs against about 13.5, bench/results/loadgen.md),
// so at these rates it would be the first to run out of core.
export async function s0(rows: Row[], seconds: number, reps: number): Promise<void> {
  for (let rep = 0; rep < reps; rep++) {
    for (const [label, script] of [['uWS hello', 'uws-hello.mjs'], ['node:http hello', 'node-hello.mjs']] as const) {
      const s = await start(script);
      try {
        await wrk(s.port, { path: '/', method: 'GET', headers: {} }, 50, 1, s.pid); // warm-up
        const r = await wrk(s.port, { path: '/', method: 'GET', headers: {} }, 50, seconds, s.pid);
        let row = rows.find((x) => x.scenario === 'S0' && x.label === label);
        if (row === undefined) rows.push(row = { scenario: 'S0', label, connections: 50, runs: [] });
        row.runs.push(r);
      } finally {
        await stopServer(s);
      }
    }
  }
}

export async function s1(rows: Row[], seconds: number, reps: number, connectionSets: number[], who: Contender[]): Promise<void> {
  for (let rep = 0; rep < reps; rep++) {
    for (const c of who) {
      const s = await start(c.script, c.args, true, c.node?.());
      try {
        const e = await c.endpoint(s.port);
        const sample = await send(s.port, e);
        checkEcho(c.label, sample);
        c.check?.(sample);
        // wrk, not `sluice bench`: the S1 ceiling comparison (see above s0).
        await wrk(s.port, e, 32, 1, s.pid); // warm-up (JIT)
        for (const connections of connectionSets) {
          const r = await wrk(s.port, e, connections, seconds, s.pid);
          if (r.non2xx > 0) throw new Error(`${c.label}: ${r.non2xx} non-2xx responses`);
          let row = rows.find((x) => x.scenario === 'S1' && x.label === c.label && x.connections === connections);
          if (row === undefined) rows.push(row = { scenario: 'S1', label: c.label, connections, runs: [] });
          row.runs.push(r);
        }
      } finally {
        await stopServer(s);
      }
    }
  }
}

/** Requests per worker thread block, from the server's /metrics (shared-memory counters). */
async function perThreadRequests(port: number): Promise<Map<string, number>> {
  const res = await send(port, { path: '/metrics', method: 'GET', headers: {} });
  return new Map([...res.body.matchAll(/^sluice_thread_requests_total\{block="(\d+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
}

/** S7: two HTTP workers sharing both cores with an unpinned wrk -t2: throughput, tail, requests per thread. */
export interface TwoWorkersRun { run: WrkResult; perThread: number[] }

export async function s7(seconds: number, reps: number): Promise<TwoWorkersRun[]> {
  const runs: TwoWorkersRun[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const s = await start('sluice-echo.mjs', ['nosessions', '2'], false);
    try {
      const e = legacyEcho();
      // wrk -t2 unpinned, not `sluice bench`: two server workers on both cores need the cheapest generator sharing them (see above s0).
      await wrk(s.port, e, 64, 1, s.pid, false, 2);
      const before = await perThreadRequests(s.port);
      const run = await wrk(s.port, e, 64, seconds, s.pid, false, 2);
      const after = await perThreadRequests(s.port);
      const perThread = [...after].map(([block, n]) => n - (before.get(block) ?? 0)).filter((n) => n > 0).sort((a, b) => b - a);
      runs.push({ run, perThread });
    } finally {
      await stopServer(s);
    }
  }
  return runs;
}
