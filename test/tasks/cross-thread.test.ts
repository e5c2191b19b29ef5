/**
 * Tasks across real threads: created on one HTTP worker, read and cancelled through another (the
 * tool inline, and in the pool), a worker that dies with its task, and expiry freeing what the
 * store held. The server runs two HTTP workers; connections are steered to a chosen worker.
 */
import type { Agent } from 'node:http';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { MemoryTaskStore } from '../../src/index.js';
import { agentOnOtherWorker, post } from '../helpers/http.js';
import { modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { kDefaultTaskLimits } from '../../src/tasks/store.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';

interface Rpc { status: number; worker: string; result?: Record<string, unknown>; error?: { code: number; message: string } }

let next = 1;
async function call(url: string, method: string, params: Record<string, unknown>, agent?: Agent): Promise<Rpc> {
  const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } });
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
  const res = await post(url, { jsonrpc: '2.0', id: next++, method, params: { ...params, _meta: meta } }, {
    'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}),
  }, agent);
  const body = res.body.trim();
  const json = body.startsWith('{') ? JSON.parse(body) : JSON.parse(body.split('\n').filter((l) => l.startsWith('data:')).pop()!.slice(5));
  return { status: res.status, worker: String(res.headers['sluice-worker']), ...json };
}

const probe = (): Record<string, unknown> => ({
  jsonrpc: '2.0', id: 'probe', method: 'tools/call',
  params: { name: 'never_task', arguments: {}, _meta: modernMeta() },
});
const kProbeHeaders = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'never_task' };

async function status(url: string, taskId: string, agent?: Agent): Promise<Record<string, unknown>> {
  return (await call(url, 'tasks/get', { taskId }, agent)).result!;
}

async function settled(url: string, taskId: string, agent?: Agent, timeoutMs = 10_000): Promise<Record<string, unknown>> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const task = await status(url, taskId, agent);
    if (task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled') return task;
    if (Date.now() > deadline) throw new Error(`task ${taskId} still ${String(task.status)}`);
    await new Promise((r) => setTimeout(r, 150));
  }
}

describe('tasks across HTTP workers and the pool', () => {
  let s: TestServer;
  let url: string;
  const agents: Agent[] = [];
  beforeAll(async () => {
    s = await startServer({ tools: kTools, workers: 2, poolThreads: 1 });
    url = s.address.url;
  });
  afterEach(() => { for (const a of agents.splice(0)) a.destroy(); });
  afterAll(async () => { await s?.close(); });

  it('a task created on one worker is read and cancelled through the other; the tool sees the cancel', async () => {
    const record = recordPath();
    const created = await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 30_000, record } });
    const taskId = String(created.result!.taskId);
    const { agent: other, thread } = await agentOnOtherWorker(url, created.worker, kProbeHeaders, probe());
    agents.push(other);
    expect(thread).not.toBe(created.worker);
    const seen = await call(url, 'tasks/get', { taskId }, other);
    expect(seen.worker).toBe(thread);
    expect(seen.result).toMatchObject({ taskId, status: 'working' });
    const cancelled = await call(url, 'tasks/cancel', { taskId }, other);
    expect(cancelled.result).toMatchObject({ resultType: 'complete' });
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5000, 'the tool to see the cancel');
    expect(recorded(record)[0]).toBe(`thread ${created.worker}`);
    expect((await settled(url, taskId, other)).status).toBe('cancelled');
  });

  it('a pool tool running as a task sees a tasks/cancel sent to another worker', async () => {
    const record = recordPath();
    const created = await call(url, 'tools/call', { name: 'pool_spin', arguments: { ms: 30_000, record } });
    const taskId = String(created.result!.taskId);
    await until(() => recorded(record).length > 0, 10_000, 'the pool tool to start');
    const { agent: other } = await agentOnOtherWorker(url, created.worker, kProbeHeaders, probe());
    agents.push(other);
    await call(url, 'tasks/cancel', { taskId }, other);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5000, 'the pool tool to see the cancel');
    const poolThread = recorded(record)[0];
    expect(poolThread).not.toBe(`thread ${created.worker}`); // it ran in a pool thread, not the HTTP worker
    expect((await settled(url, taskId, other)).status).toBe('cancelled');
  });

  it('a task whose HTTP worker dies becomes failed with a reason', async () => {
    const created = await call(url, 'tools/call', { name: 'crash', arguments: {} });
    const taskId = String(created.result!.taskId);
    const task = await settled(url, taskId, undefined, 15_000);
    expect(task.status).toBe('failed');
    expect(String(task.statusMessage)).toMatch(/exited/);
    expect((task.error as { code: number }).code).toBe(-32603);
  });
});

describe('task expiry', () => {
  it('expired tasks are deleted with their results, freeing what the store held', async () => {
    const store = new MemoryTaskStore({ ...kDefaultTaskLimits, defaultTtlMs: 300, maxTtlMs: 300 });
    const s = await startServer({ tools: kTools, tasks: { store }, metrics: true });
    try {
      const ids: string[] = [];
      for (let i = 0; i < 5; i++) ids.push(String((await call(s.address.url, 'tools/call', { name: 'sleepy', arguments: { ms: 50 } })).result!.taskId));
      await until(() => store.stats().bytes > 0, 5000, 'results stored');
      expect(store.stats().tasks).toBe(5);
      const gauge = async (name: string) => Number(new RegExp(`^${name} (\\d+)$`, 'm').exec(await (await fetch(new URL('/metrics', s.address.url))).text())?.[1]);
      expect(await gauge('sluice_tasks_stored')).toBeGreaterThanOrEqual(0);
      await until(() => store.stats().tasks === 0, 5000, 'expiry');
      expect(store.stats().bytes).toBe(0);
      // /metrics (served by the workers) hears of it within the supervisor's 1 s refresh.
      const deadline = Date.now() + 5000;
      while ((await gauge('sluice_tasks_stored')) !== 0 || (await gauge('sluice_task_stored_bytes')) !== 0) {
        if (Date.now() > deadline) throw new Error('the task gauges did not drop to 0');
        await new Promise((r) => setTimeout(r, 100));
      }
      expect((await call(s.address.url, 'tasks/get', { taskId: ids[0] })).error?.code).toBe(-32602);
    } finally {
      await s.close();
    }
  });
});
