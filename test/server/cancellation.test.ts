import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent, request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOnOtherWorker, post } from '../helpers/http.js';
import { adapters, kNodeReusePort } from '../helpers/adapters.js';
import { initialize, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const legacy = (session: string) => ({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
const call = (id: number | string, name: string, args: Record<string, unknown>, meta?: Record<string, unknown>) => ({
  jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, ...(meta === undefined ? {} : { _meta: meta }) },
});
const cancel = (requestId: number | string, reason = 'user pressed stop') => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } });

/** Starts a legacy tools/call on its own connection; resolves with the response when it ends. */
function startCall(url: string, headers: Record<string, string>, message: unknown) {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  return { agent, response: post(url, message, headers, agent) };
}

function threadOf(lines: string[]): string {
  const m = /thread=(\d+)/.exec(lines[0] ?? '');
  if (m === null) throw new Error(`no thread in ${JSON.stringify(lines)}`);
  return m[1];
}

// Every case runs over both adapters: uWS (skipped, with the reason, where it cannot load) and node:http.
describe.each(adapters('cancellation'))('cancellation over %s', (http) => {
  // node:http shares a port between threads only with reusePort (Node >= 22.12 on Linux).
  const kCrossThreadSkip = kNodeReusePort ? undefined : `SKIPPED: node:http runs one HTTP thread under Node ${process.versions.node} (no reusePort)`;

  describe('legacy era: a notifications/cancelled POST on another worker thread stops the tool', () => {
    const crossThread = http === 'uws' || kCrossThreadSkip === undefined;
    (crossThread ? it : it.skip).each([
      ['an inline async tool', 'block'],
      ['a pool tool', 'spin'],
    ])(crossThread ? '%s' : `%s — ${kCrossThreadSkip}`, async (_label, tool) => {
      running = await startServer({ http });
      const { url } = running.address;
      const session = await initialize(url);
      const record = recordPath();
      // Learn which HTTP worker a connection lands on, then run the tool on that same connection.
      const mine = new Agent({ keepAlive: true, maxSockets: 1 });
      const probe = await post(url, { jsonrpc: '2.0', id: 'p', method: 'ping' }, legacy(session), mine);
      const toolWorker = String(probe.headers['sluice-worker']);
      const inFlight = { agent: mine, response: post(url, call(41, tool, { ms: 15_000, record }), legacy(session), mine) };
      await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
      if (tool === 'block') expect(threadOf(recorded(record))).toBe(toolWorker); // inline: runs on that worker
      const other = await agentOnOtherWorker(url, toolWorker, legacy(session), { jsonrpc: '2.0', id: 'q', method: 'ping' });
      expect(other.thread).not.toBe(toolWorker);
      const res = await post(url, cancel(41), legacy(session), other.agent);
      expect(res.status).toBe(202);
      expect(res.headers['sluice-worker']).toBe(other.thread); // the cancel was served by the other thread
      await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
      expect(recorded(record).at(-1)).toContain('reason=user pressed stop');
      // After a cancel no JSON-RPC response is sent: a JSON-mode POST gets 202 with no body.
      const answer = await inFlight.response;
      expect(answer.status).toBe(202);
      expect(answer.body).toBe('');
      other.agent.destroy();
      inFlight.agent.destroy();
    });
  });

  describe('legacy era: what the cancelled request gets back', () => {
    it('an SSE stream (the request streams progress) ends cleanly without a response', async () => {
      running = await startServer({ http });
      const { url } = running.address;
      const session = await initialize(url);
      const record = recordPath();
      const inFlight = startCall(url, legacy(session), call(7, 'block', { ms: 15_000, tick: 20, record }, { progressToken: 'tok' }));
      await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
      await new Promise((r) => setTimeout(r, 100)); // let some progress through
      expect((await post(url, cancel(7), legacy(session))).status).toBe(202);
      const answer = await inFlight.response;
      expect(answer.status).toBe(200);
      expect(answer.headers['content-type']).toBe('text/event-stream');
      const events = answer.body.split('\n\n').filter((e) => e.startsWith('event: message')).map((e) => JSON.parse(e.slice(e.indexOf('data: ') + 6)) as Record<string, unknown>);
      expect(events.length).toBeGreaterThan(0);
      expect(events.every((e) => e.method === 'notifications/progress')).toBe(true); // no response, no error
      const progress = events.map((e) => (e.params as { progress: number }).progress);
      expect(progress).toEqual([...progress].sort((a, b) => a - b));
      inFlight.agent.destroy();
    });

    it('a cancel for another client\'s ids cancels none of them (cross-scope isolation)', async () => {
      running = await startServer({ http });
      const { url } = running.address;
      const victim = await initialize(url);
      const attacker = await initialize(url);
      const records = [1, 2, 3].map(() => recordPath());
      const calls = records.map((record, i) => startCall(url, legacy(victim), call(i + 1, 'block', { ms: 15_000, record })));
      await until(() => records.every((r) => recorded(r).length > 0), 10_000, 'the victim\'s tools to start');
      for (let id = 1; id <= 1000; id++) {
        const res = await post(url, cancel(id, 'gotcha'), legacy(attacker));
        expect(res.status).toBe(202);
      }
      await new Promise((r) => setTimeout(r, 200));
      for (const record of records) expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
      expect(running.server.registry.counters().cancellations).toBe(0);
      // The victim can still cancel its own.
      for (const id of [1, 2, 3]) expect((await post(url, cancel(id), legacy(victim))).status).toBe(202);
      await until(() => records.every((r) => recorded(r).some((l) => l.startsWith('cancelled'))), 10_000, 'the victim\'s cancels');
      await Promise.all(calls.map((c) => c.response));
      for (const c of calls) c.agent.destroy();
    });

    it('a cancel past the per-scope quota is refused with an error response and logged', async () => {
      running = await startServer({ http, registry: { maxRowsPerScope: 2 }, streamCancelTimeoutMs: 60_000 });
      const { url } = running.address;
      const session = await initialize(url);
      const records = [1, 2, 3].map(() => recordPath());
      // stubborn ignores cancellation, so the rows stay while the requests run.
      const calls = records.map((record, i) => startCall(url, legacy(session), call(i + 1, 'stubborn', { ms: 1500, record })));
      await until(() => records.every((r) => recorded(r).length > 0), 10_000, 'the tools to start');
      expect((await post(url, cancel(1), legacy(session))).status).toBe(202);
      expect((await post(url, cancel(2), legacy(session))).status).toBe(202);
      const refused = await post(url, cancel(3), legacy(session));
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body)).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -31001, data: { reason: 'cancellation_limit_reached' } } });
      await until(() => running!.logs.some((l) => l.includes('cancellation refused')), 5_000, 'the refusal to be logged');
      await Promise.all(calls.map((c) => c.response));
      for (const c of calls) c.agent.destroy();
    });
  });

  describe('legacy era: DELETE of a session cancels its running requests', () => {
    const crossThread = http === 'uws' || kCrossThreadSkip === undefined;
    it(crossThread ? 'on every thread, inline and in the pool, with its reason; another session\'s run on' : `on its one HTTP thread (node:http has no reusePort under Node ${process.versions.node}), inline and in the pool, with its reason; another session's run on`, async () => {
      running = await startServer({ http });
      const { url } = running.address;
      const ending = await initialize(url);
      const staying = await initialize(url);
      const records = { inline: recordPath(), pool: recordPath(), elsewhere: recordPath(), other: recordPath() };
      // An inline tool on a connection whose worker is known, and one on the other worker.
      const mine = new Agent({ keepAlive: true, maxSockets: 1 });
      const toolWorker = String((await post(url, { jsonrpc: '2.0', id: 'p', method: 'ping' }, legacy(ending), mine)).headers['sluice-worker']);
      const calls = [{ agent: mine, response: post(url, call(1, 'block', { ms: 15_000, record: records.inline }), legacy(ending), mine) }];
      let deleter: Agent | undefined;
      if (crossThread) {
        const other = await agentOnOtherWorker(url, toolWorker, legacy(ending), { jsonrpc: '2.0', id: 'q', method: 'ping' });
        calls.push({ agent: other.agent, response: post(url, call(2, 'block', { ms: 15_000, record: records.elsewhere }), legacy(ending), other.agent) });
        // The DELETE is served by the other worker, which cancels requests running on both.
        deleter = (await agentOnOtherWorker(url, toolWorker, legacy(ending), { jsonrpc: '2.0', id: 'r', method: 'ping' })).agent;
      }
      calls.push(startCall(url, legacy(ending), call(3, 'spin', { ms: 15_000, record: records.pool })));
      const bystander = startCall(url, legacy(staying), call(1, 'block', { ms: 15_000, record: records.other }));
      const started = crossThread ? Object.values(records) : [records.inline, records.pool, records.other];
      await until(() => started.every((r) => recorded(r).length > 0), 10_000, 'the tools to start');
      const status = await new Promise<number>((resolve, reject) => {
        const req = request(url, { method: 'DELETE', agent: deleter ?? false, headers: legacy(ending) }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
        req.on('error', reject);
        req.end();
      });
      expect(status).toBe(204);
      const ended = started.filter((r) => r !== records.other);
      await until(() => ended.every((r) => recorded(r).some((l) => l.startsWith('cancelled'))), 10_000, 'the session\'s tools to see the cancel');
      for (const r of ended) expect(recorded(r).at(-1)).toContain('reason=the client ended its session (DELETE)');
      // As after a client's cancel: no JSON-RPC response (202, no body).
      for (const answer of await Promise.all(calls.map((c) => c.response))) expect([answer.status, answer.body]).toEqual([202, '']);
      expect(recorded(records.other).some((l) => l.startsWith('cancelled'))).toBe(false);
      // The answers go out at the cancel; each row goes when its tool has returned: only the bystander's stays.
      await until(() => running!.server.registry.counters().inFlight === 1, 5_000, 'the session\'s rows released');
      expect((await post(url, cancel(1), legacy(staying))).status).toBe(202);
      await bystander.response;
      for (const c of [...calls, bystander]) c.agent.destroy();
      deleter?.destroy();
    });
  });

  describe('modern era: a client disconnect is the cancel', () => {
    it('closing the request\'s stream makes the tool see ctx.cancelled', async () => {
      running = await startServer({ http });
      const { url } = running.address;
      const record = recordPath();
      const body = JSON.stringify(call('m1', 'block', { ms: 15_000, record }, modernMeta()));
      const req = request(url, {
        method: 'POST',
        agent: false,
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'block' },
      });
      req.on('error', () => {});
      req.end(body);
      await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
      req.destroy(); // the client goes away
      await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the disconnect');
      expect(recorded(record).at(-1)).toContain('reason=client disconnected');
      await until(() => running!.server.registry.counters().inFlight === 0, 5_000, 'the request to be untracked');
    });

    it('a tool that ignores the cancel is killed after streamCancelTimeout (inline: abandoned; pool: its thread terminated)', async () => {
      running = await startServer({ http, streamCancelTimeoutMs: 200 });
      const { url } = running.address;
      const killed: unknown[] = [];
      const onKilled = (m: unknown) => { killed.push(m); };
      subscribe('sluice:request:killed', onKilled);
      try {
        const hogRecord = recordPath();
        const stubbornRecord = recordPath();
        const open = (id: string, name: string, record: string) => {
          const req = request(url, {
            method: 'POST', agent: false,
            headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name },
          });
          req.on('error', () => {});
          req.end(JSON.stringify(call(id, name, { ms: 4000, record }, modernMeta())));
          return req;
        };
        const a = open('k1', 'hog', hogRecord);
        const b = open('k2', 'stubborn', stubbornRecord);
        await until(() => recorded(hogRecord).length > 0 && recorded(stubbornRecord).length > 0, 10_000, 'the tools to start');
        a.destroy();
        b.destroy();
        await until(() => killed.length === 2, 5_000, 'two kills');
        expect(killed).toEqual(expect.arrayContaining([{ requestId: 'k1', scope: 'modern:ip:127.0.0.1' }, { requestId: 'k2', scope: 'modern:ip:127.0.0.1' }]));
        await until(() => running!.server.registry.counters().inFlight === 0, 5_000, 'the killed requests\' rows to go');
        // The abandoned inline tool ran on to its end (4 s), but saw itself cancelled; nothing was written for it.
        await until(() => recorded(stubbornRecord).length === 2, 15_000, 'the abandoned tool to end');
        expect(recorded(stubbornRecord).at(-1)).toContain('cancelled=true');
        // The hog, started at the same time with the same 4 s, would have finished by now: its thread
        // was terminated, so it never gets to record "finished".
        await new Promise((r) => setTimeout(r, 500));
        expect(recorded(hogRecord).some((l) => l.startsWith('finished'))).toBe(false);
        // The server still serves pool tools afterwards.
        const after = await post(url, call('after', 'spin', { ms: 10 }, modernMeta()), { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'spin' });
        expect(JSON.parse(after.body).result.structuredContent).toEqual({ finished: true });
      } finally {
        unsubscribe('sluice:request:killed', onKilled);
      }
    });
  });

  describe('bounds and metrics', () => {
    it('refuses with 503 and Retry-After when the in-flight table is full', async () => {
      running = await startServer({ http, registry: { inFlightCapacity: 2 }, workers: 1 });
      const { url } = running.address;
      const session = await initialize(url);
      const records = [recordPath(), recordPath()];
      const calls = records.map((record, i) => startCall(url, legacy(session), call(i + 1, 'block', { ms: 15_000, record })));
      await until(() => records.every((r) => recorded(r).length > 0), 10_000, 'two requests in flight');
      const refused = await post(url, call(3, 'echo', { text: 'x' }), legacy(session));
      expect(refused.status).toBe(503);
      expect(refused.headers['retry-after']).toBe('1');
      for (const id of [1, 2]) await post(url, cancel(id), legacy(session));
      await Promise.all(calls.map((c) => c.response));
      // The exchanges end at the cancel; the rows go when the tools have stopped.
      await until(() => running!.server.registry.counters().inFlight === 0, 5_000, 'the cancelled tools to stop');
      const ok = await post(url, call(4, 'echo', { text: 'back' }), legacy(session));
      expect(JSON.parse(ok.body).result.content[0].text).toBe('back');
      for (const c of calls) c.agent.destroy();
    });

    it('serves Prometheus text at /metrics when asked to', async () => {
      running = await startServer({ http, metrics: true });
      const { url } = running.address;
      const session = await initialize(url);
      await post(url, call(1, 'echo', { text: 'x' }), legacy(session));
      const res = await fetch(new URL('/metrics', url));
      expect(res.status).toBe(200);
      const text = await res.text();
      for (const name of ['sluice_requests_total', 'sluice_requests_in_flight', 'sluice_cancellations_total', 'sluice_cancellations_refused_total', 'sluice_cancellation_evictions_total', 'sluice_requests_killed_total']) {
        expect(text).toMatch(new RegExp(`^${name} \\d+$`, 'm'));
      }
      expect(text).toMatch(/^sluice_requests_total [2-9]$/m); // initialize + tools/call at least
      // The per-thread series add up to the total (the fetch of /metrics itself is no JSON-RPC request).
      const total = Number(/^sluice_requests_total (\d+)$/m.exec(text)![1]);
      const perThread = [...text.matchAll(/^sluice_thread_requests_total\{block="(\d+)"\} (\d+)$/gm)];
      expect(perThread.length).toBeGreaterThan(0);
      expect(perThread.reduce((a, m) => a + Number(m[2]), 0)).toBe(total);
    });
  });
});
