/**
 * sluice_requests_in_flight_by_target on real servers with 2 HTTP workers: tools that hold until
 * the test opens a gate file (any worker sees it), calls pinned to each worker, the gauge scraped
 * while they run and after; a failing tool, a JSON-RPC error, a cancel, a kill and a worker that
 * dies mid-request all bring it back to what is really running.
 */
import { writeFileSync } from 'node:fs';
import type { Agent } from 'node:http';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOnWorker, post } from '../helpers/http.js';
import type { RawResponse } from '../helpers/http.js';
import { modernMeta, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

const kGauge = 'sluice_requests_in_flight_by_target';
const dir = scratchDir('sluice-in-flight-');
const kSluice = new URL('../../dist/src/index.js', import.meta.url).href;

// The tools, written where worker threads can import them (plain ESM over the built package).
const kTools = join(dir, 'tools.mjs');
writeFileSync(kTools, `
import { existsSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
import { defineTool, ProtocolError, ErrorCode } from ${JSON.stringify(kSluice)};

const schema = { type: 'object', properties: { gate: { type: 'string' }, fail: { type: 'string' }, deaf: { type: 'boolean' } }, required: ['gate'] };
// Until the gate file exists or the call is cancelled (unless deaf); then the result, a throw, or a protocol error.
async function hold(args, ctx) {
  while (!existsSync(args.gate) && (args.deaf === true || !ctx.signal.aborted)) await new Promise((r) => setTimeout(r, 10));
  if (ctx.signal.aborted) return 'cancelled';
  if (args.fail === 'tool') throw new Error('the tool failed');
  if (args.fail === 'rpc') throw new ProtocolError(ErrorCode.InvalidParams, 'refused late');
  return String(threadId);
}
export const holdA = defineTool({ name: 'hold_a', description: 'Holds.', inputSchema: schema, handler: hold });
export const holdB = defineTool({ name: 'hold_b', description: 'Holds.', inputSchema: schema, handler: hold });
export const stubborn = defineTool({
  name: 'stubborn', description: 'Ignores its cancel for 3 s.', inputSchema: { type: 'object', properties: {} },
  handler: async () => { await new Promise((r) => setTimeout(r, 3000)); return 'late'; },
});
export const spinSync = defineTool({
  name: 'spin_sync', description: 'Holds its thread (synchronously) until the gate file exists, 10 s at most.', inputSchema: schema,
  handler: (args) => { const end = Date.now() + 10_000; while (!existsSync(args.gate) && Date.now() < end); return String(threadId); },
});
export const die = defineTool({
  name: 'die', description: 'Crashes its worker thread (an uncaught exception).', inputSchema: { type: 'object', properties: {} },
  handler: () => { setTimeout(() => { throw new Error('crash on purpose'); }, 0); return 'dying'; },
});
`);

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const headers = (method: string, name?: string): Record<string, string> => ({
  'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }),
});
let ids = 0;
function call(name: string, args: Record<string, unknown>) {
  return { jsonrpc: '2.0', id: ++ids, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } };
}
const kProbe = { jsonrpc: '2.0', id: 0, method: 'tools/list', params: { _meta: modernMeta() } };

/** Every sample of the gauge: `tool` (or `method:` for a series without a tool) → value. */
async function gauges(metricsUrl: string): Promise<{ byTool: Map<string, number>; text: string }> {
  const text = await (await fetch(metricsUrl)).text();
  const byTool = new Map<string, number>();
  for (const line of text.split('\n')) {
    const m = /^sluice_requests_in_flight_by_target\{mcp_method_name="([^"]*)"(?:,gen_ai_tool_name="([^"]*)")?\} (-?\d+)$/.exec(line);
    if (m !== null) byTool.set(m[2] ?? `${m[1]}:`, Number(m[3]));
  }
  return { byTool, text };
}

/** Scrapes (bounded, 250 ms apart: the scrape renders at most 5 times a second) until `want` holds. */
async function scrapeUntil(metricsUrl: string, want: Record<string, number>): Promise<Map<string, number>> {
  let last = new Map<string, number>();
  for (let i = 0; i < 60; i++) {
    last = (await gauges(metricsUrl)).byTool;
    if (Object.entries(want).every(([k, v]) => (last.get(k) ?? 0) === v)) return last;
    await new Promise((r) => setTimeout(r, 250));
  }
  return last;
}

/** The two workers' names, from probes on fresh connections. */
async function workerNames(url: string): Promise<[string, string]> {
  const names = new Set<string>();
  for (let i = 0; i < 200 && names.size < 2; i++) names.add(String((await post(url, kProbe, headers('tools/list'))).headers['sluice-worker']));
  expect(names.size).toBe(2);
  return [...names] as [string, string];
}

/** `count` keep-alive agents whose one connection each is served by worker `thread`. */
async function agents(url: string, thread: string, count: number): Promise<Agent[]> {
  const out: Agent[] = [];
  for (let i = 0; i < count; i++) out.push(await agentOnWorker(url, thread, headers('tools/list'), kProbe));
  return out;
}

describe('in-flight requests per tool, across 2 HTTP workers', () => {
  it('N calls of one tool and M of another held on both workers: the gauge says N and M while they run, 0 after', async () => {
    running = await startServer({ tools: pathToFileURL(kTools), workers: 2, metricsPort: 0 });
    const { url, metricsUrl } = { url: running.address.url, metricsUrl: running.address.metricsUrl! };
    const [w1, w2] = await workerNames(url);
    const gate = join(dir, 'gate-1');
    // hold_a: 3 on w1, 2 on w2; hold_b: 1 on w1, 2 on w2.
    const plan: Array<[string, string]> = [['hold_a', w1], ['hold_a', w1], ['hold_a', w1], ['hold_a', w2], ['hold_a', w2], ['hold_b', w1], ['hold_b', w2], ['hold_b', w2]];
    const pinned = [...await agents(url, w1, 4), ...await agents(url, w2, 4)];
    const byWorker = { [w1]: pinned.slice(0, 4), [w2]: pinned.slice(4) };
    const answers: Array<Promise<RawResponse>> = plan.map(([tool, worker]) => post(url, call(tool, { gate }), headers('tools/call', tool), byWorker[worker]!.pop()!));
    try {
      const during = await scrapeUntil(metricsUrl, { hold_a: 5, hold_b: 3 });
      expect(during.get('hold_a')).toBe(5);
      expect(during.get('hold_b')).toBe(3);
      const text = (await gauges(metricsUrl)).text;
      expect(text).toContain(`# TYPE ${kGauge} gauge`);
      // Still held: the earlier scrapes were not a passing moment.
      expect((await gauges(metricsUrl)).byTool.get('hold_a')).toBe(5);
    } finally {
      writeFileSync(gate, '');
    }
    const done = await Promise.all(answers);
    for (const [i, res] of done.entries()) {
      expect(res.status).toBe(200);
      expect(res.headers['sluice-worker']).toBe(plan[i]![1]); // the calls really ran where planned
    }
    const after = await scrapeUntil(metricsUrl, { hold_a: 0, hold_b: 0 });
    expect(after.get('hold_a')).toBe(0);
    expect(after.get('hold_b')).toBe(0);
    for (const agent of pinned) agent.destroy();
  });

  it('a synchronous tool holding its worker is counted while it runs (scraped from the metrics port)', async () => {
    running = await startServer({ tools: pathToFileURL(kTools), workers: 2, metricsPort: 0 });
    const { url, metricsUrl } = { url: running.address.url, metricsUrl: running.address.metricsUrl! };
    const gate = join(dir, 'gate-sync');
    const answer = post(url, call('spin_sync', { gate }), headers('tools/call', 'spin_sync'));
    try {
      expect((await scrapeUntil(metricsUrl, { spin_sync: 1 })).get('spin_sync')).toBe(1);
    } finally {
      writeFileSync(gate, '');
    }
    expect((await answer).status).toBe(200);
    expect((await scrapeUntil(metricsUrl, { spin_sync: 0 })).get('spin_sync')).toBe(0);
  });

  it('a failing tool, a late JSON-RPC error, a cancelled call and a killed one each return the gauge to 0', async () => {
    running = await startServer({ tools: pathToFileURL(kTools), workers: 2, metricsPort: 0, streamCancelTimeoutMs: 300 });
    const { url, metricsUrl } = { url: running.address.url, metricsUrl: running.address.metricsUrl! };
    const gate = join(dir, 'gate-2');
    const never = join(dir, 'never');
    const failing = post(url, call('hold_a', { gate, fail: 'tool' }), headers('tools/call', 'hold_a'));
    const refused = post(url, call('hold_a', { gate, fail: 'rpc' }), headers('tools/call', 'hold_a'));
    // 2026-07-28: the client going away is the cancel.
    const cancel = new AbortController();
    const cancelled = fetch(url, { method: 'POST', signal: cancel.signal, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers('tools/call', 'hold_b') }, body: JSON.stringify(call('hold_b', { gate: never })) }).catch((e: unknown) => e);
    const kill = new AbortController();
    const killed = fetch(url, { method: 'POST', signal: kill.signal, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers('tools/call', 'stubborn') }, body: JSON.stringify(call('stubborn', {})) }).catch((e: unknown) => e);
    const during = await scrapeUntil(metricsUrl, { hold_a: 2, hold_b: 1, stubborn: 1 });
    expect([during.get('hold_a'), during.get('hold_b'), during.get('stubborn')]).toEqual([2, 1, 1]);

    cancel.abort();
    kill.abort();
    writeFileSync(gate, '');
    const [f, r] = await Promise.all([failing, refused, cancelled, killed]);
    expect(f!.body).toContain('"isError":true');
    expect(r!.body).toContain('refused late');
    // The stubborn tool is still running (3 s); its request was killed after 300 ms and counts no more.
    const after = await scrapeUntil(metricsUrl, { hold_a: 0, hold_b: 0, stubborn: 0 });
    expect([after.get('hold_a'), after.get('hold_b'), after.get('stubborn')]).toEqual([0, 0, 0]);
    const { text } = await gauges(metricsUrl);
    expect(text).toMatch(/^sluice_requests_killed_total 1$/m);
    expect(text).toContain('mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="hold_b",error_type="cancelled"} 1');
    expect(text).toContain('mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="stubborn",error_type="killed"} 1');
  });

  it('unknown tool and prompt names are never labels: tools/call refuses them before going async, prompts/get is counted per method', async () => {
    running = await startServer({ tools: pathToFileURL(kTools), workers: 2, metricsPort: 0 });
    const { url, metricsUrl } = { url: running.address.url, metricsUrl: running.address.metricsUrl! };
    for (let i = 0; i < 20; i++) {
      await post(url, call(`hostile_${i}`, {}), headers('tools/call', `hostile_${i}`));
      await post(url, { jsonrpc: '2.0', id: ++ids, method: 'prompts/get', params: { name: `hostile_p${i}`, _meta: modernMeta() } }, headers('prompts/get', `hostile_p${i}`));
    }
    let text = '';
    for (let i = 0; i < 40 && !text.includes(`${kGauge}{mcp_method_name="prompts/get"}`); i++) {
      await new Promise((r) => setTimeout(r, 250));
      text = (await gauges(metricsUrl)).text;
    }
    expect(text).not.toContain('hostile');
    expect(text).toMatch(new RegExp(`^${kGauge}\\{mcp_method_name="prompts/get"\\} 0$`, 'm'));
  });

  it('a worker that dies mid-request leaves no phantom count; its histogram counts stay; its replacement counts on', async () => {
    running = await startServer({ tools: pathToFileURL(kTools), workers: 2, metricsPort: 0 });
    const { url, metricsUrl } = { url: running.address.url, metricsUrl: running.address.metricsUrl! };
    const [w1, w2] = await workerNames(url);
    const open = join(dir, 'gate-open');
    writeFileSync(open, '');
    // Finished calls on both workers: histogram counts the dead worker's block must keep.
    const warm = [...await agents(url, w1, 1), ...await agents(url, w2, 1)];
    for (const agent of warm) for (let i = 0; i < 3; i++) expect((await post(url, call('hold_a', { gate: open }), headers('tools/call', 'hold_a'), agent)).status).toBe(200);
    const count = 'mcp_server_operation_duration_seconds_count{mcp_method_name="tools/call",gen_ai_tool_name="hold_a"}';
    let text = '';
    for (let i = 0; i < 40 && !text.includes(`${count} 6`); i++) {
      await new Promise((r) => setTimeout(r, 250));
      text = (await gauges(metricsUrl)).text;
    }
    expect(text).toContain(`${count} 6`);

    const gate = join(dir, 'gate-3');
    const onW1 = await agents(url, w1, 3);
    const onW2 = await agents(url, w2, 2);
    // Deaf to their cancel: when w1 crashes (its sockets closed first, then the thread ends) its
    // three calls are still running, never released: only the block's release can end their count.
    const held = [...onW1, ...onW2].map((agent) => post(url, call('hold_a', { gate, deaf: true }), headers('tools/call', 'hold_a'), agent).catch((e: unknown) => e));
    expect((await scrapeUntil(metricsUrl, { hold_a: 5 })).get('hold_a')).toBe(5);
    // w1 ends mid-request, its three calls with it.
    const [killer] = await agents(url, w1, 1);
    await post(url, call('die', {}), headers('tools/call', 'die'), killer).catch(() => undefined);
    const after = await scrapeUntil(metricsUrl, { hold_a: 2 });
    expect(after.get('hold_a')).toBe(2);
    text = (await gauges(metricsUrl)).text;
    expect(text).toContain(`${count} 6`);

    // The replacement (it may take the dead worker's block) counts from 0, not from its phantom 3.
    let w3: string | undefined;
    for (let i = 0; i < 400 && w3 === undefined; i++) {
      const res = await post(url, kProbe, headers('tools/list')).catch(() => undefined);
      const name = res === undefined ? undefined : String(res.headers['sluice-worker']);
      if (name !== undefined && name !== w1 && name !== w2) w3 = name;
      else await new Promise((r) => setTimeout(r, 20));
    }
    if (w3 === undefined) throw new Error('no replacement worker answered');
    const [onW3] = await agents(url, w3, 1);
    const third = post(url, call('hold_a', { gate }), headers('tools/call', 'hold_a'), onW3);
    expect((await scrapeUntil(metricsUrl, { hold_a: 3 })).get('hold_a')).toBe(3);
    writeFileSync(gate, '');
    const results = await Promise.all([...held, third]);
    expect(results.filter((r) => (r as RawResponse).status === 200).length).toBe(3); // w2's two and w3's one
    expect((await scrapeUntil(metricsUrl, { hold_a: 0 })).get('hold_a')).toBe(0);
    for (const agent of [...warm, ...onW1, ...onW2, killer!, onW3!]) agent.destroy();
  });
});
