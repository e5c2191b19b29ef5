/**
 * Cluster bench (`npm run bench:cluster`, `--smoke` for a short run), against a real redis-server
 * started here on a free loopback port:
 * - C1 S1 echo (legacy session) on one node with cluster mode on ÷ the same node with it off,
 *   interleaved reps, wrk c = 32 (target ≥ 0.95: a known session's request touches no Redis);
 * - C2 cancel → observed: a legacy notifications/cancelled sent to the other node beside one sent to
 *   the node running the tool, interleaved;
 * - C3 session lifecycles per second across two nodes (initialize on A, tools/call on B, DELETE on
 *   A), 8 at a time, beside the same lifecycle on one node without cluster mode.
 * Nodes are pinned to CPU 1; wrk, this process and redis-server to CPU 0.
 * Results: bench/results/cluster.{md,json,svg}.
 */
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { send } from './lib/http-client.js';
import { machineLine, pin, pinSelf } from './lib/machine.js';
import { stopServer } from './lib/process.js';
import type { Running } from './lib/process.js';
import { startRedis } from './lib/redis.js';
import { toJson, writeResults } from './lib/report.js';
import { waitForRecord } from './lib/record.js';
import { pct, range } from './lib/stats.js';
import { svgBars } from './lib/svg.js';
import { ensureTools, start, wrk, work } from './http/wrk.js';
import type { WrkResult } from './http/wrk.js';

const { smoke } = benchArgs('Usage: node dist/bench/cluster.js [options]\nCluster mode against a real redis-server on loopback: C1 echo, C2 cancel → observed across nodes, C3 session lifecycles.', {
  smoke: { type: 'flag', help: 'a short run (CI): 1 rep of 2 s, 20 samples' },
});
const seconds = smoke ? 2 : 5;
const reps = smoke ? 1 : 3;
const samples = smoke ? 20 : 100;
const lifecycleSeconds = smoke ? 2 : 5;
const kAccept = 'application/json, text/event-stream';
const kInit = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
const kEcho = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });

async function openSession(port: number, agent: Agent | false = false): Promise<Record<string, string>> {
  const init = await send(port, { path: '/mcp', method: 'POST', body: kInit, headers: { 'content-type': 'application/json', accept: kAccept } }, agent);
  if (init.status !== 200) throw new Error(`initialize on ${port}: ${init.status} ${init.body}`);
  return { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': String(init.headers['mcp-session-id']) };
}

/**
 * Legacy lifecycles (initialize on `a`, echo on `b`, DELETE on `a`), `concurrency` at a time, for
 * `secondsToRun`. Hand-written, not `sluice bench --session-per-call`: the steps go to two different
 * nodes, and `sluice bench` sends every step of a lifecycle to its one URL.
 */
async function lifecycles(a: number, b: number, concurrency: number, secondsToRun: number): Promise<{ perSecond: number; failures: number }> {
  const until = Date.now() + secondsToRun * 1000;
  let done = 0;
  let failures = 0;
  const agents = [new Agent({ keepAlive: true }), new Agent({ keepAlive: true })];
  const lane = async (): Promise<void> => {
    while (Date.now() < until) {
      try {
        const headers = await openSession(a, agents[0]);
        const call = await send(b, { path: '/mcp', method: 'POST', body: kEcho, headers }, agents[1]);
        const end = await send(a, { path: '/mcp', method: 'DELETE', headers }, agents[0]);
        if (call.status === 200 && (end.status === 200 || end.status === 204)) done++;
        else failures++;
      } catch {
        failures++;
      }
    }
  };
  const started = Date.now();
  await Promise.all(Array.from({ length: concurrency }, lane));
  for (const agent of agents) agent.destroy();
  return { perSecond: done / ((Date.now() - started) / 1000), failures };
}

async function main(): Promise<void> {
  ensureTools();
  if (pin) pinSelf(0);
  const redis = await startRedis();
  const nodes: Running[] = [];
  const report: Record<string, unknown> = { machine: machineLine(), seconds, reps, samples };
  try {
    const plain = await start('sluice-cluster.mjs', ['-']);
    const a = await start('sluice-cluster.mjs', [redis.url, 'a']);
    const b = await start('sluice-cluster.mjs', [redis.url, 'b']);
    nodes.push(plain, a, b);

    // C1: echo in a known session, cluster on ÷ off.
    const on: WrkResult[] = [];
    const off: WrkResult[] = [];
    const onHeaders = await openSession(a.port);
    const offHeaders = await openSession(plain.port);
    // wrk, not `sluice bench`: cluster on ÷ off at the server's full rate (~90k req/s off), which
    // `sluice bench` cannot reach from one core (wrk still costs less per request: about 13.5 µs of CPU against sluice bench's 14.6 at 53k req/s, bench/results/loadgen.md; near a ceiling every µs of the generator's core counts).
    for (let r = 0; r < reps; r++) {
      off.push(await wrk(plain.port, { path: '/mcp', method: 'POST', body: kEcho, headers: offHeaders }, 32, seconds, plain.pid));
      on.push(await wrk(a.port, { path: '/mcp', method: 'POST', body: kEcho, headers: onHeaders }, 32, seconds, a.pid));
    }
    const ratios = on.map((o, i) => o.rps / off[i].rps);
    report.c1 = { on, off, ratio: range(ratios) };

    // C2: cancel → observed, sent to the other node or to the node running the tool. Hand-written
    // (as S4 in bench/http/cancel.ts): the tool's own observation time, and the cancel goes to
    // another node than the call, which `sluice bench --cancel-after` cannot do.
    const session = await openSession(a.port);
    const caller = new Agent({ keepAlive: true, maxSockets: 1 });
    const cancellers = { same: new Agent({ keepAlive: true, maxSockets: 1 }), other: new Agent({ keepAlive: true, maxSockets: 1 }) };
    const crossNode: number[] = [];
    const sameNode: number[] = [];
    for (let i = 0; i < samples * 2; i++) {
      const other = i % 2 === 0;
      const id = 20_000 + i;
      const record = join(work(), `cluster-cancel-${i}.txt`);
      const call = new Promise<void>((resolve) => {
        const req = request({ host: '127.0.0.1', port: a.port, path: '/mcp', method: 'POST', headers: session, agent: caller }, (res) => { res.resume(); res.on('end', resolve); res.on('error', () => resolve()); });
        req.on('error', () => resolve());
        req.end(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait_cancel', arguments: { record } } }));
      });
      await waitForRecord(record, /started/);
      await new Promise((r) => setTimeout(r, 2));
      const t0 = process.hrtime.bigint();
      await send(other ? b.port : a.port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }), headers: session }, other ? cancellers.other : cancellers.same);
      const seen = BigInt((await waitForRecord(record, /seen (\d+)/))[1]);
      await call;
      if (i >= 4) (other ? crossNode : sameNode).push(Number(seen - t0) / 1e6);
    }
    caller.destroy();
    cancellers.same.destroy();
    cancellers.other.destroy();
    report.c2 = {
      crossNode: { p50ms: pct(crossNode, 50), p99ms: pct(crossNode, 99), n: crossNode.length },
      sameNode: { p50ms: pct(sameNode, 50), p99ms: pct(sameNode, 99), n: sameNode.length },
    };

    // C3: session lifecycles across two nodes, beside one node without cluster mode.
    const across = await lifecycles(a.port, b.port, 8, lifecycleSeconds);
    const single = await lifecycles(plain.port, plain.port, 8, lifecycleSeconds);
    report.c3 = { across, single };
  } finally {
    for (const node of nodes) await stopServer(node);
    await redis.stop();
  }
  const c1 = report.c1 as { on: WrkResult[]; off: WrkResult[]; ratio: { median: number; min: number; max: number } };
  const c2 = report.c2 as Record<'crossNode' | 'sameNode', { p50ms: number; p99ms: number; n: number }>;
  const c3 = report.c3 as Record<'across' | 'single', { perSecond: number; failures: number }>;
  const met = c1.ratio.min >= 0.95;
  const md = [
    `# Cluster bench${smoke ? ' (smoke)' : ''}`,
    '',
    `${String(report.machine)}. Nodes: Sluice, one HTTP worker each, pinned to CPU 1; redis-server (persistence off), wrk and this process on CPU 0. \`npm run bench:cluster\`.`,
    '',
    '## C1: S1 echo in a legacy session, cluster mode on ÷ off (same run, interleaved)',
    '',
    '| rep | off req/s | on req/s | ratio |',
    '|---:|---:|---:|---:|',
    ...c1.on.map((o, i) => `| ${i + 1} | ${c1.off[i].rps.toFixed(0)} | ${o.rps.toFixed(0)} | ${(o.rps / c1.off[i].rps).toFixed(3)} |`),
    '',
    `Ratio: median ${c1.ratio.median.toFixed(3)} (min ${c1.ratio.min.toFixed(3)}, max ${c1.ratio.max.toFixed(3)}); target ≥ 0.95: ${met ? 'met' : 'missed'}.`,
    '',
    '## C2: legacy cancel → the running tool observed it',
    '',
    '| cancel sent to | p50 ms | p99 ms | n |',
    '|---|---:|---:|---:|',
    `| the other node (through Redis pub/sub) | ${c2.crossNode.p50ms.toFixed(3)} | ${c2.crossNode.p99ms.toFixed(3)} | ${c2.crossNode.n} |`,
    `| the node running the tool | ${c2.sameNode.p50ms.toFixed(3)} | ${c2.sameNode.p99ms.toFixed(3)} | ${c2.sameNode.n} |`,
    '',
    '## C3: legacy session lifecycles per second (initialize, one tools/call, DELETE; 8 at a time)',
    '',
    '| | lifecycles/s | failures |',
    '|---|---:|---:|',
    `| across two nodes (initialize and DELETE on A, the call on B), cluster mode | ${c3.across.perSecond.toFixed(0)} | ${c3.across.failures} |`,
    `| one node, no cluster mode | ${c3.single.perSecond.toFixed(0)} | ${c3.single.failures} |`,
    '',
  ].join('\n');
  const svg = svgBars('Cluster: echo req/s, cluster mode off vs on (median rep)', [
    { label: 'one node, cluster mode off', value: range(c1.off.map((r) => r.rps)).median },
    { label: 'one node, cluster mode on', value: range(c1.on.map((r) => r.rps)).median },
  ], 'req/s');
  const name = smoke ? 'cluster-smoke' : 'cluster';
  const written = writeResults([[`${name}.md`, md], [`${name}.json`, toJson(report)], [`${name}.svg`, svg]]);
  process.stdout.write(`${md}\n${written.join('\n')}\n`);
}

await main();
