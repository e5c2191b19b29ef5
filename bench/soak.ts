/**
 * `npm run bench:soak [-- --minutes N]` (default 10, outside CI): mixed load against a two-worker
 * Sluice server on loopback — echo calls, long calls cancelled at random moments (legacy
 * notifications/cancelled) and 2026-07-28 calls whose client disconnects at random — then a quiet
 * period. Checks that in-flight rows return to zero and that RSS, once the heaps have grown to their
 * working size (the first quarter of the run, at most 30 s), stays flat and ends near that level; writes
 * bench/results/soak-latest.{md,json}. Every loop is bounded in time; only 127.0.0.1 is targeted.
 */
import { Agent } from 'node:http';
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { metricValue, metricsText, send as request } from './lib/http-client.js';
import type { Reply } from './lib/http-client.js';
import { rssMb } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import { kRoot, toJson, writeResults } from './lib/report.js';
import { slope as leastSquaresSlope } from './lib/stats.js';

const { minutes } = benchArgs('Usage: npm run bench:soak [-- --minutes N]\nMixed load with cancels and disconnects against a two-worker server, then a quiet period: in-flight rows and RSS checked.', {
  minutes: { type: 'number', default: 10, help: 'how long the load runs' },
});
const concurrency = 32;

/** A POST to /mcp (a JSON body, both content types accepted). */
function send(port: number, body: string | undefined, headers: Record<string, string>, agent: Agent | false, signal?: AbortSignal): Promise<Reply> {
  const call = { path: '/mcp', method: 'POST', body, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } };
  return request(port, call, agent, signal === undefined ? {} : { signal });
}

async function metric(port: number, name: string): Promise<number> {
  return metricValue(await metricsText(port), name) ?? NaN;
}

async function main(): Promise<void> {
  const server = await startServer([join(kRoot, 'bench', 'servers', 'sluice-soak.mjs')]);
  const { port } = server;
  const { pid } = server;
  const counts = { echo: 0, cancelled: 0, disconnected: 0, errors: 0, wrong: 0 };
  const rss: [number, number][] = [];
  const t0 = Date.now();
  const sampler = setInterval(() => rss.push([(Date.now() - t0) / 60_000, rssMb(pid)]), 5000);
  // Warm up, then take the baseline.
  const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'soak', version: '1' } } });
  await new Promise((r) => setTimeout(r, 2000));
  const baselineRss = rssMb(pid);
  const until = Date.now() + minutes * 60_000;
  const warmupMs = Math.min(30_000, (minutes * 60_000) / 4);
  let warmRss = NaN;
  const warm = setTimeout(() => { warmRss = rssMb(pid); }, warmupMs);
  let nextId = 1;
  await Promise.all(Array.from({ length: concurrency }, async (_, loop) => {
    const agent = new Agent({ keepAlive: true, maxSockets: 2 });
    const session = String((await send(port, init, {}, agent)).headers['mcp-session-id']);
    const legacy = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    while (Date.now() < until) {
      const id = nextId++;
      const kind = (id + loop) % 10;
      try {
        if (kind < 6) {
          const r = await send(port, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `e${id}` } } }), legacy, agent);
          if (!r.body.includes(`"e${id}"`)) counts.wrong++;
          counts.echo++;
        } else if (kind < 8) {
          const call = send(port, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'block', arguments: { ms: 5000 } } }), legacy, false);
          await new Promise((r) => setTimeout(r, Math.random() * 20));
          await send(port, JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'soak' } }), legacy, agent);
          const r = await call;
          if (r.status !== 202 && r.status !== 200) counts.wrong++;
          counts.cancelled++;
        } else {
          const ac = new AbortController();
          const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };
          const call = send(port, JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'block', arguments: { ms: 5000 }, _meta: meta } }), { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'block' }, false, ac.signal).catch(() => undefined);
          await new Promise((r) => setTimeout(r, Math.random() * 20));
          ac.abort();
          await call;
          counts.disconnected++;
        }
      } catch {
        counts.errors++;
      }
    }
    agent.destroy();
  }));
  // Quiet period: tools stop, rows go, memory settles.
  let inFlight = NaN;
  for (let i = 0; i < 60; i++) {
    inFlight = await metric(port, 'sluice_requests_in_flight');
    if (inFlight === 0) break;
    await new Promise((r) => setTimeout(r, 500));
  }
  await new Promise((r) => setTimeout(r, 5000));
  clearInterval(sampler);
  clearTimeout(warm);
  const endRss = rssMb(pid);
  // RSS slope after the warm-up (MB per minute, least squares).
  const after = rss.filter(([m]) => m * 60_000 >= warmupMs + 2000);
  const slope = leastSquaresSlope(after);
  const rows = await metric(port, 'sluice_cancellation_rows');
  const killed = await metric(port, 'sluice_requests_killed_total');
  const total = await metric(port, 'sluice_requests_total');
  await stopServer(server);
  const report = {
    date: new Date().toISOString(), minutes, concurrency, counts, requestsTotal: total, killed,
    inFlightAfter: inFlight, cancellationRowsAfter: rows, startRssMb: baselineRss, warmRssMb: warmRss, endRssMb: endRss, rssSlopeMbPerMin: slope,
    rssSamples: rss.map(([m, v]) => [Number(m.toFixed(2)), Number(v.toFixed(1))]),
    ok: inFlight === 0 && counts.wrong === 0 && Math.abs(slope) < 5 && endRss <= warmRss + 25,
  };
  const md = [
    `# Soak (${minutes} min, ${concurrency} loops, 2 HTTP workers)`, '',
    `- Date: ${report.date}; command: \`npm run bench:soak -- --minutes ${minutes}\``,
    `- Calls: ${counts.echo} echo, ${counts.cancelled} cancelled by notifications/cancelled, ${counts.disconnected} cancelled by disconnect; ${counts.errors} transport errors, ${counts.wrong} wrong answers; ${total} requests in all, ${killed} killed`,
    `- After a quiet period: in-flight rows ${inFlight}, cancellation rows ${rows} (cleared by the janitor's TTL later)`,
    `- RSS: ${baselineRss.toFixed(1)} MB at start, ${warmRss.toFixed(1)} MB after the warm-up (${(warmupMs / 1000).toFixed(0)} s), ${endRss.toFixed(1)} MB at the end; slope after the warm-up ${slope.toFixed(2)} MB/min`,
    `- Verdict: ${report.ok ? 'in-flight rows back to zero; RSS flat after the warm-up and back at its working level' : 'FAILED (see the JSON)'}`,
  ];
  writeResults([['soak-latest.json', toJson(report)], ['soak-latest.md', `${md.join('\n')}\n`]]);
  process.stdout.write(`${md.join('\n')}\n`);
  if (!report.ok) process.exit(1);
}

await main();
