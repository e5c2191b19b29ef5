/**
 * Tasks bench (`npm run bench:tasks`, `--smoke` for a short run):
 * - T1 `tasks/get` on running tasks (64 parked tasks, wrk rotating over them, c = 32), beside a plain
 *   `tools/call` echo on the same server in the same run (ratio), interleaved over `reps`;
 * - T2 cancel → observed: `tasks/cancel` sent to the *other* HTTP worker than the one running the
 *   tool, beside a legacy `notifications/cancelled` also sent to the other worker, interleaved.
 * The server (two HTTP workers) is pinned to CPU 1, wrk and this process to CPU 0. Results:
 * bench/results/tasks.{md,json,svg}.
 */
import { writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { send } from './lib/http-client.js';
import { machineLine, pin, pinSelf, pinned } from './lib/machine.js';
import { stopServer } from './lib/process.js';
import { toJson, writeResults } from './lib/report.js';
import { waitForRecord } from './lib/record.js';
import { pct, range } from './lib/stats.js';
import { svgBars } from './lib/svg.js';
import { collect, ensureTools, parseMs, start, work } from './http/wrk.js';

const { smoke } = benchArgs('Usage: node dist/bench/tasks.js [options]\nT1 tasks/get on running tasks beside a plain echo; T2 tasks/cancel → observed across HTTP workers.', {
  smoke: { type: 'flag', help: 'a short run (CI): 1 rep of 2 s, 20 samples' },
});
const seconds = smoke ? 2 : 5;
const reps = smoke ? 1 : 3;
const samples = smoke ? 20 : 100;
const kExt = 'io.modelcontextprotocol/tasks';
const kAccept = 'application/json, text/event-stream';

const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } };
const modernHeaders = (method: string, name: string): Record<string, string> => ({
  'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name,
});
const rpc = (id: number | string, method: string, params: Record<string, unknown>): string => JSON.stringify({ jsonrpc: '2.0', id, method, params: { ...params, _meta: modernMeta } });

function result(body: string): Record<string, unknown> {
  const text = body.trim();
  const json = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).pop()!.slice(5);
  return (JSON.parse(json) as { result: Record<string, unknown> }).result;
}

interface Rate { rps: number; p50ms: number; p99ms: number; non2xx: number }

/**
 * wrk with a Lua script that sends `bodies[i]` with header `mcp-name: names[i]`, rotating. Kept
 * (not `sluice bench`): T1 polls 64 different task ids, and `sluice bench` sends one fixed request
 * (only the JSON-RPC id changes) of the methods its --method lists (not tasks/get), so it cannot
 * rotate bodies and Mcp-Name over task ids. The echo baseline of the T1 ratio uses the same
 * generator, so the ratio compares like with like.
 */
async function wrkRotating(port: number, method: string, bodies: string[], names: string[]): Promise<Rate> {
  const script = join(work(), `tasks-${method.replace('/', '-')}.lua`);
  const headers = Object.entries(modernHeaders(method, '')).filter(([k]) => k !== 'mcp-name').map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n');
  writeFileSync(script, `${headers}
local bodies = { ${bodies.map((b) => JSON.stringify(b)).join(', ')} }
local names = { ${names.map((n) => JSON.stringify(n)).join(', ')} }
local i = 0
request = function()
  i = i % #bodies + 1
  wrk.headers["mcp-name"] = names[i]
  return wrk.format("POST", "/mcp", wrk.headers, bodies[i])
end
`);
  const out = await collect(pinned(0, 'wrk', ['-t1', '-c32', `-d${seconds}s`, '--latency', '-s', script, `http://127.0.0.1:${port}/mcp`]), 'wrk');
  return {
    rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN),
    p50ms: parseMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99ms: parseMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
  };
}

/** A keep-alive agent whose one connection lands on `worker` (or on any worker, then named). */
async function agentOn(port: number, worker?: string): Promise<{ agent: Agent; worker: string }> {
  for (let attempt = 0; attempt < 500; attempt++) {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const reply = await send(port, { path: '/mcp', method: 'POST', body: rpc('probe', 'tools/call', { name: 'echo', arguments: { text: 'x' } }), headers: modernHeaders('tools/call', 'echo') }, agent);
    const got = String(reply.headers['sluice-worker']);
    if (worker === undefined || got === worker) return { agent, worker: got };
    agent.destroy();
  }
  throw new Error(`no connection landed on worker ${worker}`);
}

async function main(): Promise<void> {
  ensureTools();
  if (pin) pinSelf(0);
  const s = await start('sluice-tasks.mjs');
  const report: Record<string, unknown> = { machine: machineLine(), seconds, reps, samples };
  try {
    // T1: 64 parked tasks, polled round-robin, against echo calls.
    const ids: string[] = [];
    for (let i = 0; i < 64; i++) {
      const reply = await send(s.port, { path: '/mcp', method: 'POST', body: rpc(i, 'tools/call', { name: 'park', arguments: {} }), headers: modernHeaders('tools/call', 'park') });
      ids.push(String(result(reply.body).taskId));
    }
    const getBodies = ids.map((id, i) => rpc(i, 'tasks/get', { taskId: id }));
    const echoBodies = [rpc(1, 'tools/call', { name: 'echo', arguments: { text: 'hello' } })];
    const gets: Rate[] = [];
    const echoes: Rate[] = [];
    for (let r = 0; r < reps; r++) {
      echoes.push(await wrkRotating(s.port, 'tools/call', echoBodies, ['echo']));
      gets.push(await wrkRotating(s.port, 'tasks/get', getBodies, ids));
    }
    for (const id of ids) await send(s.port, { path: '/mcp', method: 'POST', body: rpc(id, 'tasks/cancel', { taskId: id }), headers: modernHeaders('tasks/cancel', id) });
    const ratios = gets.map((g, i) => g.rps / echoes[i].rps);
    report.t1 = { gets, echoes, ratio: range(ratios) };

    // T2: cancel → observed, the cancel sent to the other worker. Hand-written (as S4): the time is
    // the tool's own record of the cancel, and the cancel must reach a chosen worker's connection.
    const a = await agentOn(s.port);
    let b: { agent: Agent; worker: string } | undefined;
    for (let attempt = 0; attempt < 500 && b === undefined; attempt++) {
      const candidate = await agentOn(s.port);
      if (candidate.worker !== a.worker) b = candidate;
      else candidate.agent.destroy();
    }
    if (b === undefined) throw new Error('no connection landed on the second worker');
    const init = await send(s.port, { path: '/mcp', method: 'POST', headers: { 'content-type': 'application/json', accept: kAccept }, body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } }) });
    const legacy = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': String(init.headers['mcp-session-id']) };
    const taskCancel: number[] = [];
    const notifyCancel: number[] = [];
    for (let i = 0; i < samples * 2; i++) {
      const viaTask = i % 2 === 0;
      const record = join(work(), `task-cancel-${i}.txt`);
      let t0: bigint;
      if (viaTask) {
        const created = await send(s.port, { path: '/mcp', method: 'POST', body: rpc(`c${i}`, 'tools/call', { name: 'wait_cancel_task', arguments: { record } }), headers: modernHeaders('tools/call', 'wait_cancel_task') }, a.agent);
        const taskId = String(result(created.body).taskId);
        await waitForRecord(record, /started/);
        await new Promise((r) => setTimeout(r, 2));
        t0 = process.hrtime.bigint();
        await send(s.port, { path: '/mcp', method: 'POST', body: rpc(`x${i}`, 'tasks/cancel', { taskId }), headers: modernHeaders('tasks/cancel', taskId) }, b.agent);
      } else {
        const id = 10_000 + i;
        const call = new Promise<void>((resolve) => {
          const req = request({ host: '127.0.0.1', port: s.port, path: '/mcp', method: 'POST', headers: legacy, agent: a.agent }, (res) => { res.resume(); res.on('end', resolve); res.on('error', () => resolve()); });
          req.on('error', () => resolve());
          req.end(JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'wait_cancel', arguments: { record } } }));
        });
        await waitForRecord(record, /started/);
        await new Promise((r) => setTimeout(r, 2));
        t0 = process.hrtime.bigint();
        await send(s.port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id } }), headers: legacy }, b.agent);
        await waitForRecord(record, /seen (\d+)/);
        await call;
      }
      const seen = BigInt((await waitForRecord(record, /seen (\d+)/))[1]);
      if (i >= 4) (viaTask ? taskCancel : notifyCancel).push(Number(seen - t0) / 1e6);
    }
    a.agent.destroy();
    b.agent.destroy();
    report.t2 = {
      taskCancel: { p50ms: pct(taskCancel, 50), p99ms: pct(taskCancel, 99), n: taskCancel.length },
      notificationCancel: { p50ms: pct(notifyCancel, 50), p99ms: pct(notifyCancel, 99), n: notifyCancel.length },
    };
  } finally {
    await stopServer(s);
  }
  const t1 = report.t1 as { gets: Rate[]; echoes: Rate[]; ratio: { median: number; min: number; max: number } };
  const t2 = report.t2 as { taskCancel: { p50ms: number; p99ms: number; n: number }; notificationCancel: { p50ms: number; p99ms: number; n: number } };
  const md = [
    `# Tasks bench${smoke ? ' (smoke)' : ''}`,
    '',
    `${String(report.machine)}. Server: Sluice, two HTTP workers pinned to CPU 1; wrk (c = 32, ${seconds} s, ${reps} interleaved reps) and this process on CPU 0. \`npm run bench:tasks\`.`,
    '',
    '## T1: tasks/get on running tasks, beside tools/call echo (same server, same run)',
    '',
    '| rep | tasks/get req/s | p50 / p99 ms | echo req/s | p50 / p99 ms | ratio | non-2xx |',
    '|---:|---:|---:|---:|---:|---:|---:|',
    ...t1.gets.map((g, i) => `| ${i + 1} | ${g.rps.toFixed(0)} | ${g.p50ms.toFixed(2)} / ${g.p99ms.toFixed(2)} | ${t1.echoes[i].rps.toFixed(0)} | ${t1.echoes[i].p50ms.toFixed(2)} / ${t1.echoes[i].p99ms.toFixed(2)} | ${(g.rps / t1.echoes[i].rps).toFixed(2)} | ${g.non2xx + t1.echoes[i].non2xx} |`),
    '',
    `tasks/get ÷ echo: median ${t1.ratio.median.toFixed(2)} (min ${t1.ratio.min.toFixed(2)}, max ${t1.ratio.max.toFixed(2)}). A tasks/get reads the supervisor's store over a MessagePort (one message each way); the echo touches no store.`,
    '',
    '## T2: cancel → the running tool observed it (the cancel sent to the other HTTP worker)',
    '',
    '| how | p50 ms | p99 ms | n |',
    '|---|---:|---:|---:|',
    `| tasks/cancel (2026-07-28 task) | ${t2.taskCancel.p50ms.toFixed(3)} | ${t2.taskCancel.p99ms.toFixed(3)} | ${t2.taskCancel.n} |`,
    `| notifications/cancelled (legacy call) | ${t2.notificationCancel.p50ms.toFixed(3)} | ${t2.notificationCancel.p99ms.toFixed(3)} | ${t2.notificationCancel.n} |`,
    '',
    'Both raise the tool\'s flag in the shared registry from the worker that received the cancel; the time is from sending the cancel to the tool\'s record of seeing it (CLOCK_MONOTONIC).',
    '',
  ].join('\n');
  const svg = svgBars('Tasks: tasks/get vs echo (req/s, median rep)', [
    { label: 'tools/call echo', value: range(t1.echoes.map((e) => e.rps)).median },
    { label: 'tasks/get (running task)', value: range(t1.gets.map((g) => g.rps)).median },
  ], 'req/s');
  const name = smoke ? 'tasks-smoke' : 'tasks';
  const written = writeResults([[`${name}.md`, md], [`${name}.json`, toJson(report)], [`${name}.svg`, svg]]);
  process.stdout.write(`${md}\n${written.join('\n')}\n`);
}

await main();
