/**
 * The 2026-07-28 tasks extension against a real server, beyond what the conformance suite checks:
 * the per-request opt-in, input requests answered with tasks/update (ctx.request and input-required
 * rounds alike), notifications/tasks on listen streams, poll pacing, and owner isolation.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kAccept, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { post } from '../helpers/http.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';

interface Rpc { status: number; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }

let next = 1;
/** One 2026-07-28 request; `optIn` puts the tasks extension in its _meta capabilities. */
async function call(url: string, method: string, params: Record<string, unknown>, optIn = true, headers: Record<string, string> = {}): Promise<Rpc> {
  const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': optIn ? { elicitation: {}, extensions: { [kExt]: {} } } : { elicitation: {} } });
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
  const res = await post(url, { jsonrpc: '2.0', id: next++, method, params: { ...params, _meta: meta } }, {
    'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}), ...headers,
  });
  const body = res.body.trim();
  const json = body.startsWith('{') ? JSON.parse(body) : JSON.parse(body.split('\n').filter((l) => l.startsWith('data:')).pop()!.slice(5));
  return { status: res.status, ...json };
}

async function settle(url: string, taskId: string, headers: Record<string, string> = {}): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const got = await call(url, 'tasks/get', { taskId }, true, headers);
    const status = got.result?.status;
    if (status === 'completed' || status === 'failed' || status === 'cancelled') return got.result!;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error('task did not settle');
}

/** Waits for the task's first input request and answers it with tasks/update. */
async function answerFirstRound(url: string, taskId: string, answer: unknown): Promise<void> {
  let task: Record<string, unknown> = {};
  for (let i = 0; i < 50 && task.status !== 'input_required'; i++) {
    task = (await call(url, 'tasks/get', { taskId })).result!;
    if (task.status !== 'input_required') await new Promise((r) => setTimeout(r, 50));
  }
  const [key] = Object.keys(task.inputRequests as object);
  await call(url, 'tasks/update', { taskId, inputResponses: { [key]: answer } });
}

describe('2026-07-28 tasks extension', () => {
  let s: TestServer;
  let url: string;
  beforeAll(async () => { s = await startServer({ tools: kTools }); url = s.address.url; });
  afterAll(async () => { await s?.close(); });

  it('declares the extension (not capabilities.tasks) and lists no execution field', async () => {
    const discover = await call(url, 'server/discover', {});
    const capabilities = discover.result!.capabilities as Record<string, unknown>;
    expect(capabilities.extensions).toEqual({ [kExt]: {} });
    expect(capabilities.tasks).toBeUndefined();
    const tools = (await call(url, 'tools/list', {})).result!.tools as Array<Record<string, unknown>>;
    expect(tools.every((t) => t.execution === undefined)).toBe(true);
  });

  it('without the opt-in: an optional tool answers synchronously, a required one is 400/-32021, tasks/* are -32021', async () => {
    const plain = await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 50 } }, false);
    expect(plain.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'slept 50' }] });
    const required = await call(url, 'tools/call', { name: 'must_task', arguments: {} }, false);
    expect(required.status).toBe(400);
    expect(required.error).toMatchObject({ code: -32021, data: { requiredCapabilities: { extensions: { [kExt]: {} } } } });
    for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
      expect((await call(url, method, { taskId: 'x', inputResponses: {} }, false)).error?.code, method).toBe(-32021);
    }
  });

  it('creates a flat task only once tasks/get resolves it; a tool error completes with isError; a JSON-RPC error fails', async () => {
    const created = await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 100 } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(created.result!.task).toBeUndefined();
    expect(Number.isInteger(created.result!.ttlMs) && Number.isInteger(created.result!.pollIntervalMs)).toBe(true);
    const taskId = String(created.result!.taskId);
    expect((await call(url, 'tasks/get', { taskId })).result).toMatchObject({ resultType: 'complete', taskId });
    expect(await settle(url, taskId)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'slept 100' }] } });
    const failing = String((await call(url, 'tools/call', { name: 'fails', arguments: {} })).result!.taskId);
    expect(await settle(url, failing)).toMatchObject({ status: 'completed', result: { isError: true } });
    const erroring = String((await call(url, 'tools/call', { name: 'rpc_fail', arguments: {} })).result!.taskId);
    const failed = await settle(url, erroring);
    expect(failed).toMatchObject({ status: 'failed', error: { code: -32602, message: 'bad thing' } });
    expect(failed.result).toBeUndefined();
  });

  it('a handler that settles before the event loop turns is answered directly (no task)', async () => {
    const instant = await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 0 } });
    expect(instant.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'slept 0' }] });
  });

  it('a thenable that is not a Promise is awaited: settled at once it is the direct answer, settled later the task\'s result', async () => {
    const instant = await call(url, 'tools/call', { name: 'thenable_task', arguments: {} });
    expect(instant.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'thenable at once' }] });
    const created = await call(url, 'tools/call', { name: 'thenable_task', arguments: { ms: 200 } });
    expect(created.result).toMatchObject({ resultType: 'task', status: 'working' });
    expect(await settle(url, String(created.result!.taskId))).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'thenable after 200' }] } });
  });

  it('ctx.request becomes input_required; tasks/update answers it and the tool resumes', async () => {
    const taskId = String((await call(url, 'tools/call', { name: 'ask', arguments: {} })).result!.taskId);
    let task: Record<string, unknown> = {};
    for (let i = 0; i < 50 && task.status !== 'input_required'; i++) {
      task = (await call(url, 'tasks/get', { taskId })).result!;
      if (task.status !== 'input_required') await new Promise((r) => setTimeout(r, 50));
    }
    expect(task.status).toBe('input_required');
    const keys = Object.keys(task.inputRequests as object);
    expect(keys.length).toBe(1);
    expect((task.inputRequests as Record<string, { method: string }>)[keys[0]].method).toBe('elicitation/create');
    const ack = await call(url, 'tasks/update', { taskId, inputResponses: { [keys[0]]: { action: 'accept', content: { name: 'Grace' } }, unknown: {} } });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    expect(ack.result!.status).toBeUndefined();
    expect(await settle(url, taskId)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'Hello, Grace' }] } });
  });

  it('an input-required round returned inside a task becomes its input requests, and the handler runs again with the answers and state', async () => {
    const taskId = String((await call(url, 'tools/call', { name: 'later_ask', arguments: {} })).result!.taskId);
    await answerFirstRound(url, taskId, { action: 'accept', content: { c: 'teal' } });
    expect(await settle(url, taskId)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'color teal after round 1' }] } });
  });

  it('a pool tool\'s input-required round inside a task: every round runs in the pool, with the answers and state', async () => {
    const taskId = String((await call(url, 'tools/call', { name: 'later_ask_pool', arguments: {} })).result!.taskId);
    await answerFirstRound(url, taskId, { action: 'accept', content: { c: 'teal' } });
    expect(await settle(url, taskId)).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'color teal after round 1, asked from the pool, answered in the pool' }] } });
  });

  it('tasks/cancel acks, the tool sees it, the task ends cancelled, and a cancel on a terminal task acks too', async () => {
    const record = recordPath();
    const taskId = String((await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 30_000, record } })).result!.taskId);
    expect((await call(url, 'tasks/cancel', { taskId })).result).toEqual(expect.objectContaining({ resultType: 'complete' }));
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5000, 'the tool to see the cancel');
    expect((await settle(url, taskId)).status).toBe('cancelled');
    expect((await call(url, 'tasks/cancel', { taskId })).result).toMatchObject({ resultType: 'complete' });
    expect((await call(url, 'tasks/cancel', { taskId: 'no-such-task' })).error?.code).toBe(-32602);
    expect((await call(url, 'tasks/result', { taskId })).error?.code).toBe(-32601);
    expect((await call(url, 'tasks/list', {})).error?.code).toBe(-32601);
  });

  it('polling much faster than pollIntervalMs is refused with 429 until the pace drops', async () => {
    const taskId = String((await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 5000 } })).result!.taskId);
    // 30 polls at once. (One after another, they were not "much faster" on a loaded CI machine: at
    // over 60 ms a call the bucket refills as fast as they drain it, and all 30 were served.) Each
    // HTTP worker keeps its own bucket of 10, so of 30 at least 10 are served and at least 10 refused.
    const statuses = await Promise.all(Array.from({ length: 30 }, async () => (await call(url, 'tasks/get', { taskId })).status));
    expect(statuses.filter((st) => st !== 200 && st !== 429)).toEqual([]);
    expect(statuses.filter((st) => st === 200).length).toBeGreaterThanOrEqual(10);
    expect(statuses.filter((st) => st === 429).length).toBeGreaterThanOrEqual(5);
    await new Promise((r) => setTimeout(r, 600));
    expect((await call(url, 'tasks/get', { taskId })).status).toBe(200);
    await call(url, 'tasks/cancel', { taskId });
  });

  it("a task is its owner's: another principal gets -32602 for get, update and cancel, and cancels nothing", async () => {
    const own = { authorization: 'Bearer alice' };
    const other = { authorization: 'Bearer mallory' };
    const auth = await startServer({ tools: new URL('../fixtures/task-tools-auth.mjs', import.meta.url) });
    try {
      const record = recordPath();
      const taskId = String((await call(auth.address.url, 'tools/call', { name: 'sleepy', arguments: { ms: 1500, record } }, true, own)).result!.taskId);
      for (const method of ['tasks/get', 'tasks/update', 'tasks/cancel']) {
        expect((await call(auth.address.url, method, { taskId, inputResponses: {} }, true, other)).error?.code, method).toBe(-32602);
      }
      expect(await settle(auth.address.url, taskId, own)).toMatchObject({ status: 'completed' });
      expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
    } finally {
      await auth.close();
    }
  });

  it('a listen stream that asked for task ids gets notifications/tasks with the full task', async () => {
    const taskId = String((await call(url, 'tools/call', { name: 'sleepy', arguments: { ms: 300 } })).result!.taskId);
    const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'listen-1', method: 'subscriptions/listen', params: { notifications: { taskIds: [taskId, 'not-mine'] }, _meta: meta } });
    const messages: Array<Record<string, unknown>> = [];
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: kAccept, 'content-length': Buffer.byteLength(body), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' } }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const data = buffer.slice(0, end).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
          buffer = buffer.slice(end + 2);
          if (data !== '') messages.push(JSON.parse(data) as Record<string, unknown>);
        }
      });
    });
    req.end(body);
    try {
      await until(() => messages.some((m) => m.method === 'notifications/tasks' && (m.params as Record<string, unknown>).status === 'completed'), 5000, 'the completed notification');
      const ack = messages.find((m) => m.method === 'notifications/subscriptions/acknowledged')!;
      expect((ack.params as { notifications: { taskIds: string[] } }).notifications.taskIds).toEqual([taskId]);
      const done = messages.find((m) => m.method === 'notifications/tasks' && (m.params as Record<string, unknown>).status === 'completed')!;
      expect(done.params).toMatchObject({ taskId, result: { content: [{ type: 'text', text: 'slept 300' }] } });
      expect(messages.some((m) => m.method === 'notifications/progress' || m.method === 'notifications/message')).toBe(false);
    } finally {
      req.destroy();
    }
  });
});
