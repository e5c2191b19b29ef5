/** The client's tasks API and `sluice call --task` against a real Sluice server (test/fixtures/task-tools.mjs), both eras. */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CancelledError, Client, HttpClientTransport, RpcError } from '../../src/client/index.js';
import { recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { kBin, runCli } from '../cli/helpers.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
let s: TestServer;
const clients: Client[] = [];
beforeAll(async () => { s = await startServer({ tools: kTools }); });
afterAll(async () => {
  await Promise.all(clients.splice(0).map((c) => c.close()));
  await s.close();
});

function client(era: 'modern' | 'legacy'): Client {
  const c = new Client(new HttpClientTransport({ url: s.address.url }), { era, capabilities: { elicitation: {} } });
  clients.push(c);
  return c;
}

const text = (r: { content: unknown[] }) => (r.content[0] as { text: string }).text;

describe.each(['modern', 'legacy'] as const)('%s era against a Sluice server', (era) => {
  it('a required-task tool runs as a task; statuses end in completed', async () => {
    const statuses: string[] = [];
    const handle = await client(era).callTool('must_task', {}, { task: true, onStatus: (t) => statuses.push(t.status) });
    expect(handle.taskId).toEqual(expect.any(String));
    expect(text(await handle.result())).toBe('done as a task');
    expect(statuses[0]).toBe('working');
    expect(statuses.at(-1)).toBe('completed');
  });

  it('input: the elicitation reaches onInputRequired and the answer reaches the tool', async () => {
    const methods: string[] = [];
    const handle = await client(era).callTool('ask', {}, {
      task: true,
      onInputRequired: (requests) => {
        methods.push(...Object.values(requests).map((r) => r.method));
        return Object.fromEntries(Object.keys(requests).map((key) => [key, { action: 'accept', content: { name: 'Ada' } }]));
      },
    });
    expect(text(await handle.result())).toBe('Hello, Ada');
    expect(methods).toEqual(['elicitation/create']);
  });

  it('a tool error resolves with isError; a JSON-RPC error rejects with an RpcError', async () => {
    const c = client(era);
    const failed = await (await c.callTool('fails', {}, { task: true })).result();
    expect(failed).toMatchObject({ isError: true, content: [{ type: 'text', text: 'it failed' }] });
    const error = await (await c.callTool('rpc_fail', {}, { task: true })).result().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toMatchObject({ rpcCode: -32602, message: 'bad thing', data: { why: 'test' } });
  });

  it('aborting cancels the task: the tool sees the cancel; getTask reads cancelled', async () => {
    const c = client(era);
    const record = recordPath();
    const ac = new AbortController();
    const handle = await c.callTool('sleepy', { ms: 10_000, record }, { task: true, signal: ac.signal });
    const result = handle.result();
    await until(() => recorded(record).length > 0, 10_000, 'the tool to start');
    ac.abort('stop');
    await expect(result).rejects.toBeInstanceOf(CancelledError);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
    await until(async () => (await c.getTask(handle.taskId!)).status === 'cancelled', 10_000, 'cancelled');
    // tasks/list is for authenticated callers only (anonymous tasks are bound to no one a list could name).
    if (era === 'legacy') await expect(c.listTasks()).rejects.toMatchObject({ rpcCode: -32601 });
  });

  it('a forbidden tool answers synchronously when its server ignores the task or refuses it', async () => {
    const c = client(era);
    const outcome = await c.callTool('never_task', {}, { task: true }).then((h) => h.result(), (e: unknown) => e);
    // 2026-07-28: the server decides (a plain answer); 2025-11-25: a task request for a forbidden tool is -32601 (SHOULD).
    if (outcome instanceof RpcError) expect(outcome.rpcCode).toBe(-32601);
    else expect(text(outcome as { content: unknown[] })).toBe('plain');
  });

  it('sluice call --task prints the statuses and the result; Ctrl-C cancels (exit 130)', async () => {
    const run = await runCli(['call', s.address.url, 'must_task', '--task', '--era', era]);
    expect(run).toMatchObject({ code: 0, stdout: 'done as a task\n' });
    expect(run.stderr).toMatch(/^\d\d:\d\d:\d\d\.\d{3} working\n/);
    expect(run.stderr).toMatch(/ completed\n$/);

    const record = recordPath();
    const child = spawn(process.execPath, [kBin, 'call', s.address.url, 'sleepy', JSON.stringify({ ms: 10_000, record }), '--task', '--era', era], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (chunk: Buffer) => { stderr += chunk.toString(); });
    child.stdout.resume();
    const closed = once(child, 'close');
    await until(() => /sluice: task \S+/.test(stderr) && recorded(record).length > 0, 10_000, 'the task to run');
    child.kill('SIGINT');
    const [code] = (await closed) as [number | null];
    expect(code).toBe(130);
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the tool to see the cancel');
  });
});
