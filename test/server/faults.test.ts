import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOnWorker, post } from '../helpers/http.js';
import { initialize, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const legacy = (session: string) => ({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });

describe('an HTTP worker that dies', () => {
  it('is replaced, its in-flight rows are swept, and the other worker is unaffected', async () => {
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url);
    const [first, second] = running.server.workerThreadIds.map(String);
    // A request in flight on each worker.
    const records = [recordPath(), recordPath()];
    const agents: Agent[] = [];
    const calls = [first, second].map(async (thread, i) => {
      const agent = await agentOnWorker(url, thread, legacy(session), { jsonrpc: '2.0', id: `p${i}`, method: 'ping' });
      agents.push(agent);
      return post(url, { jsonrpc: '2.0', id: 100 + i, method: 'tools/call', params: { name: 'block', arguments: { ms: 3000, record: records[i] } } }, legacy(session), agent);
    });
    const settled = Promise.allSettled(calls); // observed now: one of them is expected to fail
    await until(() => records.every((r) => recorded(r).length > 0), 10_000, 'both requests in flight');
    expect(running.server.registry.counters().inFlight).toBe(2);
    // Crash the first worker mid-request.
    const crasher = await agentOnWorker(url, first, legacy(session), { jsonrpc: '2.0', id: 'c0', method: 'ping' });
    await post(url, { jsonrpc: '2.0', id: 'boom', method: 'tools/call', params: { name: 'crash', arguments: {} } }, legacy(session), crasher).catch(() => undefined);
    crasher.destroy();
    await until(() => running!.server.workerThreadIds.length === 2 && !running!.server.workerThreadIds.map(String).includes(first), 10_000, 'a replacement worker');
    expect(running.logs.some((l) => l.includes(`HTTP worker ${first} exited`))).toBe(true);
    // The dead worker's two rows (the blocked call and the crashing call) were swept; the survivor's remains.
    const counters = running.server.registry.counters();
    expect(counters.inFlight).toBe(1);
    expect(counters.inFlightSwept).toBeGreaterThanOrEqual(1);
    // The survivor's request completes normally.
    const results = await settled;
    const survivor = results[1];
    expect(survivor.status).toBe('fulfilled');
    if (survivor.status === 'fulfilled') expect(JSON.parse(survivor.value.body).result.structuredContent.finished).toBe(true);
    expect(results[0].status).toBe('rejected'); // its connection died with its thread
    // New connections are served (by the survivor or the replacement), sessions included.
    for (let i = 0; i < 6; i++) {
      const res = await post(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'echo', arguments: { text: `after ${i}` } } }, legacy(session));
      expect(JSON.parse(res.body).result.content[0].text).toBe(`after ${i}`);
    }
    for (const a of agents) a.destroy();
  });
});

describe('a replacement HTTP worker whose tools module defines something else', () => {
  it('serves, and the supervisor logs an error naming the module and the difference', async () => {
    running = await startServer({ tools: new URL('../fixtures/per-thread-tools.mjs', import.meta.url), workers: 1, sessions: false });
    const { url } = running.address;
    const [first] = running.server.workerThreadIds.map(String);
    const call = (id: number, name: string) => post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: {} } }, { 'mcp-protocol-version': '2025-11-25' });
    expect(JSON.parse((await call(1, `t${first}`)).body).result.content[0].text).toBe('hi');
    await call(2, 'crash').catch(() => undefined);
    await until(() => running!.server.workerThreadIds.length === 1 && String(running!.server.workerThreadIds[0]) !== first, 10_000, 'a replacement worker');
    const [second] = running.server.workerThreadIds.map(String);
    await until(() => running!.logs.some((l) => l.includes(`replacement HTTP worker ${second}`)), 10_000, 'the error about the replacement');
    const line = running.logs.find((l) => l.includes(`replacement HTTP worker ${second}`))!;
    expect(line).toContain('per-thread-tools.mjs defines different things in different HTTP workers');
    expect(line).toContain(`tools: "t${first}" only in the first; "t${second}" only in the other`);
    // It serves what its own import defined (the listen line came after it listened).
    expect(JSON.parse((await call(3, `t${second}`)).body).result.content[0].text).toBe('hi');
  });
});
