/**
 * The official tasks client, `@modelcontextprotocol/ext-tasks`, against a real server in the
 * 2026-07-28 era: it validates every task response with its own schemas (a completed task's
 * `result` needs `resultType: "complete"`, like any 2026-07-28 result), drives polling, answers
 * input requests with tasks/update and cancels with tasks/cancel.
 *
 * The package's SDK adapter needs the host to carry 2026-07-28 task traffic itself (`rawDispatch`):
 * here that is plain fetch with the headers the 2026-07-28 HTTP transport requires.
 */
import { Client, StreamableHTTPClientTransport } from '@modelcontextprotocol/client';
import { createTaskSessionFromClient, resultFromTaskOutcome } from '@modelcontextprotocol/ext-tasks/client';
import type { JsonRpcResponse, RawClientDispatch, TaskEnabledSession, TaskExecutionEvent } from '@modelcontextprotocol/ext-tasks/client';
import type { JsonValue } from '@modelcontextprotocol/ext-tasks/core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kModern = '2026-07-28';
const kTimeout = 20_000;
const kClientInfo = { name: 'sluice-ext-tasks-test', version: '1.0.0' };
const kClientCapabilities = { elicitation: {} };

interface Wire { method: string; result?: Record<string, unknown> | undefined; error?: unknown }

let nextId = 1;

/**
 * rawDispatch over fetch: one POST per request (the package hands over method and params; the
 * JSON-RPC envelope is the host's), JSON or SSE answer, every exchange recorded.
 */
function rawDispatch(url: string, log: Wire[]): RawClientDispatch {
  return async (request: JsonValue, options): Promise<JsonRpcResponse> => {
    const message = { jsonrpc: '2.0', id: nextId++, ...(request as object) } as { method: string; params?: { name?: string; taskId?: string } };
    const name = message.params?.name ?? message.params?.taskId;
    const res = await fetch(url, {
      method: 'POST',
      headers: {
        'content-type': 'application/json',
        accept: 'application/json, text/event-stream',
        'mcp-protocol-version': kModern,
        'mcp-method': message.method,
        ...(name !== undefined ? { 'mcp-name': name } : {}),
      },
      body: JSON.stringify(message),
      ...(options?.signal !== undefined ? { signal: options.signal } : {}),
    });
    const text = await res.text();
    // An SSE answer: the last data line is the response (notifications come before it).
    const body = text.trimStart().startsWith('{') ? text : text.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).pop() ?? '';
    const rpc = JSON.parse(body) as { result?: Record<string, unknown>; error?: { code: number; message: string; data?: JsonValue } };
    log.push({ method: message.method, result: rpc.result, error: rpc.error });
    if (rpc.error !== undefined) return { kind: 'error', error: rpc.error };
    return { kind: 'result', result: rpc.result as JsonValue };
  };
}

describe('@modelcontextprotocol/ext-tasks 0.2.2 client, 2026-07-28', () => {
  let s: TestServer;
  let client: Client;
  let session: TaskEnabledSession;
  let inputsAsked = 0;
  const wire: Wire[] = [];

  beforeAll(async () => {
    s = await startServer({ tools: kTools });
    client = new Client(kClientInfo, { capabilities: kClientCapabilities, versionNegotiation: { mode: { pin: kModern } } });
    await client.connect(new StreamableHTTPClientTransport(new URL(s.address.url)));
    session = createTaskSessionFromClient(client, {
      endpointId: 'sluice-test',
      rawDispatch: rawDispatch(s.address.url, wire),
      v2RequestFraming: { protocolVersion: kModern, clientInfo: kClientInfo, clientCapabilities: kClientCapabilities },
      onInputRequest: async (request) => {
        inputsAsked++;
        if (request.kind !== 'elicitation') throw new Error(`unexpected input request ${request.kind}`);
        return { action: 'accept', content: { name: 'Ada', c: 'teal' } } as never;
      },
    });
  }, kTimeout);

  afterAll(async () => {
    await session?.close();
    await client?.close();
    await s?.close();
  });

  it('sees the server offer the 2026-07-28 tasks extension', () => {
    expect(client.getProtocolEra()).toBe('modern');
    expect(session.capabilities).toMatchObject({ execution: true, cancellation: true, inputResponses: true });
  });

  it('creates a task, polls it to completed and reads its result', async () => {
    const execution = await session.callTool('sleepy', { ms: 300 });
    expect(execution.kind).toBe('task');
    const events: Array<TaskExecutionEvent<unknown>> = [];
    const { outcome } = await execution.settle({ onEvent: (e) => { events.push(e); } });
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    const result = resultFromTaskOutcome(outcome) as { content: unknown; resultType?: string };
    expect(result.content).toEqual([{ type: 'text', text: 'slept 300' }]);
    expect(result.resultType).toBe('complete');
    // It polled with tasks/get, and the completed record inlined the result with its resultType.
    const completed = wire.filter((w) => w.method === 'tasks/get' && w.result?.status === 'completed');
    expect(completed.length).toBeGreaterThan(0);
    expect(completed[0]!.result!.result).toMatchObject({ resultType: 'complete', content: [{ type: 'text', text: 'slept 300' }] });
  }, kTimeout);

  it('a tool error completes the task with isError; a JSON-RPC error fails it', async () => {
    const execution = await session.callTool('fails', {});
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('completed');
    expect(resultFromTaskOutcome(outcome)).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it failed' }] });
    // A JSON-RPC error fails the task, and the client gets the error's code and message.
    const erroring = await session.callTool('rpc_fail', {});
    const failed = (await erroring.settle()).outcome;
    expect(failed.status).toBe('failed');
    expect(failed.status === 'failed' ? { code: failed.error.code, message: failed.error.message } : undefined).toEqual({ code: -32602, message: 'bad thing' });
  }, kTimeout);

  it('cancels a running task: the tool sees the cancel and the outcome is cancelled', async () => {
    const record = recordPath();
    const execution = await session.callTool('sleepy', { ms: 10_000, record });
    expect(execution.kind).toBe('task');
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    await execution.cancel();
    const { outcome } = await execution.settle();
    expect(outcome.status).toBe('cancelled');
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
    expect(wire.some((w) => w.method === 'tasks/cancel' && w.result?.resultType === 'complete')).toBe(true);
  }, kTimeout);

  it('answers an input_required task through tasks/update and reads the final result', async () => {
    const before = inputsAsked;
    const execution = await session.callTool('ask', {});
    expect(execution.kind).toBe('task');
    const { outcome } = await execution.settle();
    expect(outcome.status, JSON.stringify(outcome)).toBe('completed');
    expect(resultFromTaskOutcome(outcome)).toMatchObject({ content: [{ type: 'text', text: 'Hello, Ada' }] });
    expect(inputsAsked).toBe(before + 1);
    expect(wire.some((w) => w.method === 'tasks/get' && w.result?.status === 'input_required')).toBe(true);
    expect(wire.some((w) => w.method === 'tasks/update' && w.result?.resultType === 'complete')).toBe(true);
  }, kTimeout);
});
