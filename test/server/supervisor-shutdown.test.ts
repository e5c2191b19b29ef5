// The end of the shutdown grace: requests still running are cancelled through the registry (so
// tools polling ctx.cancelled or holding ctx.signal stop cleanly and SSE streams end) before the
// connections are cut. And a tool calling process.exit() in an HTTP worker is refused instead of
// taking the process down (uWS aborts the process when a thread ends with its sockets open).
import { spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createServer, defineTool } from '../../src/index.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { post } from '../helpers/http.js';
import { initialize, kAccept, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import { adapters, itUws } from '../helpers/adapters.js';

const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kTools = new URL('../fixtures/supervisor-tools.mjs', import.meta.url);
const kGraceMs = 300;
const cleanup = cleanupAfterEach();

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms); }),
  ]);
}

/** A legacy SSE tools/call (a progress token: the tool's progress turns the response into a stream). */
async function sseCall(url: string, session: string, id: number, name: string, args: Record<string, unknown>): Promise<{ contentType: string; body: Promise<string> }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': session },
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: { progressToken: `p${id}` } } }),
  });
  // A cut stream rejects: the test expects a clean end, so it keeps the error text to show.
  return { contentType: res.headers.get('content-type') ?? '', body: res.text().catch((error: Error) => `CUT: ${error.message}`) };
}

/** The JSON-RPC messages of an SSE body. */
function events(body: string): Array<Record<string, any>> {
  return body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).filter((l) => l !== '').map((l) => JSON.parse(l) as Record<string, any>);
}

describe('the end of the shutdown grace', () => {
  it.each(adapters('HTTP worker: a legacy SSE tool still running is cancelled'))('HTTP worker (%s): a legacy SSE tool still running is cancelled with a reason; its stream ends cleanly', async (http) => {
    const ts = await startServer({ tools: kTools, http, workers: 1, shutdownGraceMs: kGraceMs });
    cleanup(() => ts.close());
    const session = await initialize(ts.address.url);
    const record = recordPath();
    const call = await sseCall(ts.address.url, session, 7, 'watch_cancel', { record });
    expect(call.contentType).toMatch(/^text\/event-stream/);
    await until(() => recorded(record).length > 0, 5_000, 'the tool to start');
    const started = Date.now();
    await within(ts.close(), kGraceMs + 3_000, 'close()');
    expect(Date.now() - started).toBeGreaterThanOrEqual(kGraceMs - 50);
    const body = await within(call.body, 2_000, 'the stream to end');
    expect(body).not.toMatch(/^CUT/);
    const messages = events(body);
    expect(messages.length).toBeGreaterThan(0); // progress came
    expect(messages.every((m) => m.method === 'notifications/progress')).toBe(true); // cancelled: no response
    expect(recorded(record).at(-1)).toBe('cancelled=true reason=server shutting down signal');
  });

  it.each(adapters('in-process: the tool sees the cancel'))('in-process (%s): the tool sees the cancel through ctx.cancelled and ctx.signal', async (http) => {
    const seen: string[] = [];
    const watch = defineTool({
      name: 'watch',
      description: 'Waits for a cancel.',
      inputSchema: { type: 'object', properties: {} },
      handler: async (_args, ctx) => {
        seen.push('started');
        await new Promise<void>((resolve) => { ctx.signal.addEventListener('abort', () => resolve(), { once: true }); });
        seen.push(`cancelled=${ctx.cancelled} reason=${ctx.reason ?? ''}`);
        return 'done';
      },
    });
    const server = createServer({ tools: [watch], port: 0, http, janitor: false, shutdownGraceMs: kGraceMs }, { log: () => {} });
    cleanup(() => server.close());
    const { url } = await server.listen();
    const session = await initialize(url);
    const answered = post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'watch', arguments: {} } }, { 'mcp-session-id': session, accept: 'application/json' });
    await until(() => seen.length > 0, 5_000, 'the tool to start');
    await within(server.close(), kGraceMs + 3_000, 'close()');
    expect(seen).toEqual(['started', 'cancelled=true reason=server shutting down']);
    // The JSON-mode POST of a cancelled request is answered 202 with no body.
    const res = await within(answered, 2_000, 'the answer');
    expect(res.status).toBe(202);
    expect(res.body).toBe('');
  });
});

describe('process.exit() in a tool', () => {
  itUws('uws HTTP worker: the call fails as a tool error, the same worker serves on; in the pool too', async () => {
    const child = spawn(process.execPath, [kBin, 'serve', '--tools', fileURLToPath(kTools), '--http', 'uws', '--workers', '1', '--port', '0'], { stdio: ['ignore', 'pipe', 'pipe'] });
    cleanup(() => { if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL'); });
    let stderr = '';
    child.stderr.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    child.stdout.resume();
    await until(() => /serving MCP at \S+/.test(stderr), 10_000, 'the server to start');
    const url = /serving MCP at (\S+)/.exec(stderr)![1];
    const call = async (id: number, name: string, args: Record<string, unknown> = {}) => {
      const res = await post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } }, { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': name });
      return JSON.parse(res.body).result as Record<string, any>;
    };
    const before = (await call(1, 'whoami')).structuredContent.thread as number;
    const refused = await call(2, 'exit_now');
    expect(refused).toMatchObject({ isError: true, content: [{ type: 'text', text: 'tools must not call process.exit() in an HTTP worker' }] });
    expect((await call(3, 'whoami')).structuredContent.thread).toBe(before); // no crash, no replacement
    expect(await call(4, 'pool_exit')).toMatchObject({ isError: true, content: [{ text: 'tools must not call process.exit() in a pool thread' }] });
    expect(await call(5, 'spin', { ms: 1 })).toMatchObject({ structuredContent: { finished: true } });
    expect(child.exitCode).toBe(null);
    expect(stderr).not.toMatch(/crashed|exited|Aborted/);
    child.kill('SIGTERM');
    const code = await within(new Promise<number | null>((resolve) => child.once('exit', (c) => resolve(c))), 10_000, 'exit');
    expect(code).toBe(0);
  });
});
