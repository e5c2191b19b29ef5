/**
 * S6: open-loop soak with h2load --rps at a share of the S1 peak: latency, failures and the server's
 * RSS slope. No side effects on import.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { pinned, rssMb } from '../lib/machine.js';
import { stopServer } from '../lib/process.js';
import { slope as leastSquaresSlope } from '../lib/stats.js';
import { echoBody, kAccept } from './contenders.js';
import { collect, parseMs, start, work } from './wrk.js';

/** S6: open-loop load (h2load --rps) at a share of the S1 peak; latency, errors and RSS slope. */
export interface Soak { share: number; rate: number; meanMs: number; maxMs: number; failed: number; rssSlopeMbPerMin: number; rssStartMb: number; rssEndMb: number }

export async function s6(peak: number, seconds: number): Promise<Soak[]> {
  const out: Soak[] = [];
  for (const share of [0.5, 0.8]) {
    const s = await start('sluice-echo.mjs');
    try {
      const body = join(work(), 'soak.json');
      writeFileSync(body, echoBody(1));
      const clients = 32;
      const rate = Math.max(1, Math.floor((peak * share) / clients));
      const rss: [number, number][] = [];
      const t0 = Date.now();
      const sampler = setInterval(() => {
        const mb = rssMb(s.pid);
        if (!Number.isNaN(mb)) rss.push([(Date.now() - t0) / 60_000, mb]);
      }, 1000);
      const args = ['--h1', '-c', String(clients), '--rps', String(rate), '-D', String(seconds), '-d', body, '-H', 'content-type: application/json', '-H', `accept: ${kAccept}`, '-H', 'mcp-protocol-version: 2025-11-25', `http://127.0.0.1:${s.port}/mcp`];
      // h2load, not `sluice bench --rate`: S6 offers 50 % and 80 % of the S1 peak (44.5k and 71.3k
      // req/s in the last full run) from one pinned core. `sluice bench` spends about 14.6 µs of
      // CPU per request (bench/results/loadgen.md), so 71.3k req/s would need more than its one
      // core: it would fall behind its own schedule, and with its latency counted from each
      // request's due time the soak would measure the generator.
      const text = await collect(pinned(0, 'h2load', args), 'h2load');
      clearInterval(sampler);
      const req = /requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(text);
      const lat = /time for request:\s+(\S+)\s+(\S+)\s+(\S+)/.exec(text);
      const n = rss.length;
      const slope = leastSquaresSlope(rss);
      out.push({
        share, rate: rate * clients,
        meanMs: parseMs(lat?.[3] ?? ''), maxMs: parseMs(lat?.[2] ?? ''),
        failed: Number(req?.[3] ?? 0) + Number(req?.[4] ?? 0),
        rssSlopeMbPerMin: slope, rssStartMb: rss[0]?.[1] ?? NaN, rssEndMb: rss[n - 1]?.[1] ?? NaN,
      });
    } finally {
      await stopServer(s);
    }
  }
  return out;
}
