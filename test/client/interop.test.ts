// The Sluice client (src/client) against the OFFICIAL MCP servers from npm:
//  1. @modelcontextprotocol/sdk 1.32.2 McpServer over stdio (a child process: official-stdio-server.mjs);
//  2. the same McpServer over v1 Streamable HTTP (StreamableHTTPServerTransport, stateful sessions);
//  3. @modelcontextprotocol/server 2.4.0 McpServer behind its per-request handler (createMcpHandler,
//     2026-07-28 with the stateless 2025 fallback), mounted on node:http.
// Cancellation is proven on the server side: the `wait` tool writes "cancelled" to its record file
// only when the official SDK fired the tool's own abort signal (extra.signal / ctx.mcpReq.signal).
import { existsSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { randomUUID } from 'node:crypto';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it, onTestFailed } from 'vitest';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { StreamableHTTPServerTransport } from '@modelcontextprotocol/sdk/server/streamableHttp.js';
import { isInitializeRequest } from '@modelcontextprotocol/sdk/types.js';
import { createMcpHandler } from '@modelcontextprotocol/server';
import type { McpServer as McpServerV1 } from '@modelcontextprotocol/sdk/server/mcp.js';
import type { McpServer as McpServerV2 } from '@modelcontextprotocol/server';
import { CancelledError, Client, HttpClientTransport, StdioClientTransport } from '../../src/client/index.js';

// The servers under test are plain .mjs fixtures (the stdio one runs as a child process); typed here.
const fixture = (name: string): string => new URL(`../fixtures/${name}`, import.meta.url).href;
const { createV1Server } = (await import(fixture('official-v1-server.mjs'))) as { createV1Server(): McpServerV1 };
const { createV2Server } = (await import(fixture('official-v2-server.mjs'))) as { createV2Server(): McpServerV2 };

const kStdioServer = fileURLToPath(new URL('../fixtures/official-stdio-server.mjs', import.meta.url));
const kTestTimeout = 30_000;
/** Bound on any single call in these tests: well under the test time-out, so a hang fails with a reason. */
const kCallBound = 8_000;
/** The abort must reject the caller's promise at once. */
const kRejectBound = 100;
/** The official server must have seen the cancel (its tool's signal fired) within this. */
const kServerSeesCancelBound = 3_000;

// ---------------------------------------------------------------------------------------------
// Clean-up: everything a test opens is closed after it (reverse order), whatever happened.

const onCleanup = cleanupAfterEach();

/** A client whose close is bounded and registered for clean-up. */
function track(client: Client): Client {
  onCleanup(() => within(client.close(), 5_000, 'client.close()'));
  return client;
}

// ---------------------------------------------------------------------------------------------
// Small helpers.

/** Rejects with a clear message when `promise` does not settle within `ms`. */
async function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const bound = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what} did not settle within ${ms} ms`)), ms);
  });
  try {
    return await Promise.race([promise, bound]);
  } finally {
    clearTimeout(timer);
  }
}

async function until(check: () => boolean, timeoutMs: number, what: () => string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!check()) {
    if (Date.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what()}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

interface RecordLine { state: 'started' | 'cancelled' | 'finished'; at: number; pid: number; aborted?: boolean; reason?: string }

function recordPath(): string {
  const dir = mkdtempSync(join(tmpdir(), 'sluice-interop-'));
  onCleanup(() => rmSync(dir, { recursive: true, force: true }));
  return join(dir, 'record.jsonl');
}

function recorded(path: string): RecordLine[] {
  if (!existsSync(path)) return [];
  return readFileSync(path, 'utf8').split('\n').filter((l) => l !== '').map((l) => JSON.parse(l) as RecordLine);
}

function text(result: Record<string, unknown>): string | undefined {
  const content = result.content as Array<{ type: string; text?: string }> | undefined;
  return content?.find((c) => c.type === 'text')?.text;
}

function toolNames(result: Record<string, unknown>): string[] {
  return ((result.tools as Array<{ name: string }> | undefined) ?? []).map((t) => t.name).sort();
}

/** Timings of every cancel, printed at the end of a run (the report asks for them). */
const timings: string[] = [];
afterEach(() => {
  if (timings.length > 0) console.log(timings.splice(0).join('\n'));
});

/**
 * Starts `wait` (10 s unless cancelled) and aborts it once it runs: when the official server
 * recorded "started", or (`progress`) when its "started" progress notification reached onProgress
 * (over HTTP the response is then an open SSE stream). Checks: the call rejects with CancelledError
 * (carrying the reason) within kRejectBound; the server's tool signal fired ("cancelled" recorded,
 * never "finished"). Returns the timings.
 */
async function cancelWait(client: Client, label: string, { progress = false, serverPid }: { progress?: boolean; serverPid: number }): Promise<{ rejectMs: number; serverMs: number }> {
  const path = recordPath();
  const controller = new AbortController();
  const progressSeen: Array<{ progress: number; total?: number; message?: string }> = [];
  const call = client.callTool('wait', { record: path, ms: 10_000 }, {
    signal: controller.signal,
    ...(progress ? { onProgress: (p: { progress: number; total?: number; message?: string }) => { progressSeen.push(p); } } : {}),
  });
  const outcome = call.then((result) => ({ result }), (error: unknown) => ({ error }));
  if (progress) {
    await until(() => progressSeen.length > 0, 5_000, () => `the "started" progress notification (record: ${JSON.stringify(recorded(path))})`);
    expect(progressSeen).toEqual([{ progress: 0, total: 1, message: 'started' }]);
  } else {
    await until(() => recorded(path).some((l) => l.state === 'started'), 5_000, () => `"started" in the record (saw ${JSON.stringify(recorded(path))})`);
  }
  const abortedAt = Date.now();
  const t0 = performance.now();
  controller.abort('test abort');
  const settled = await within(outcome, kCallBound, 'the aborted call');
  const rejectMs = performance.now() - t0;
  expect(settled).not.toHaveProperty('result');
  const error = (settled as { error: unknown }).error;
  expect(error).toBeInstanceOf(CancelledError);
  expect((error as CancelledError).reason).toBe('test abort');
  expect((error as CancelledError).code).toBe('request_cancelled');
  expect(rejectMs).toBeLessThan(kRejectBound);

  await until(() => recorded(path).some((l) => l.state !== 'started'), kServerSeesCancelBound,
    () => `the official server to record the cancel (saw ${JSON.stringify(recorded(path))})`);
  const lines = recorded(path);
  expect(lines.map((l) => l.state)).toEqual(['started', 'cancelled']);
  expect(lines[0]!.aborted).toBe(false); // the tool really was running when the cancel came
  expect(lines[0]!.pid).toBe(serverPid); // ... in the official server's process
  const serverMs = lines[1]!.at - abortedAt;
  timings.push(`[timing] ${label}${progress ? ' (after progress)' : ''}: caller rejected ${rejectMs.toFixed(2)} ms after abort; the server's tool signal fired ${serverMs} ms after abort`);
  return { rejectMs, serverMs };
}

/**
 * Two waits at once; aborting one cancels that one only: the other runs to its end and its result
 * comes back (the cancel named the right request, and responses are routed by id).
 */
async function cancelOneOfTwo(client: Client): Promise<void> {
  const [pathA, pathB] = [recordPath(), recordPath()];
  const controller = new AbortController();
  const a = client.callTool('wait', { record: pathA, ms: 10_000 }, { signal: controller.signal }).then((result) => ({ result }), (error: unknown) => ({ error }));
  const b = client.callTool('wait', { record: pathB, ms: 600 }).then((result) => ({ result }), (error: unknown) => ({ error }));
  await until(() => recorded(pathA).length > 0 && recorded(pathB).length > 0, 5_000, () => 'both waits to start');
  controller.abort('only A');
  const settledA = await within(a, kRejectBound * 5, 'the aborted call A');
  expect((settledA as { error?: unknown }).error).toBeInstanceOf(CancelledError);
  const settledB = await within(b, kCallBound, 'call B');
  expect(settledB).toHaveProperty('result');
  expect(text((settledB as { result: Record<string, unknown> }).result)).toBe('finished');
  await until(() => recorded(pathA).length === 2, kServerSeesCancelBound, () => `A's cancel in its record (saw ${JSON.stringify(recorded(pathA))})`);
  expect(recorded(pathA).map((l) => l.state)).toEqual(['started', 'cancelled']);
  expect(recorded(pathB).map((l) => l.state)).toEqual(['started', 'finished']);
}

/**
 * list + call echo + cancel wait (before and after a progress notification) + cancel one of two
 * concurrent waits + a call after the cancels (the connection/session is still good).
 */
async function exercise(client: Client, label: string, serverPid: number): Promise<void> {
  const tools = await within(client.listTools(), kCallBound, 'tools/list');
  expect(toolNames(tools)).toEqual(['echo', 'wait']);

  const echoed = await within(client.callTool('echo', { text: 'héllo ✓' }), kCallBound, 'tools/call echo');
  expect(text(echoed)).toBe('héllo ✓');
  expect(echoed.isError).not.toBe(true);

  await cancelWait(client, label, { serverPid });
  await cancelWait(client, label, { progress: true, serverPid });
  await cancelOneOfTwo(client);

  const after = await within(client.callTool('echo', { text: 'after the cancel' }), kCallBound, 'tools/call echo after the cancel');
  expect(text(after)).toBe('after the cancel');
}

// ---------------------------------------------------------------------------------------------
// A node:http server that records every exchange (for failure reports: request/response dumps).

interface Exchange {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  body: string;
  status?: number;
  headersSent?: boolean;
  responseHeaders?: Record<string, unknown>;
  response: string;
  /** The connection closed before the response ended (the client went away). */
  closedEarly?: boolean;
}

interface HttpHarness { url: string; log: Exchange[]; dump(): string; close(): Promise<void> }

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

async function listen(handle: (req: IncomingMessage, res: ServerResponse, body: string) => Promise<void>, onClose: () => Promise<void> = async () => {}): Promise<HttpHarness> {
  const log: Exchange[] = [];
  const server: Server = createServer((req, res) => {
    void (async () => {
      const body = await readBody(req);
      const exchange: Exchange = { method: req.method ?? '?', url: req.url ?? '', headers: { ...req.headers }, body, response: '' };
      log.push(exchange);
      const write = res.write.bind(res) as (...a: unknown[]) => boolean;
      const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
      const capture = (chunk: unknown) => {
        if (typeof chunk === 'string' || chunk instanceof Uint8Array) exchange.response += Buffer.from(chunk as Uint8Array).toString('utf8');
      };
      res.write = ((...a: unknown[]) => { capture(a[0]); return write(...a); }) as typeof res.write;
      res.end = ((...a: unknown[]) => { if (typeof a[0] !== 'function') capture(a[0]); return end(...a); }) as typeof res.end;
      const writeHead = res.writeHead.bind(res) as (...a: unknown[]) => ServerResponse;
      res.writeHead = ((...a: unknown[]) => {
        const headers = a.find((x, i) => i > 0 && x !== null && typeof x === 'object');
        if (headers !== undefined) for (const [k, v] of Object.entries(headers as Record<string, unknown>)) res.setHeader(k, v as string);
        return writeHead(a[0]);
      }) as typeof res.writeHead;
      res.on('close', () => {
        exchange.headersSent = res.headersSent;
        exchange.status = res.headersSent ? res.statusCode : undefined;
        exchange.responseHeaders = res.getHeaders();
        if (!res.writableFinished) exchange.closedEarly = true;
      });
      await handle(req, res, body);
    })().catch((error: unknown) => {
      if (!res.headersSent) res.writeHead(500, { 'content-type': 'text/plain' });
      res.end(String(error));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const harness: HttpHarness = {
    url: `http://127.0.0.1:${port}/mcp`,
    log,
    dump: () => log.map((e) => `${e.method} ${e.url} ${JSON.stringify(e.headers)}\n  ${e.body}\n  -> ${e.status ?? '(pending)'}${e.closedEarly === true ? ' (connection closed before the response ended)' : ''} ${JSON.stringify(e.responseHeaders ?? {})}\n  ${e.response.replace(/\n/g, '\\n')}`).join('\n'),
    close: async () => {
      await onClose();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  onCleanup(() => within(harness.close(), 5_000, 'closing the HTTP server'));
  onTestFailed(() => { console.log(`HTTP exchanges with the official server:\n${harness.dump()}`); });
  return harness;
}

/** The official v1 McpServer over stateful v1 Streamable HTTP (the SDK's documented session wiring). */
async function startV1Http(): Promise<HttpHarness & { sessions: Map<string, StreamableHTTPServerTransport> }> {
  const sessions = new Map<string, StreamableHTTPServerTransport>();
  const harness = await listen(async (req, res, raw) => {
    const session = req.headers['mcp-session-id'];
    const body: unknown = raw === '' ? undefined : JSON.parse(raw);
    if (typeof session === 'string') {
      const transport = sessions.get(session);
      if (transport === undefined) {
        res.writeHead(404, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32001, message: 'Session not found' }, id: null }));
        return;
      }
      await transport.handleRequest(req, res, body);
      return;
    }
    if (req.method === 'POST' && isInitializeRequest(body)) {
      const transport: StreamableHTTPServerTransport = new StreamableHTTPServerTransport({
        sessionIdGenerator: () => randomUUID(),
        onsessioninitialized: (id) => { sessions.set(id, transport); },
      });
      transport.onclose = () => { if (transport.sessionId !== undefined) sessions.delete(transport.sessionId); };
      await createV1Server().connect(transport);
      await transport.handleRequest(req, res, body);
      return;
    }
    res.writeHead(400, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', error: { code: -32000, message: 'Bad Request: No valid session ID provided' }, id: null }));
  }, async () => {
    for (const transport of [...sessions.values()]) await transport.close();
  });
  return Object.assign(harness, { sessions });
}

/**
 * The official v2 per-request handler (createMcpHandler: a web-standard fetch face) mounted on
 * node:http the way a Node adapter must: the Request's signal aborts when the client's connection
 * closes before the response ended (that is how 2026-07-28 cancellation reaches the handler).
 */
async function startV2Http(): Promise<HttpHarness & { errors: Error[] }> {
  const errors: Error[] = [];
  const handler = createMcpHandler(() => createV2Server(), { onerror: (error) => { errors.push(error); } });
  const harness = await listen(async (req, res, body) => {
    const disconnected = new AbortController();
    res.on('close', () => { if (!res.writableFinished) disconnected.abort(new Error('the client closed the connection')); });
    const headers = new Headers();
    for (const [name, value] of Object.entries(req.headers)) {
      if (value === undefined) continue;
      for (const v of Array.isArray(value) ? value : [value]) headers.append(name, v);
    }
    const request = new Request(new URL(req.url ?? '/', `http://${req.headers.host ?? '127.0.0.1'}`), {
      method: req.method,
      headers,
      body: req.method === 'GET' || req.method === 'HEAD' ? undefined : body,
      signal: disconnected.signal,
    });
    const response = await handler.fetch(request);
    res.writeHead(response.status, Object.fromEntries(response.headers.entries()));
    if (response.body === null) {
      res.end();
      return;
    }
    const reader = response.body.getReader();
    res.on('close', () => { void reader.cancel().catch(() => {}); });
    for (;;) {
      const { done, value } = await reader.read().catch(() => ({ done: true, value: undefined }));
      if (done || res.destroyed) break;
      res.write(value);
    }
    if (!res.destroyed) res.end();
  }, () => handler.close());
  return Object.assign(harness, { errors });
}

// ---------------------------------------------------------------------------------------------
// 1. The official SDK v1 McpServer over stdio.

function stdioClient(era: 'auto' | 'legacy' | 'modern'): { client: Client; transport: StdioClientTransport } {
  const transport = new StdioClientTransport({ command: process.execPath, args: [kStdioServer] });
  const child = transport.process;
  // Whatever happens, the child does not outlive the test.
  onCleanup(async () => {
    if (child.exitCode === null && child.signalCode === null) {
      child.kill('SIGKILL');
      await new Promise((r) => child.once('exit', r));
      throw new Error(`the official stdio server (pid ${child.pid}) was still running after client.close()`);
    }
  });
  const client = track(new Client(transport, { era, clientInfo: { name: 'sluice-interop-test', version: '0' } }));
  return { client, transport };
}

describe('official SDK v1 McpServer over stdio (child process)', () => {
  it('era legacy: initialize, list, call echo, cancel wait (the server sees the cancel), call again', { timeout: kTestTimeout }, async () => {
    const { client, transport } = stdioClient('legacy');
    await within(client.connect(), kCallBound, 'connect');
    expect(client.era).toBe('legacy');
    expect(client.serverInfo).toMatchObject({ name: 'official-v1', version: '1.32.2' });
    // The tools run in the child we spawned; close() ends it.
    expect(transport.process.pid).not.toBe(process.pid);
    await exercise(client, 'stdio v1 (legacy)', transport.process.pid!);
    await within(client.close(), 5_000, 'client.close()');
    expect(transport.process.exitCode !== null || transport.process.signalCode !== null).toBe(true);
  });

  it('era auto: server/discover is refused by v1, the client falls back to initialize', { timeout: kTestTimeout }, async () => {
    const { client, transport } = stdioClient('auto');
    await within(client.connect(), kCallBound, 'connect');
    expect(client.era).toBe('legacy');
    expect(client.serverInfo).toMatchObject({ name: 'official-v1' });
    await exercise(client, 'stdio v1 (auto -> legacy)', transport.process.pid!);
  });

  it('an abort while the implicit connect is in flight rejects at once; the tool never runs; the client stays usable', { timeout: kTestTimeout }, async () => {
    const { client } = stdioClient('legacy');
    const path = recordPath();
    const controller = new AbortController();
    const call = client.callTool('wait', { record: path, ms: 10_000 }, { signal: controller.signal }).then((result) => ({ result }), (error: unknown) => ({ error }));
    let abortedAt = 0;
    let connectedAtAbort: boolean | undefined;
    setTimeout(() => { // spawning node + the initialize exchange take far longer than 20 ms
      connectedAtAbort = client.serverInfo !== undefined;
      abortedAt = performance.now();
      controller.abort('early');
    }, 20);
    const settled = await within(call, kCallBound, 'the call aborted during connect');
    const elapsed = performance.now() - abortedAt;
    expect(connectedAtAbort).toBe(false);
    expect((settled as { error?: unknown }).error).toBeInstanceOf(CancelledError);
    expect(((settled as { error: CancelledError }).error).reason).toBe('early');
    expect(elapsed).toBeLessThan(kRejectBound);
    timings.push(`[timing] stdio v1, abort during connect: caller rejected ${elapsed.toFixed(2)} ms after abort`);
    // The connection is still made (in the background) and usable; the aborted call never ran.
    const echoed = await within(client.callTool('echo', { text: 'still here' }), kCallBound, 'echo after the early abort');
    expect(text(echoed)).toBe('still here');
    expect(client.era).toBe('legacy');
    await new Promise((r) => setTimeout(r, 200));
    expect(recorded(path)).toEqual([]);
  });

  it('timeoutMs cancels the same way (the server sees it)', { timeout: kTestTimeout }, async () => {
    const { client } = stdioClient('legacy');
    await within(client.connect(), kCallBound, 'connect');
    const path = recordPath();
    const t0 = performance.now();
    const error = await within(client.callTool('wait', { record: path, ms: 10_000 }, { timeoutMs: 400 }).then(() => undefined, (e: unknown) => e), kCallBound, 'the timed-out call');
    const elapsed = performance.now() - t0;
    expect(error).toBeInstanceOf(CancelledError);
    expect((error as CancelledError).reason).toBe('timed out after 400 ms');
    expect(elapsed).toBeGreaterThanOrEqual(390);
    expect(elapsed).toBeLessThan(400 + kRejectBound);
    await until(() => recorded(path).some((l) => l.state !== 'started'), kServerSeesCancelBound, () => `the cancel in the record (saw ${JSON.stringify(recorded(path))})`);
    expect(recorded(path).map((l) => l.state)).toEqual(['started', 'cancelled']);
  });
});

// ---------------------------------------------------------------------------------------------
// 2. The same server over v1 Streamable HTTP (stateful sessions).

describe('official SDK v1 McpServer over v1 Streamable HTTP (stateful)', () => {
  it('era legacy: session, list, call echo, cancel wait (the server sees the cancel), call again, DELETE on close', { timeout: kTestTimeout }, async () => {
    const server = await startV1Http();
    const transport = new HttpClientTransport({ url: server.url });
    const client = track(new Client(transport, { era: 'legacy' }));
    await within(client.connect(), kCallBound, 'connect');
    expect(client.era).toBe('legacy');
    expect(client.serverInfo).toMatchObject({ name: 'official-v1', version: '1.32.2' });
    expect(transport.sessionId).toBeDefined();
    expect(server.sessions.has(transport.sessionId!)).toBe(true);

    await exercise(client, 'HTTP v1 stateful (legacy)', process.pid);

    // Each cancel went out as a notifications/cancelled POST in the session, after the wait call
    // it names, and the official transport accepted it (202). The wait that ran to its end (600 ms)
    // was never named.
    const waits = server.log.filter((e) => e.body.includes('"name":"wait"'));
    const cancels = server.log.filter((e) => e.body.includes('notifications/cancelled'));
    expect(waits).toHaveLength(4);
    expect(cancels).toHaveLength(3);
    const long = waits.filter((e) => e.body.includes('"ms":10000'));
    expect(long).toHaveLength(3);
    for (const cancel of cancels) {
      const params = (JSON.parse(cancel.body) as { params: { requestId: unknown; reason: string } }).params;
      const named = waits.find((e) => (JSON.parse(e.body) as { id: unknown }).id === params.requestId);
      expect(long).toContain(named);
      expect(params.reason).toBe(named === long[2] ? 'only A' : 'test abort');
      expect(cancel.headers['mcp-session-id']).toBe(transport.sessionId);
      expect(cancel.status).toBe(202);
      expect(server.log.indexOf(cancel)).toBeGreaterThan(server.log.indexOf(named!));
    }

    const session = transport.sessionId!;
    await within(client.close(), 5_000, 'client.close()');
    const del = server.log.find((e) => e.method === 'DELETE');
    expect(del?.headers['mcp-session-id']).toBe(session);
    expect(del?.status).toBe(200);
    expect(server.sessions.has(session)).toBe(false);
  });

  it('a session the server dropped (404): the next call starts one new session and succeeds', { timeout: kTestTimeout }, async () => {
    const server = await startV1Http();
    const transport = new HttpClientTransport({ url: server.url });
    const client = track(new Client(transport, { era: 'legacy' }));
    await within(client.connect(), kCallBound, 'connect');
    const first = transport.sessionId!;
    await server.sessions.get(first)!.close(); // the official transport ends the session
    expect(server.sessions.size).toBe(0);
    const echoed = await within(client.callTool('echo', { text: 'again' }), kCallBound, 'echo on a dropped session');
    expect(text(echoed)).toBe('again');
    expect(transport.sessionId).toBeDefined();
    expect(transport.sessionId).not.toBe(first);
    expect([...server.sessions.keys()]).toEqual([transport.sessionId]);
    expect(server.log.filter((e) => e.body.includes('"method":"initialize"'))).toHaveLength(2);
    await within(client.close(), 5_000, 'client.close()');
    expect(server.sessions.size).toBe(0);
  });

  // Fails today (client bug): each 404 re-initializes on its own (client.ts request()), and the
  // transport's one session slot is cleared/overwritten under the other calls (http.ts send()): one
  // call fails with the 404's 'Session not found', one is sent with no session at all (400), and a
  // session the client opened is never DELETEd.
  it('concurrent calls on a dropped session (404 each): all succeed on one new session, none leaked', { timeout: kTestTimeout }, async () => {
    const server = await startV1Http();
    const transport = new HttpClientTransport({ url: server.url });
    const client = track(new Client(transport, { era: 'legacy' }));
    await within(client.connect(), kCallBound, 'connect');
    await server.sessions.get(transport.sessionId!)!.close();
    const settled = await within(Promise.allSettled([1, 2, 3].map((i) => client.callTool('echo', { text: `c${i}` }))), kCallBound, 'three echoes on a dropped session');
    expect(settled.map((r) => (r.status === 'fulfilled' ? text(r.value) : `rejected: ${String(r.reason)}`))).toEqual(['c1', 'c2', 'c3']);
    expect(server.log.filter((e) => e.body.includes('"method":"initialize"'))).toHaveLength(2);
    await within(client.close(), 5_000, 'client.close()');
    expect([...server.sessions.keys()]).toEqual([]); // every session the client opened was ended
  });

  it('era auto: v1 has no server/discover, the client falls back to legacy', { timeout: kTestTimeout }, async () => {
    const server = await startV1Http();
    const client = track(new Client(new HttpClientTransport({ url: server.url }), { era: 'auto' }));
    await within(client.connect(), kCallBound, 'connect');
    expect(client.era).toBe('legacy');
    expect(server.log[0]?.body).toContain('server/discover');
    expect(server.log[0]?.status).toBe(400);
    await exercise(client, 'HTTP v1 stateful (auto -> legacy)', process.pid);
  });
});

// ---------------------------------------------------------------------------------------------
// 3. The official v2 server's per-request handler (2026-07-28).

describe('official SDK v2 McpServer behind createMcpHandler (2026-07-28)', () => {
  for (const era of ['modern', 'auto'] as const) {
    it(`era ${era}: speaks 2026-07-28 (server/discover), list, call echo, cancel wait by closing the stream (the tool signal fires), call again`, { timeout: kTestTimeout }, async () => {
      const server = await startV2Http();
      const client = track(new Client(new HttpClientTransport({ url: server.url }), { era }));
      await within(client.connect(), kCallBound, 'connect');
      expect(client.era).toBe('modern');
      expect(client.serverInfo).toMatchObject({ name: 'official-v2', version: '2.4.0' });
      // No legacy handshake went over the wire.
      expect(server.log.some((e) => e.body.includes('"initialize"'))).toBe(false);

      await exercise(client, `HTTP v2 createMcpHandler (${era})`, process.pid);

      // Every request carried the 2026-07-28 header, and the cancel was the stream closing: no
      // notifications/cancelled was posted.
      for (const e of server.log) expect(e.headers['mcp-protocol-version']).toBe('2026-07-28');
      expect(server.log.some((e) => e.body.includes('notifications/cancelled'))).toBe(false);
      // The aborted waits' requests were closed by the client; the one that ran to its end was not.
      const waits = server.log.filter((e) => e.body.includes('"name":"wait"'));
      expect(waits.map((e) => e.closedEarly === true)).toEqual(waits.map((e) => e.body.includes('"ms":10000')));
      expect(waits.filter((e) => e.closedEarly === true)).toHaveLength(3);
      // The wait cancelled after its progress notification was an open SSE stream by then.
      const streamed = waits.find((e) => e.body.includes('progressToken'));
      expect(streamed?.headersSent).toBe(true);
      expect(String(streamed?.responseHeaders?.['content-type'])).toContain('text/event-stream');
      expect(streamed?.response).toContain('notifications/progress');
      expect(server.errors.filter((e) => !/abort|closed|cancel/i.test(e.message))).toEqual([]);
    });
  }

  it('era legacy: the handler\'s stateless 2025 fallback also serves the client (list, call, cancel)', { timeout: kTestTimeout }, async () => {
    const server = await startV2Http();
    const transport = new HttpClientTransport({ url: server.url });
    const client = track(new Client(transport, { era: 'legacy' }));
    await within(client.connect(), kCallBound, 'connect');
    expect(client.era).toBe('legacy');
    expect(client.serverInfo).toMatchObject({ name: 'official-v2', version: '2.4.0' });
    expect(transport.sessionId).toBeUndefined(); // stateless: no session
    // Stateless: each POST has its own server instance, so the notifications/cancelled POST reaches
    // an instance that never saw the call; what fires the tool's signal is the client closing the
    // call's stream (the v2 legacy leg aborts on disconnect).
    await exercise(client, 'HTTP v2 createMcpHandler stateless fallback (legacy)', process.pid);
    expect(server.log.some((e) => e.body.includes('server/discover'))).toBe(false);
  });
});
