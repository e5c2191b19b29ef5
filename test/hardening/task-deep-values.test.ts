/**
 * Round 3, finding 1: a value nested deeper than a thread hop can carry. Structured clone
 * serialises a 2 000-level value but the receiving thread cannot deserialise it ('messageerror'),
 * so a call that waits for the far side's answer waited forever and kept its in-flight row. Each
 * path where a client's value enters and then crosses a port is tried here, against a real server
 * with two HTTP workers and a pool thread: 2026-07-28 tasks/update, a 2025-11-25 client's answer
 * on the tasks/result stream, and a pool tool's arguments. Each must be answered (a clear -32602,
 * or the task going on with the refusal as its answer), leave nothing in flight, and the server
 * must serve the next client.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { post } from '../helpers/http.js';
import { kAccept, modernMeta, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';

/** `{"a":{"a":…}}` `depth` levels deep, as JSON text (built as text: no deep object on the test's side). */
function deepJson(depth: number): string {
  return `${'{"a":'.repeat(depth)}1${'}'.repeat(depth)}`;
}

interface Rpc { status: number; result?: Record<string, unknown>; error?: { code: number; message: string } }

function parse(status: number, body: string): Rpc {
  const text = body.trim();
  const json = text.startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).pop() ?? '{}';
  return { status, ...(JSON.parse(json) as Omit<Rpc, 'status'>) };
}

let next = 1;
/** A 2026-07-28 request; `raw` replaces params' JSON text for `{{DEEP}}` with a deep value. */
async function modern(url: string, method: string, params: Record<string, unknown>, deep?: string, optIn = true): Promise<Rpc> {
  const meta = modernMeta({ 'io.modelcontextprotocol/clientCapabilities': optIn ? { elicitation: {}, extensions: { [kExt]: {} } } : {} });
  const name = typeof params.name === 'string' ? params.name : typeof params.taskId === 'string' ? params.taskId : undefined;
  let body = JSON.stringify({ jsonrpc: '2.0', id: next++, method, params: { ...params, _meta: meta } });
  if (deep !== undefined) body = body.replace('"{{DEEP}}"', deep);
  const res = await post(url, body, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name !== undefined ? { 'mcp-name': name } : {}) });
  return parse(res.status, res.body);
}

async function inFlight(url: string): Promise<number> {
  const res = await fetch(new URL('/metrics', url));
  const line = (await res.text()).split('\n').find((l) => l.startsWith('sluice_requests_in_flight '));
  return Number(line?.split(' ')[1]);
}

/** Answers within `ms` or the test fails (the wedge was an answer that never came). */
function within<T>(ms: number, what: string, promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: no answer within ${ms} ms`)), ms); }),
  ]);
}

async function inputRequired(url: string, taskId: string): Promise<string> {
  for (let i = 0; i < 100; i++) {
    const task = (await modern(url, 'tasks/get', { taskId })).result!;
    if (task.status === 'input_required') return Object.keys(task.inputRequests as object)[0];
    await new Promise((r) => setTimeout(r, 60));
  }
  throw new Error(`task ${taskId} never asked for input`);
}

describe('deep values that cannot cross a thread are refused where they enter', () => {
  let s: TestServer;
  let url: string;
  beforeAll(async () => {
    s = await startServer({ tools: kTools, workers: 2, poolThreads: 1, metrics: true });
    url = s.address.url;
  });
  afterAll(async () => { await s?.close(); });

  it('2026-07-28 tasks/update with inputResponses 3 000 and 12 000 levels deep: -32602 at once, nothing in flight, the task still answerable', async () => {
    const taskId = String((await modern(url, 'tools/call', { name: 'ask', arguments: {} })).result!.taskId);
    const key = await inputRequired(url, taskId);
    for (const depth of [3_000, 12_000]) {
      // Under the key the task asked for, and under a key it never asked for (which the store ignores, but it still crossed).
      for (const where of [key, 'unasked']) {
        const refused = await within(5_000, `tasks/update ${depth} deep`, modern(url, 'tasks/update', { taskId, inputResponses: { [where]: '{{DEEP}}' } }, deepJson(depth)));
        expect(refused.error?.code).toBe(-32602);
        expect(refused.error?.message).toMatch(/deep/);
      }
    }
    expect(await inFlight(url)).toBe(1); // the task's own row: the tool still waits for its answer
    const ack = await modern(url, 'tasks/update', { taskId, inputResponses: { [key]: { action: 'accept', content: { name: 'Ada' } } } });
    expect(ack.result).toMatchObject({ resultType: 'complete' });
    for (let i = 0; i < 100; i++) {
      const task = (await modern(url, 'tasks/get', { taskId })).result!;
      if (task.status === 'completed') break;
      await new Promise((r) => setTimeout(r, 60));
    }
    expect((await modern(url, 'tasks/get', { taskId })).result).toMatchObject({ status: 'completed' });
    const deadline = Date.now() + 5_000;
    while (await inFlight(url) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await inFlight(url)).toBe(0);
  });

  it('2026-07-28 tasks/update just under the bound is served; one a little over it is -32602', async () => {
    const taskId = String((await modern(url, 'tools/call', { name: 'ask', arguments: {} })).result!.taskId);
    const key = await inputRequired(url, taskId);
    const over = await modern(url, 'tasks/update', { taskId, inputResponses: { other: '{{DEEP}}' } }, deepJson(70));
    expect(over.error?.code).toBe(-32602);
    const under = await modern(url, 'tasks/update', { taskId, inputResponses: { other: '{{DEEP}}' } }, deepJson(50));
    expect(under.result).toMatchObject({ resultType: 'complete' });
    await modern(url, 'tasks/cancel', { taskId });
    void key;
  });

  it('a pool tool called with arguments 12 000 levels deep is answered (-32602) and the pool serves on', async () => {
    const refused = await within(5_000, 'pool tool with deep arguments', modern(url, 'tools/call', { name: 'pool_spin', arguments: { ms: 10, deep: '{{DEEP}}' } }, deepJson(12_000), false));
    expect(refused.error?.code).toBe(-32602);
    const served = await within(10_000, 'pool tool after', modern(url, 'tools/call', { name: 'pool_spin', arguments: { ms: 10 } }, undefined, false));
    expect(served.status).toBe(200);
    expect(JSON.stringify(served.result)).toMatch(/finished|taskId/);
  });

  it('2025-11-25: a client answer 5 000 levels deep on the tasks/result stream becomes a refused answer; the task ends and tasks/result is answered', async () => {
    const init = await post(url, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } }, { 'mcp-protocol-version': '2025-11-25' });
    const session = String(init.headers['mcp-session-id']);
    const h = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    await post(url, { jsonrpc: '2.0', method: 'notifications/initialized' }, h);
    const created = parse(200, (await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {}, task: {} } }, h)).body);
    const taskId = String((created.result!.task as Record<string, unknown>).taskId);
    const body = JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tasks/result', params: { taskId } });
    const answered: Promise<Record<string, unknown>> = new Promise((resolve, reject) => {
      const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: kAccept, 'content-length': Buffer.byteLength(body), ...h } }, (res) => {
        let buffer = '';
        res.setEncoding('utf8');
        res.on('data', (chunk: string) => {
          buffer += chunk;
          let end: number;
          while ((end = buffer.indexOf('\n\n')) >= 0) {
            const data = buffer.slice(0, end).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('');
            buffer = buffer.slice(end + 2);
            if (data === '') continue;
            const message = JSON.parse(data) as Record<string, unknown>;
            if (message.method === 'elicitation/create') {
              const answer = `{"jsonrpc":"2.0","id":${JSON.stringify(message.id)},"result":{"action":"accept","content":{"name":${deepJson(5_000)}}}}`;
              void post(url, answer, h);
            } else if (message.id === 2) resolve(message);
          }
        });
        res.on('end', () => { if (buffer.trim().startsWith('{')) resolve(JSON.parse(buffer) as Record<string, unknown>); });
      });
      req.on('error', reject);
      req.end(body);
    });
    const outcome = await within(8_000, 'tasks/result after a deep answer', answered);
    // The tool got the refusal in place of the deep answer (its name is then undefined) and ended.
    expect((outcome.result as { content: Array<{ text: string }> }).content[0].text).toBe('Hello, undefined');
    const deadline = Date.now() + 5_000;
    while (await inFlight(url) !== 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
    expect(await inFlight(url)).toBe(0);
  });
});
