/**
 * A client that polls tasks/get (the official SDK v1's callToolStream does, and every 2026-07-28
 * client must) sees the task's latest progress in the record: `statusMessage` in words when the
 * task has no message of its own, `_meta["sluice/progress"]` with the numbers. A finished task
 * reports none. The tool here (`sleepy`) calls ctx.progress(n) every 5 ms and the caller sends no
 * progress token.
 */
import { request } from 'node:http';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { initialize, kAccept, modernMeta, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';
const kProgress = 'sluice/progress';

let next = 1;
function parse(body: string): { result?: Record<string, unknown>; error?: { code: number; message: string } } {
  const text = body.trim();
  return JSON.parse(text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).pop()!.slice(5)) as never;
}

async function modern(url: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } });
  const name = typeof params.name === 'string' ? params.name : String(params.taskId);
  const res = await post(url, { jsonrpc: '2.0', id: next++, method, params: { ...params, _meta: meta } }, {
    'mcp-protocol-version': '2026-07-28', 'mcp-method': method, 'mcp-name': name,
  });
  const rpc = parse(res.body);
  if (rpc.result === undefined) throw new Error(`${method}: ${res.status} ${res.body}`);
  return rpc.result;
}

async function legacy(url: string, session: string, method: string, params: Record<string, unknown>): Promise<Record<string, unknown>> {
  const res = await post(url, { jsonrpc: '2.0', id: next++, method, params }, { 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session });
  const rpc = parse(res.body);
  if (rpc.result === undefined) throw new Error(`${method}: ${res.status} ${res.body}`);
  return rpc.result;
}

/** Polls `get` (at the task's interval) until `done` holds for a record or the task ends; returns every record seen. */
async function poll(get: () => Promise<Record<string, unknown>>, done: (r: Record<string, unknown>) => boolean): Promise<Array<Record<string, unknown>>> {
  const seen: Array<Record<string, unknown>> = [];
  for (let i = 0; i < 100; i++) {
    const record = await get();
    seen.push(record);
    if (done(record) || ['completed', 'failed', 'cancelled'].includes(String(record.status))) return seen;
    await new Promise((r) => setTimeout(r, 100));
  }
  return seen;
}

const progressOf = (r: Record<string, unknown>) => (r._meta as Record<string, { progress: number } | undefined> | undefined)?.[kProgress];

describe('tasks/get carries the latest progress', () => {
  let s: TestServer;
  beforeAll(async () => { s = await startServer({ tools: kTools }); });
  afterAll(async () => { await s?.close(); });

  it('2026-07-28: a working task shows its progress; the completed one shows none', async () => {
    const created = await modern(s.address.url, 'tools/call', { name: 'sleepy', arguments: { ms: 1500 } });
    expect(created.resultType).toBe('task');
    const taskId = String(created.taskId);
    const seen = await poll(() => modern(s.address.url, 'tasks/get', { taskId }), (r) => (progressOf(r)?.progress ?? 0) >= 2);
    const last = seen.at(-1)!;
    expect(last.status).toBe('working');
    const progress = progressOf(last)!.progress;
    expect(progress).toBeGreaterThanOrEqual(2);
    expect(last.statusMessage).toMatch(/^progress \d+$/);
    // The numbers only grow between polls.
    const later = await modern(s.address.url, 'tasks/get', { taskId });
    if (later.status === 'working') expect(progressOf(later)!.progress).toBeGreaterThanOrEqual(progress);
    const final = (await poll(() => modern(s.address.url, 'tasks/get', { taskId }), () => false)).at(-1)!;
    expect(final.status).toBe('completed');
    expect(progressOf(final)).toBeUndefined();
    expect(final.statusMessage).toBeUndefined();
  }, 20_000);

  it('2025-11-25: tasks/get of a task created without a progress token shows its progress', async () => {
    const session = await initialize(s.address.url);
    const created = await legacy(s.address.url, session, 'tools/call', { name: 'sleepy', arguments: { ms: 1500 }, task: { ttl: 60_000 } });
    const taskId = String((created.task as Record<string, unknown>).taskId);
    const seen = await poll(() => legacy(s.address.url, session, 'tasks/get', { taskId }), (r) => (progressOf(r)?.progress ?? 0) >= 2);
    const last = seen.at(-1)!;
    expect(last.status).toBe('working');
    expect(progressOf(last)!.progress).toBeGreaterThanOrEqual(2);
    expect(last.statusMessage).toMatch(/^progress \d+$/);
  }, 20_000);

  it('official SDK v1 callToolStream (its tasks/get polling path) sees the progress in taskStatus', async () => {
    const client = new Client({ name: 'progress-v1', version: '1.0.0' }, { capabilities: {} });
    await client.connect(new StreamableHTTPClientTransport(new URL(s.address.url)));
    try {
      await client.listTools();
      const messages: string[] = [];
      let result: unknown;
      for await (const message of client.experimental.tasks.callToolStream({ name: 'sleepy', arguments: { ms: 1500 } }, undefined, { task: { ttl: 60_000 } })) {
        if (message.type === 'taskStatus' && message.task.status === 'working' && message.task.statusMessage !== undefined) messages.push(message.task.statusMessage);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'slept 1500' }] });
      expect(messages.length).toBeGreaterThan(0);
      expect(messages.every((m) => /^progress \d+$/.test(m))).toBe(true);
    } finally {
      await client.close();
    }
  }, 20_000);

  it('2026-07-28: progress alone sends no notifications/tasks on a listen stream (the task shown there did not change)', async () => {
    const url = s.address.url;
    const taskId = String((await modern(url, 'tools/call', { name: 'sleepy', arguments: { ms: 600 } })).taskId);
    const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } });
    const body = JSON.stringify({ jsonrpc: '2.0', id: 'listen-p', method: 'subscriptions/listen', params: { notifications: { taskIds: [taskId] }, _meta: meta } });
    const statuses: string[] = [];
    const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: kAccept, 'content-length': Buffer.byteLength(body), 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'subscriptions/listen' } }, (res) => {
      let buffer = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => {
        buffer += chunk;
        let end: number;
        while ((end = buffer.indexOf('\n\n')) >= 0) {
          const data = buffer.slice(0, end).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
          buffer = buffer.slice(end + 2);
          const message = data === '' ? undefined : JSON.parse(data) as { method?: string; params?: { status?: string } };
          if (message?.method === 'notifications/tasks') statuses.push(String(message.params?.status));
        }
      });
    });
    req.end(body);
    try {
      await until(() => statuses.includes('completed'), 10_000, 'the completed notification');
      // The tool reported progress every 5 ms for 600 ms; the stream saw only the status change.
      expect(statuses).toEqual(['completed']);
    } finally {
      req.destroy();
    }
  }, 20_000);
});
