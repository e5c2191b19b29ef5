/**
 * 2025-11-25 experimental tasks (legacy era, sessions) against a real server: capabilities and
 * taskSupport, create, get, blocking result, list, cancel, and the required/forbidden rules. The
 * conformance suite has no scenario for this dialect, so these are its checks.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kAccept, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { post } from '../helpers/http.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kRelated = 'io.modelcontextprotocol/related-task';

interface Rpc { result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } }

/** A legacy client on one session. */
class Session {
  id = '';
  #next = 1;
  constructor(readonly url: string, readonly headers: Record<string, string> = {}) {}

  async open(capabilities: Record<string, unknown> = {}): Promise<Record<string, unknown>> {
    const res = await post(this.url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities, clientInfo: { name: 't', version: '1' } } }, { ...this.headers, 'mcp-protocol-version': '2025-11-25' });
    expect(res.status).toBe(200);
    this.id = String(res.headers['mcp-session-id']);
    return (parse(res.body) as Rpc).result!;
  }

  async call(method: string, params: Record<string, unknown> = {}): Promise<Rpc & { status: number }> {
    const res = await post(this.url, { jsonrpc: '2.0', id: this.#next++, method, params }, this.#h());
    return { status: res.status, ...(parse(res.body) as Rpc) };
  }

  #h(): Record<string, string> {
    return { ...this.headers, 'mcp-session-id': this.id, 'mcp-protocol-version': '2025-11-25' };
  }

  /** A request whose SSE stream is read as it comes: `onMessage` sees every message; resolves with the response. */
  stream(method: string, params: Record<string, unknown>, onMessage: (m: Record<string, unknown>) => void): Promise<Rpc> {
    const id = this.#next++;
    const body = JSON.stringify({ jsonrpc: '2.0', id, method, params });
    return new Promise((resolve, reject) => {
      const req = request(this.url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: kAccept, 'content-length': Buffer.byteLength(body), ...this.#h() } }, (res) => {
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const event = buffer.slice(0, end);
            buffer = buffer.slice(end + 2);
            const data = event.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
            if (data === '') continue;
            const message = JSON.parse(data) as Record<string, unknown>;
            if (message.id === id && (message.result !== undefined || message.error !== undefined)) resolve(message as Rpc);
            else onMessage(message);
          }
        });
        res.on('end', () => {
          const data = buffer.trim();
          if (data.startsWith('{')) resolve(JSON.parse(data) as Rpc);
        });
      });
      req.on('error', reject);
      req.end(body);
    });
  }

  /** DELETE: ends the session; its HTTP status. */
  end(): Promise<number> {
    return new Promise((resolve, reject) => {
      const req = request(this.url, { method: 'DELETE', agent: false, headers: this.#h() }, (res) => { res.resume(); resolve(res.statusCode ?? 0); });
      req.on('error', reject);
      req.end();
    });
  }

  /** Posts the client's answer to a server request. */
  answer(id: unknown, result: unknown): Promise<unknown> {
    return post(this.url, { jsonrpc: '2.0', id, result }, this.#h());
  }
}

function parse(body: string): unknown {
  const trimmed = body.trim();
  if (trimmed.startsWith('{')) return JSON.parse(trimmed);
  const data = trimmed.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  return JSON.parse(data[data.length - 1]);
}

const task = (r: Rpc): Record<string, unknown> => (r.result as { task: Record<string, unknown> }).task;

describe('2025-11-25 experimental tasks', () => {
  let s: TestServer;
  beforeAll(async () => { s = await startServer({ tools: kTools }); });
  afterAll(async () => { await s?.close(); });

  it('declares capabilities.tasks (no list without authentication) and each tool its execution.taskSupport', async () => {
    const c = new Session(s.address.url);
    const init = await c.open();
    expect((init.capabilities as Record<string, unknown>).tasks).toEqual({ cancel: {}, requests: { tools: { call: {} } } });
    const list = await c.call('tools/list');
    const tools = (list.result!.tools as Array<Record<string, unknown>>);
    expect(tools.find((t) => t.name === 'sleepy')!.execution).toEqual({ taskSupport: 'optional' });
    expect(tools.find((t) => t.name === 'must_task')!.execution).toEqual({ taskSupport: 'required' });
    expect(tools.find((t) => t.name === 'never_task')!.execution).toBeUndefined();
  });

  it('creates a task (nested result), reads it, and tasks/result returns exactly the tool result with related-task', async () => {
    const c = new Session(s.address.url);
    await c.open();
    const created = await c.call('tools/call', { name: 'sleepy', arguments: { ms: 100 }, task: { ttl: 60_000 } });
    const t = task(created);
    expect(t).toMatchObject({ status: 'working', ttl: 60_000 });
    expect(typeof t.taskId).toBe('string');
    expect(Buffer.from(String(t.taskId), 'base64url').length).toBe(16); // 128 random bits
    expect(new Date(String(t.createdAt)).toISOString()).toBe(t.createdAt);
    expect(typeof t.pollInterval).toBe('number');
    const got = await c.call('tasks/get', { taskId: t.taskId });
    expect(got.result).toMatchObject({ taskId: t.taskId, status: 'working' });
    const result = await c.call('tasks/result', { taskId: t.taskId });
    expect(result.result).toEqual({ content: [{ type: 'text', text: 'slept 100' }], _meta: { [kRelated]: { taskId: t.taskId } } });
    expect((await c.call('tasks/get', { taskId: t.taskId })).result).toMatchObject({ status: 'completed' });
  });

  it('a tool error fails the task, and tasks/result still returns the tool result; a JSON-RPC error is returned as one', async () => {
    const c = new Session(s.address.url);
    await c.open();
    const failing = task(await c.call('tools/call', { name: 'fails', arguments: {}, task: {} }));
    const r1 = await c.call('tasks/result', { taskId: failing.taskId });
    expect(r1.result).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it failed' }] });
    expect((await c.call('tasks/get', { taskId: failing.taskId })).result!.status).toBe('failed');
    const erroring = task(await c.call('tools/call', { name: 'rpc_fail', arguments: {}, task: {} }));
    const r2 = await c.call('tasks/result', { taskId: erroring.taskId });
    expect(r2.error).toMatchObject({ code: -32602, message: 'bad thing', data: { why: 'test' } });
  });

  it('tasks/cancel returns the cancelled task, the running tool sees the cancel, and a terminal task cannot be cancelled (-32602)', async () => {
    const c = new Session(s.address.url);
    await c.open();
    const record = recordPath();
    const t = task(await c.call('tools/call', { name: 'sleepy', arguments: { ms: 30_000, record }, task: {} }));
    const cancelled = await c.call('tasks/cancel', { taskId: t.taskId });
    expect(cancelled.result).toMatchObject({ taskId: t.taskId, status: 'cancelled' });
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5000, 'the tool to see the cancel');
    const again = await c.call('tasks/cancel', { taskId: t.taskId });
    expect(again.error?.code).toBe(-32602);
    expect((await c.call('tasks/get', { taskId: t.taskId })).result!.status).toBe('cancelled');
    const result = await c.call('tasks/result', { taskId: t.taskId });
    expect(result.error).toBeDefined();
  });

  it('refuses a task for a forbidden tool and a plain call of a required tool with -32601; unknown ids are -32602', async () => {
    const c = new Session(s.address.url);
    await c.open();
    expect((await c.call('tools/call', { name: 'never_task', arguments: {}, task: {} })).error?.code).toBe(-32601);
    expect((await c.call('tools/call', { name: 'must_task', arguments: {} })).error?.code).toBe(-32601);
    const ok = task(await c.call('tools/call', { name: 'must_task', arguments: {}, task: {} }));
    expect((await c.call('tasks/result', { taskId: ok.taskId })).result).toMatchObject({ content: [{ type: 'text', text: 'done as a task' }] });
    expect((await c.call('tools/call', { name: 'sleepy', arguments: { ms: 1 } })).result).toMatchObject({ content: [{ type: 'text', text: 'slept 1' }] });
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      expect((await c.call(method, { taskId: 'AAAAAAAAAAAAAAAAAAAAAA' })).error?.code, method).toBe(-32602);
    }
  });

  it("another session's task is as unknown as a made-up id, and its cancel cancels nothing", async () => {
    const owner = new Session(s.address.url);
    await owner.open();
    const other = new Session(s.address.url);
    await other.open();
    const record = recordPath();
    const t = task(await owner.call('tools/call', { name: 'sleepy', arguments: { ms: 2000, record }, task: {} }));
    for (const method of ['tasks/get', 'tasks/result', 'tasks/cancel']) {
      expect((await other.call(method, { taskId: t.taskId })).error?.code, method).toBe(-32602);
    }
    expect((await other.call('tasks/list')).error?.code).toBe(-32601);
    const result = await owner.call('tasks/result', { taskId: t.taskId });
    expect(result.result).toMatchObject({ content: [{ type: 'text', text: 'slept 2000' }] });
    expect(recorded(record).some((l) => l.startsWith('cancelled'))).toBe(false);
  });

  it('a session\'s DELETE cancels its running tasks (no one can read them any more); another session\'s task runs on', async () => {
    const owner = new Session(s.address.url);
    await owner.open();
    const other = new Session(s.address.url);
    await other.open();
    const [mine, theirs] = [recordPath(), recordPath()];
    const t = task(await owner.call('tools/call', { name: 'sleepy', arguments: { ms: 30_000, record: mine }, task: {} }));
    const kept = task(await other.call('tools/call', { name: 'sleepy', arguments: { ms: 1500, record: theirs }, task: {} }));
    await until(() => recorded(mine).length > 0 && recorded(theirs).length > 0, 5000, 'both tools to start');
    expect(await owner.end()).toBe(204);
    await until(() => recorded(mine).some((l) => l.startsWith('cancelled')), 5000, 'the task\'s tool to see the cancel');
    expect(recorded(mine).at(-1)).toBe('cancelled the client ended its session (DELETE)');
    expect((await owner.call('tasks/get', { taskId: t.taskId })).status).toBe(404); // the session is gone
    expect((await other.call('tasks/result', { taskId: kept.taskId })).result).toMatchObject({ content: [{ type: 'text', text: 'slept 1500' }] });
    expect(recorded(theirs).some((l) => l.startsWith('cancelled'))).toBe(false);
  });

  it('input the task needs reaches the client on the tasks/result stream (related-task), and progress with the call token', async () => {
    const c = new Session(s.address.url);
    await c.open({ elicitation: {} });
    const asked = task(await c.call('tools/call', { name: 'ask', arguments: {}, task: {} }));
    const seen: Array<Record<string, unknown>> = [];
    const result = await c.stream('tasks/result', { taskId: asked.taskId }, (m) => {
      seen.push(m);
      if (m.method === 'elicitation/create') void c.answer(m.id, { action: 'accept', content: { name: 'Ada' } });
    });
    const request = seen.find((m) => m.method === 'elicitation/create');
    expect(request).toBeDefined();
    expect(((request!.params as Record<string, unknown>)._meta as Record<string, unknown>)[kRelated]).toEqual({ taskId: asked.taskId });
    expect(result.result).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada' }] });

    const progress = task(await c.call('tools/call', { name: 'sleepy', arguments: { ms: 300 }, task: {}, _meta: { progressToken: 'tok' } }));
    const notes: Array<Record<string, unknown>> = [];
    await c.stream('tasks/result', { taskId: progress.taskId }, (m) => notes.push(m));
    const steps = notes.filter((m) => m.method === 'notifications/progress').map((m) => m.params as Record<string, unknown>);
    expect(steps.length).toBeGreaterThan(0);
    expect(steps.every((p) => p.progressToken === 'tok')).toBe(true);
  });
});

describe('2025-11-25 tasks/list (authenticated callers only)', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({ tools: new URL('../fixtures/task-tools-auth.mjs', import.meta.url) });
  });
  afterAll(async () => { await s?.close(); });

  it('lists only the caller session\'s tasks, paginated', async () => {
    const a = new Session(s.address.url, { authorization: 'Bearer alice' });
    const init = await a.open();
    expect(((init.capabilities as Record<string, unknown>).tasks as Record<string, unknown>).list).toEqual({});
    const b = new Session(s.address.url, { authorization: 'Bearer bob' });
    await b.open();
    const mine = [];
    for (let i = 0; i < 3; i++) mine.push(String(task(await a.call('tools/call', { name: 'sleepy', arguments: { ms: 1 }, task: {} })).taskId));
    await b.call('tools/call', { name: 'sleepy', arguments: { ms: 1 }, task: {} });
    const listed = await a.call('tasks/list');
    const ids = (listed.result!.tasks as Array<Record<string, unknown>>).map((t) => t.taskId);
    expect(new Set(ids)).toEqual(new Set(mine));
    expect((await a.call('tasks/list', { cursor: 'not-a-cursor' })).error?.code).toBe(-32602);
  });
});
