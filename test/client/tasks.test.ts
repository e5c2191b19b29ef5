/** The client's tasks API against a scripted server that speaks both dialects (test/client/task-server.ts). */
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { CancelledError, Client, HttpClientTransport, RpcError, SluiceError, StdioClientTransport } from '../../src/client/index.js';
import type { InputRequest, TaskHandle, TaskInfo } from '../../src/client/index.js';
import { recordPath, until } from '../helpers/server.js';
import { startScriptedServer } from './task-server.js';
import type { ScriptedServer } from './task-server.js';

let server: ScriptedServer;
const clients: Client[] = [];
beforeEach(async () => { server = await startScriptedServer(); });
afterEach(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await server.close();
});

function client(era: 'modern' | 'legacy', capabilities: Record<string, unknown> = {}): Client {
  const c = new Client(new HttpClientTransport({ url: server.url }), { era, capabilities });
  clients.push(c);
  return c;
}

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

const sent = (method: string) => server.received.filter((r) => r.method === method);

describe('2026-07-28 tasks extension', () => {
  it('a task goes working → input_required → completed: polls tasks/get, answers with tasks/update, reports each status', async () => {
    const c = client('modern');
    const statuses: string[] = [];
    const asked: Record<string, InputRequest>[] = [];
    const handle = await c.callTool('ask', { file: 'a.txt' }, {
      task: true,
      onStatus: (t) => statuses.push(`${t.status}${t.statusMessage === undefined ? '' : `: ${t.statusMessage}`}`),
      onInputRequired: (requests) => {
        asked.push(requests);
        return { confirm: { action: 'accept', content: { name: 'a.txt' } } };
      },
    });
    expect(handle.taskId).toMatch(/^t\d+-ask$/);
    expect(handle.status).toBe('working');
    const result = await handle.result();
    expect(result.content).toEqual([{ type: 'text', text: 'deleted a.txt' }]);
    expect(await handle.result()).toBe(result); // memoised
    expect(statuses).toEqual(['working', 'input_required: waiting for a confirmation', 'working: deleting', 'completed']);
    expect(asked).toEqual([{ confirm: { method: 'elicitation/create', params: expect.objectContaining({ message: 'Which file?' }) } }]);
    expect(handle.status).toBe('completed');
    // The wire: the opt-in per request, Mcp-Method and Mcp-Name on every tasks/* request, no legacy task field.
    const call = sent('tools/call')[0]!;
    expect(call.params?.task).toBeUndefined();
    expect(call.params?._meta).toMatchObject({ 'io.modelcontextprotocol/clientCapabilities': { extensions: { 'io.modelcontextprotocol/tasks': {} } } });
    for (const r of [...sent('tasks/get'), ...sent('tasks/update')]) {
      expect(r.headers['mcp-method']).toBe(r.method);
      expect(r.headers['mcp-name']).toBe(handle.taskId);
    }
    expect(sent('tasks/update').map((r) => r.params?.inputResponses)).toEqual([{ confirm: { action: 'accept', content: { name: 'a.txt' } } }]);
  });

  it('a failed task rejects with the task\'s error as an RpcError', async () => {
    const handle = await client('modern').callTool('fail', {}, { task: true });
    const error = await rejection(handle.result());
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ rpcCode: -32050, message: 'the job broke', data: { why: 'scripted' } });
    expect(handle.status).toBe('failed');
  });

  it('aborting sends tasks/cancel and rejects at once with a CancelledError; a timeout does the same', async () => {
    const c = client('modern');
    const ac = new AbortController();
    const handle = await c.callTool('slow', {}, { task: true, signal: ac.signal });
    const result = handle.result();
    await until(() => sent('tasks/get').length >= 2, 5_000, 'polling');
    ac.abort('user pressed stop');
    const error = await rejection(result);
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('user pressed stop');
    await until(() => sent('tasks/cancel').length === 1, 5_000, 'the cancel');
    expect(sent('tasks/cancel')[0]!.headers['mcp-name']).toBe(handle.taskId);
    expect(server.tasks.get(handle.taskId!)!.status).toBe('cancelled');

    const timed = await c.callTool('slow', {}, { task: true, timeoutMs: 100 });
    expect(await rejection(timed.result())).toMatchObject({ reason: 'timed out after 100 ms' });
    await until(() => sent('tasks/cancel').length === 2, 5_000, 'the second cancel');
    // Cancelled by someone else: the handle rejects with a CancelledError carrying the status message.
    const other = await c.callTool('slow', {}, { task: true });
    await c.cancelTask(other.taskId!);
    expect(await rejection(other.result())).toMatchObject({ code: 'request_cancelled', reason: 'cancelled by the client' });
    await c.cancelTask(other.taskId!); // 2026-07-28 acks a cancel on a terminal task
  });

  it('a synchronous answer: a handle without a task that resolves at once', async () => {
    const handle: TaskHandle = await client('modern').callTool('sync', {}, { task: true });
    expect(handle.taskId).toBeUndefined();
    expect(handle.status).toBe('completed');
    expect((await handle.result()).content).toEqual([{ type: 'text', text: 'sync sync' }]);
  });

  it('input nobody answers: the task is cancelled and result() rejects with missing_client_capability', async () => {
    const handle = await client('modern').callTool('ask', {}, { task: true });
    const error = await rejection(handle.result());
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toMatchObject({ code: 'missing_client_capability' });
    expect((error as Error).message).toContain('elicitation/create');
    await until(() => server.tasks.get(handle.taskId!)!.status === 'cancelled', 5_000, 'the cancel');
  });

  it('a callback that throws cancels the task and rejects with its error', async () => {
    const handle = await client('modern').callTool('ask', {}, { task: true, onInputRequired: () => { throw new Error('no UI'); } });
    expect(await rejection(handle.result())).toMatchObject({ message: 'no UI' });
    await until(() => server.tasks.get(handle.taskId!)!.status === 'cancelled', 5_000, 'the cancel');
  });

  it('getTask, updateTask, cancelTask by id; listTasks is legacy only; tasks/get without a task is -32602', async () => {
    const c = client('modern');
    const handle = await c.callTool('ask', {}, { task: true });
    let task: TaskInfo = await c.getTask(handle.taskId!);
    expect(task).toMatchObject({ taskId: handle.taskId, status: 'working', ttlMs: 60_000, pollIntervalMs: 20 });
    task = await c.getTask(handle.taskId!);
    expect(task.status).toBe('input_required');
    expect(Object.keys(task.inputRequests ?? {})).toEqual(['confirm']);
    await c.updateTask(handle.taskId!, { confirm: { action: 'accept', content: { name: 'b' } } });
    expect(await c.getTask(handle.taskId!)).toMatchObject({ status: 'working', statusMessage: 'deleting' });
    task = await c.getTask(handle.taskId!);
    expect(task).toMatchObject({ status: 'completed', result: { content: [{ type: 'text', text: 'deleted b' }] } });
    await expect(c.listTasks()).rejects.toMatchObject({ rpcCode: -32601 });
    await expect(c.getTask('nope')).rejects.toMatchObject({ rpcCode: -32602 });
  });
});

describe('2025-11-25 experimental tasks', () => {
  it('a task that asks for input: tasks/result carries the elicitation, onInputRequired answers it; status from tasks/get', async () => {
    const c = client('legacy', { elicitation: {} });
    const statuses: string[] = [];
    const handle = await c.callTool('ask', {}, {
      task: true,
      ttlMs: 5_000,
      onStatus: (t) => statuses.push(t.status),
      onInputRequired: (requests, task) => {
        const [key, request] = Object.entries(requests)[0]!;
        expect(request.method).toBe('elicitation/create');
        expect(task?.status).toBe('input_required');
        return { [key]: { action: 'accept', content: { name: 'c.txt' } } };
      },
    });
    expect(sent('tools/call')[0]!.params?.task).toEqual({ ttl: 5_000 });
    expect(handle.task).toMatchObject({ ttl: 60_000, pollInterval: 20 });
    expect((await handle.result()).content).toEqual([{ type: 'text', text: 'deleted c.txt' }]);
    expect(server.received.find((r) => r.response !== undefined)?.response).toMatchObject({ id: `elicit-${handle.taskId}`, result: { action: 'accept' } });
    expect(statuses[0]).toBe('working');
    expect(statuses.at(-1)).toBe('completed');
    expect(handle.status).toBe('completed');
  });

  it('an answer JSON cannot carry (a BigInt) goes back as a -32603 error, not nowhere (HTTP)', async () => {
    const c = client('legacy', { elicitation: {} });
    const handle = await c.callTool('ask', {}, {
      task: true,
      onInputRequired: (requests) => ({ [Object.keys(requests)[0]!]: { action: 'accept', content: { name: 1n } } }),
    });
    // The scripted server finishes the task with whatever it was answered.
    await handle.result();
    expect(server.received.filter((r) => r.response !== undefined).map((r) => r.response)).toEqual([
      expect.objectContaining({ id: `elicit-${handle.taskId}`, error: expect.objectContaining({ code: -32603, message: expect.stringContaining('BigInt') }) }),
    ]);
  });

  it('a failed task rejects with the JSON-RPC error tasks/result returns', async () => {
    const handle = await client('legacy').callTool('fail', {}, { task: true });
    expect(await rejection(handle.result())).toMatchObject({ rpcCode: -32050, message: 'the job broke' });
    expect(handle.status).toBe('failed');
  });

  it('aborting sends tasks/cancel; a cancel on a terminal task is -32602; listTasks lists the session\'s tasks', async () => {
    const c = client('legacy');
    const ac = new AbortController();
    const handle = await c.callTool('slow', {}, { task: true, signal: ac.signal, onStatus: () => {} });
    const result = handle.result();
    await until(() => sent('tasks/result').length === 1, 5_000, 'tasks/result');
    ac.abort('enough');
    expect(await rejection(result)).toMatchObject({ code: 'request_cancelled', reason: 'enough' });
    await until(() => server.tasks.get(handle.taskId!)!.status === 'cancelled', 5_000, 'the cancel');
    await expect(c.cancelTask(handle.taskId!)).rejects.toMatchObject({ rpcCode: -32602 });
    const other = await c.callTool('slow', {}, { task: true });
    const listed = await c.listTasks();
    expect(listed.tasks.map((t) => [t.taskId, t.status])).toEqual([[handle.taskId, 'cancelled'], [other.taskId, 'working']]);
    // Cancelled by another party while tasks/result waits: a CancelledError too.
    const waiting = other.result();
    await until(() => sent('tasks/result').length === 2, 5_000, 'tasks/result');
    await other.cancel();
    expect(await rejection(waiting)).toBeInstanceOf(CancelledError);
  });

  it('a server that ignores the task field answers synchronously', async () => {
    const handle = await client('legacy').callTool('sync', {}, { task: true });
    expect(handle.taskId).toBeUndefined();
    expect((await handle.result()).content).toEqual([{ type: 'text', text: 'sync sync' }]);
  });
});

describe('2025-11-25 tasks over stdio', () => {
  it('a server request with related-task _meta goes to that task\'s onInputRequired; an unrelated one is declined', async () => {
    const log = recordPath();
    const script = fileURLToPath(new URL('./task-stdio-server.mjs', import.meta.url));
    const c = new Client(new StdioClientTransport({ command: process.execPath, args: [script, log] }), { era: 'legacy', capabilities: { elicitation: {} } });
    clients.push(c);
    const handle = await c.callTool('ask', {}, { task: true, onInputRequired: (requests) => ({ e1: { action: 'accept', content: { name: String(Object.keys(requests)) } } }) });
    expect(handle.taskId).toBe('stdio-task-1');
    expect((await handle.result()).content).toEqual([{ type: 'text', text: 'hello e1' }]);
    expect(handle.status).toBe('completed');
    const replies = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((m) => m.method === undefined);
    expect(replies).toContainEqual({ jsonrpc: '2.0', id: 'other', error: { code: -32601, message: 'Method not found' } });
    expect(replies).toContainEqual({ jsonrpc: '2.0', id: 'e1', result: { action: 'accept', content: { name: 'e1' } } });
  });

  it('an answer JSON cannot carry (a BigInt) goes to the server as a -32603 error, not nowhere', async () => {
    const log = recordPath();
    const script = fileURLToPath(new URL('./task-stdio-server.mjs', import.meta.url));
    const c = new Client(new StdioClientTransport({ command: process.execPath, args: [script, log] }), { era: 'legacy', capabilities: { elicitation: {} } });
    clients.push(c);
    const escaped: unknown[] = [];
    const onEscape = (error: unknown) => escaped.push(error);
    process.on('unhandledRejection', onEscape);
    try {
      const handle = await c.callTool('ask', {}, { task: true, onInputRequired: () => ({ e1: { action: 'accept', content: { name: 1n } } }) });
      // The script answers the task with what the reply carried: no result, so no name.
      expect((await handle.result()).content).toEqual([{ type: 'text', text: 'hello undefined' }]);
      const replies = readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l) as Record<string, unknown>).filter((m) => m.id === 'e1' && m.method === undefined);
      expect(replies).toHaveLength(1);
      expect(replies[0]).toMatchObject({ error: { code: -32603, message: expect.stringContaining('BigInt') } });
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(escaped).toEqual([]);
    } finally {
      process.off('unhandledRejection', onEscape);
    }
  });
});
