// Interop with the official MCP TypeScript SDKs, against real Sluice servers on loopback:
//  - SDK v1 (@modelcontextprotocol/sdk) over legacy Streamable HTTP (sessions) and over stdio;
//  - SDK v2 (@modelcontextprotocol/client) over the modern era (2026-07-28, no initialize).
// Cancellation is checked where it matters: in the tool's own thread (the `record` file), not just
// in the client's promise.
import { request as httpRequest } from 'node:http';
import { Readable } from 'node:stream';
import type { ReadableStream as NodeReadableStream } from 'node:stream/web';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { cleanupAfterEach } from '../helpers/cleanup.js';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StdioClientTransport } from '@modelcontextprotocol/sdk/client/stdio.js';
import { StreamableHTTPClientTransport as HttpTransportV1 } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpTransportV2 } from '@modelcontextprotocol/client';
import { StdioClientTransport as StdioTransportV2 } from '@modelcontextprotocol/client/stdio';
import type { ServerAddress } from '../../src/index.js';
import { kToolsModule, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kToolsPath = fileURLToPath(kToolsModule);
const kModern = '2026-07-28';
const kMetaVersion = 'io.modelcontextprotocol/protocolVersion';
const kTestTimeout = 30_000;
/** Per-request bound inside the tests: well under the test time-out, so a hang fails with a reason. */
const kCallTimeout = 10_000;

// ---------------------------------------------------------------------------------------------
// Clean-up: everything a test opens is closed after it (reverse order), whatever happened.

const onCleanup = cleanupAfterEach();

/** A server for one test; closed after it, and it must not have logged a warning or an error. */
async function server(): Promise<TestServer> {
  const s = await startServer();
  onCleanup(async () => {
    await s.close();
    if (s.logs.length > 0) throw new Error(`the server logged:\n${s.logs.join('\n')}`);
  });
  return s;
}

// ---------------------------------------------------------------------------------------------
// A fetch that remembers what went over the wire (for assertions and for failure reports).

interface Exchange {
  method: string;
  headers: Record<string, string>;
  body: unknown;
  status?: number;
  contentType?: string | null;
  /** JSON bodies only (an SSE body is left to the client). */
  responseText?: string;
  /** The HTTP worker thread that answered (`sluice-worker`, exposeWorker is on in tests). */
  worker?: number;
}

function recordingFetch(base: typeof fetch = fetch): { fetch: typeof fetch; log: Exchange[]; describe(): string } {
  const log: Exchange[] = [];
  const recordingFetchImpl = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    let body: unknown = init?.body;
    if (typeof body === 'string') {
      try { body = JSON.parse(body); } catch { /* keep the text */ }
    }
    const entry: Exchange = { method: init?.method ?? 'GET', headers, body };
    log.push(entry);
    const res = await base(input, init);
    entry.status = res.status;
    const worker = res.headers.get('sluice-worker');
    if (worker !== null) entry.worker = Number(worker);
    entry.contentType = res.headers.get('content-type');
    if (entry.contentType === null || !entry.contentType.includes('text/event-stream')) entry.responseText = await res.clone().text();
    return res;
  };
  return {
    fetch: recordingFetchImpl as typeof fetch,
    log,
    describe: () => log.map((e) => `[worker ${e.worker ?? '?'}] ${e.method} ${JSON.stringify(e.headers)} ${JSON.stringify(e.body)} -> ${e.status} ${e.contentType ?? ''} ${e.responseText ?? ''}`).join('\n'),
  };
}

/**
 * A fetch over node:http that opens a new TCP connection for every request (no keep-alive pool),
 * so the kernel spreads the requests of one client over the server's HTTP worker threads.
 */
const freshConnectionFetch = ((input: string | URL | Request, init?: RequestInit): Promise<Response> => {
  const url = new URL(input instanceof Request ? input.url : String(input));
  return new Promise<Response>((resolve, reject) => {
    const headers = Object.fromEntries(new Headers(init?.headers).entries());
    const req = httpRequest(url, { method: init?.method ?? 'GET', headers, agent: false }, (res) => {
      const out = new Headers();
      for (const [k, v] of Object.entries(res.headers)) if (v !== undefined) out.set(k, Array.isArray(v) ? v.join(', ') : v);
      const status = res.statusCode ?? 502;
      const body = status === 204 || status === 304 ? null : (Readable.toWeb(res) as NodeReadableStream<Uint8Array>);
      resolve(new Response(body as unknown as ConstructorParameters<typeof Response>[0], { status, headers: out }));
    });
    req.on('error', reject);
    init?.signal?.addEventListener('abort', () => req.destroy(new DOMException('aborted', 'AbortError')), { once: true });
    req.end(typeof init?.body === 'string' ? init.body : undefined);
  });
}) as typeof fetch;

/** The body of a JSON-RPC message as a plain object (or undefined). */
function rpc(e: Exchange): Record<string, unknown> | undefined {
  return e.body !== null && typeof e.body === 'object' ? (e.body as Record<string, unknown>) : undefined;
}

function posts(log: Exchange[], method: string): Exchange[] {
  return log.filter((e) => e.method === 'POST' && rpc(e)?.method === method);
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the cancellation tests.

/** The text of the first text content block of a tool result. */
function text(result: unknown): string | undefined {
  const content = (result as { content?: Array<{ type: string; text?: string }> }).content;
  return content?.find((c) => c.type === 'text')?.text;
}

/** The `cancelled …` line the block tool wrote, once it shows up (bounded). */
async function cancelledLine(record: string, timeoutMs = 5_000): Promise<string> {
  await until(() => recorded(record).some((l) => l.startsWith('cancelled ')), timeoutMs, `"cancelled" in ${record} (saw ${JSON.stringify(recorded(record))})`);
  return recorded(record).find((l) => l.startsWith('cancelled '))!;
}

/**
 * Starts a long block call through `call`, aborts it once the tool has started, and returns how
 * the client's promise settled and what the tool recorded.
 */
async function abortBlockCall(
  call: (record: string, signal: AbortSignal) => Promise<unknown>,
  reason: string,
  ready: () => boolean = () => true,
): Promise<{ settled: 'resolved' | 'rejected'; error: unknown; lines: string[]; cancelled: string }> {
  const record = recordPath();
  const controller = new AbortController();
  let settled: 'pending' | 'resolved' | 'rejected' = 'pending';
  let error: unknown;
  let settledAt = 0;
  const promise = call(record, controller.signal).then(
    () => { settled = 'resolved'; settledAt = Date.now(); },
    (e: unknown) => { settled = 'rejected'; error = e; settledAt = Date.now(); },
  );
  await until(() => recorded(record).some((l) => l.startsWith('started ')) || settled !== 'pending', 10_000, `"started" in ${record}`);
  await until(() => ready() || settled !== 'pending', 10_000, 'the call to be ready for the abort');
  expect(settled, 'the call settled before it was aborted').toBe('pending');
  const abortedAt = Date.now();
  controller.abort(reason);
  // The client gives up at once; the tool, in another thread (or process), must see the cancel.
  await until(() => settled !== 'pending', 5_000, 'the aborted call to settle');
  await promise;
  const cancelled = await cancelledLine(record);
  // The client does not wait for the server to acknowledge: the abort settles the call at once.
  expect(settledAt - abortedAt).toBeLessThan(2_000);
  return { settled: settled as 'resolved' | 'rejected', error, lines: recorded(record), cancelled };
}

// ---------------------------------------------------------------------------------------------

describe('SDK v1 over legacy Streamable HTTP (sessions)', () => {
  async function connect(address: ServerAddress, base?: typeof fetch): Promise<{ client: ClientV1; transport: HttpTransportV1; wire: ReturnType<typeof recordingFetch> }> {
    const wire = recordingFetch(base);
    const transport = new HttpTransportV1(new URL(address.url), { fetch: wire.fetch });
    const client = new ClientV1({ name: 'sluice-interop-v1', version: '1.0.0' });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: kCallTimeout });
    return { client, transport, wire };
  }

  it('initializes a session, lists tools and calls echo', async () => {
    const s = await server();
    const { client, transport, wire } = await connect(s.address);
    expect(transport.sessionId, wire.describe()).toMatch(/^[0-9a-f]{16,}$/i);
    expect(client.getServerVersion()?.name).toBe('sluice');
    const [init] = posts(wire.log, 'initialize');
    expect(init?.status).toBe(200);

    const { tools } = await client.listTools(undefined, { timeout: kCallTimeout });
    const names = tools.map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['echo', 'block']));
    const echoTool = tools.find((t) => t.name === 'echo');
    expect(echoTool?.inputSchema).toMatchObject({ type: 'object', required: ['text'] });

    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from v1 ✓' } }, undefined, { timeout: kCallTimeout });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'hello from v1 ✓' }]);

    // Every request after initialize carried the session and the negotiated version.
    for (const e of wire.log.filter((x) => x.method === 'POST' && rpc(x)?.method !== 'initialize')) {
      expect(e.headers['mcp-session-id']).toBe(transport.sessionId);
      expect(e.headers['mcp-protocol-version']).toBe('2025-11-25');
    }

    // terminateSession() DELETEs the session; the server then refuses it.
    const session = transport.sessionId!;
    await transport.terminateSession();
    const del = wire.log.find((e) => e.method === 'DELETE');
    expect(del?.status, wire.describe()).toBe(204);
    expect(del?.headers['mcp-session-id']).toBe(session);
    const stale = await fetch(s.address.url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 99, method: 'tools/list' }),
    });
    expect(stale.status).toBe(404);
    expect(await stale.json()).toMatchObject({ id: 99, error: { message: 'Session not found' } });
  }, kTestTimeout);

  it('streams progress notifications to onprogress, in increasing order', async () => {
    const s = await server();
    const { client } = await connect(s.address);
    const seen: Array<{ progress: number; total?: number; message?: string }> = [];
    const result = await client.callTool({ name: 'block', arguments: { ms: 400, tick: 50 } }, undefined, {
      timeout: kCallTimeout,
      onprogress: (p) => { seen.push(p); },
    });
    expect(result.isError).toBeFalsy();
    expect(result.structuredContent).toMatchObject({ finished: true });
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < seen.length; i++) expect(seen[i].progress).toBeGreaterThan(seen[i - 1].progress);
    expect(seen[0].message).toBe('tick 1');
  }, kTestTimeout);

  it('an aborted call sends notifications/cancelled and the tool observes it', async () => {
    const s = await server();
    const { client, wire } = await connect(s.address);
    // With a progress token the reply is already an SSE stream when the client gives up.
    let progress = 0;
    const out = await abortBlockCall(
      (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, undefined, { signal, timeout: 20_000, onprogress: () => { progress++; } }),
      'interop v1 http abort',
      () => progress >= 2,
    );
    expect(out.settled).toBe('rejected');
    expect(String((out.error as Error).message)).toContain('interop v1 http abort');
    // The reason is the client's own: the cancel came from notifications/cancelled, not a disconnect.
    expect(out.cancelled).toMatch(/^cancelled thread=\d+ reason=interop v1 http abort$/);
    expect(out.lines.some((l) => l.startsWith('finished '))).toBe(false);

    const [call] = posts(wire.log, 'tools/call');
    const [cancel] = posts(wire.log, 'notifications/cancelled');
    expect(cancel, wire.describe()).toBeDefined();
    expect((rpc(cancel)!.params as Record<string, unknown>).requestId).toBe(rpc(call)!.id);
    await until(() => cancel.status !== undefined, 5_000, 'the cancel POST to be answered');
    expect(cancel.status).toBe(202);
    expect(call.status).toBe(200);
    expect(call.contentType).toContain('text/event-stream');

    // The session is still usable afterwards.
    const again = await client.callTool({ name: 'echo', arguments: { text: 'still here' } }, undefined, { timeout: kCallTimeout });
    expect(text(again)).toBe('still here');
  }, kTestTimeout);

  it('a notifications/cancelled received by another HTTP worker still reaches the tool', async () => {
    const s = await server();
    expect(s.server.workerThreadIds).toHaveLength(2);
    // A connection per request: the call and its cancel land on workers the kernel picks. Repeat
    // until the cancel was received by a different worker than the one running the tool.
    const { client, wire } = await connect(s.address, freshConnectionFetch);
    const outcomes: string[] = [];
    for (let attempt = 0; attempt < 24; attempt++) {
      const before = wire.log.length;
      const out = await abortBlockCall(
        (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, undefined, { signal, timeout: 20_000 }),
        `cross ${attempt}`,
      );
      expect(out.settled).toBe('rejected');
      expect(out.cancelled).toMatch(new RegExp(`^cancelled thread=\\d+ reason=cross ${attempt}$`));
      const toolThread = Number(/thread=(\d+)/.exec(out.cancelled)![1]);
      const cancel = posts(wire.log.slice(before), 'notifications/cancelled')[0];
      await until(() => cancel.status !== undefined, 5_000, 'the cancel POST to be answered');
      expect(cancel.status).toBe(202);
      outcomes.push(`tool on ${toolThread}, cancel via ${cancel.worker}`);
      if (cancel.worker !== toolThread) return;
    }
    throw new Error(`no cancel crossed workers in ${outcomes.length} tries: ${outcomes.join('; ')}`);
  }, kTestTimeout);
});

// ---------------------------------------------------------------------------------------------

describe('SDK v1 over stdio (node bin/sluice.js serve --stdio)', () => {
  async function connect(): Promise<{ client: ClientV1; transport: StdioClientTransport; stderr: () => string }> {
    const transport = new StdioClientTransport({
      command: process.execPath,
      args: [kBin, 'serve', '--stdio', '--tools', kToolsPath],
      stderr: 'pipe',
    });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    const client = new ClientV1({ name: 'sluice-interop-stdio', version: '1.0.0' });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: kCallTimeout });
    return { client, transport, stderr: () => stderr };
  }

  it('lists tools, calls echo and reports progress', async () => {
    const { client, stderr } = await connect();
    expect(client.getServerVersion()?.name, stderr()).toBe('sluice');
    const { tools } = await client.listTools(undefined, { timeout: kCallTimeout });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'block']));

    const result = await client.callTool({ name: 'echo', arguments: { text: 'over stdio' } }, undefined, { timeout: kCallTimeout });
    expect(result.content).toEqual([{ type: 'text', text: 'over stdio' }]);

    const seen: number[] = [];
    const block = await client.callTool({ name: 'block', arguments: { ms: 300, tick: 50 } }, undefined, {
      timeout: kCallTimeout,
      onprogress: (p) => { seen.push(p.progress); },
    });
    expect(block.structuredContent).toMatchObject({ finished: true });
    expect(seen.length).toBeGreaterThanOrEqual(3);
    for (let i = 1; i < seen.length; i++) expect(seen[i]).toBeGreaterThan(seen[i - 1]);
  }, kTestTimeout);

  it('an aborted call is cancelled in the server process', async () => {
    const { client, stderr } = await connect();
    const out = await abortBlockCall(
      (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, undefined, { signal, timeout: 20_000 }),
      'interop stdio abort',
    );
    expect(out.settled, stderr()).toBe('rejected');
    expect(out.cancelled).toMatch(/^cancelled thread=\d+ reason=interop stdio abort$/);
    expect(out.lines.some((l) => l.startsWith('finished '))).toBe(false);

    const again = await client.callTool({ name: 'echo', arguments: { text: 'after cancel' } }, undefined, { timeout: kCallTimeout });
    expect(text(again)).toBe('after cancel');
  }, kTestTimeout);

  it('the server process exits by itself when its input ends', async () => {
    const { client, transport } = await connect();
    const pid = transport.pid;
    expect(pid).toBeTypeOf('number');
    // A server told to stop while its pool thread is still loading the tools module waits for it
    // (terminating a thread mid-instantiation aborts Node), which on a loaded CI machine took over
    // 2 s under Node 24; one pool call first, so what is timed is the exit itself.
    await client.callTool({ name: 'spin', arguments: { ms: 1 } }, undefined, { timeout: kCallTimeout });
    // close() ends stdin, then waits up to 2 s before resorting to SIGTERM.
    const started = Date.now();
    await client.close();
    const took = Date.now() - started;
    const alive = (() => { try { process.kill(pid!, 0); return true; } catch { return false; } })();
    expect(alive).toBe(false);
    expect(took, 'stdin EOF should end the server without SIGTERM').toBeLessThan(1_900);
  }, kTestTimeout);
});

// ---------------------------------------------------------------------------------------------

describe('SDK v2 over the modern era (2026-07-28)', () => {
  async function connect(address: ServerAddress, mode: 'pin' | 'auto'): Promise<{ client: ClientV2; wire: ReturnType<typeof recordingFetch> }> {
    const wire = recordingFetch();
    const transport = new HttpTransportV2(new URL(address.url), { fetch: wire.fetch });
    const client = new ClientV2({ name: 'sluice-interop-v2', version: '2.0.0' }, {
      versionNegotiation: { mode: mode === 'pin' ? { pin: kModern } : 'auto' },
    });
    onCleanup(() => client.close());
    try {
      await client.connect(transport, { timeout: kCallTimeout });
    } catch (error) {
      throw new Error(`v2 connect failed: ${String(error)}\n--- wire ---\n${wire.describe()}`, { cause: error });
    }
    return { client, wire };
  }

  /** The modern-era request rules, checked on what the client actually sent. */
  function expectModernRequest(e: Exchange, method: string, name?: string): void {
    expect(e.headers['mcp-protocol-version']).toBe(kModern);
    expect(e.headers['mcp-method']).toBe(method);
    if (name !== undefined) expect(e.headers['mcp-name']).toBe(name);
    expect(e.headers['mcp-session-id']).toBeUndefined();
    const meta = (rpc(e)?.params as { _meta?: Record<string, unknown> } | undefined)?._meta;
    expect(meta?.[kMetaVersion]).toBe(kModern);
    expect(meta?.['io.modelcontextprotocol/clientCapabilities']).toBeTypeOf('object');
  }

  it('pinned to 2026-07-28: discovers, lists tools and calls echo without initialize', async () => {
    const s = await server();
    const { client, wire } = await connect(s.address, 'pin');
    expect(client.getProtocolEra()).toBe('modern');
    expect(client.getNegotiatedProtocolVersion()).toBe(kModern);

    const { tools } = await client.listTools(undefined, { timeout: kCallTimeout });
    expect(tools.map((t) => t.name)).toEqual(expect.arrayContaining(['echo', 'block']));

    const result = await client.callTool({ name: 'echo', arguments: { text: 'hello from v2 ✓' } }, { timeout: kCallTimeout });
    expect(result.isError).toBeFalsy();
    expect(result.content).toEqual([{ type: 'text', text: 'hello from v2 ✓' }]);

    expect(posts(wire.log, 'initialize'), wire.describe()).toHaveLength(0);
    const [call] = posts(wire.log, 'tools/call');
    expectModernRequest(call, 'tools/call', 'echo');
    expect(call.status, wire.describe()).toBe(200);
    const body = JSON.parse(call.responseText ?? '{}') as { result?: Record<string, unknown> };
    expect(body.result?.resultType).toBe('complete');
    expect((body.result?._meta as Record<string, unknown>)['io.modelcontextprotocol/serverInfo']).toMatchObject({ name: 'sluice' });
    for (const e of wire.log.filter((x) => x.method === 'POST')) expect(e.status, wire.describe()).toBeLessThan(300);
  }, kTestTimeout);

  it('auto negotiation picks the modern era against this server', async () => {
    const s = await server();
    const { client, wire } = await connect(s.address, 'auto');
    expect(client.getProtocolEra(), wire.describe()).toBe('modern');
    expect(client.getDiscoverResult()?.supportedVersions).toContain(kModern);
    const result = await client.callTool({ name: 'echo', arguments: { text: 'auto' } }, { timeout: kCallTimeout });
    expect(text(result)).toBe('auto');
    expect(posts(wire.log, 'initialize')).toHaveLength(0);
  }, kTestTimeout);

  it('aborting a call disconnects, and the server cancels the tool (reason: client disconnected)', async () => {
    const s = await server();
    const { client, wire } = await connect(s.address, 'pin');
    let progress = 0;
    const out = await abortBlockCall(
      (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, { signal, timeout: 20_000, onprogress: () => { progress++; } }),
      'interop v2 abort',
      () => progress >= 2,
    );
    expect(out.settled, wire.describe()).toBe('rejected');
    expect(out.cancelled).toMatch(/^cancelled thread=\d+ reason=client disconnected$/);
    expect(out.lines.some((l) => l.startsWith('finished '))).toBe(false);

    const [call] = posts(wire.log, 'tools/call');
    expectModernRequest(call, 'tools/call', 'block');
    expect(call.status).toBe(200);
    expect(call.contentType).toContain('text/event-stream');
    // Progress reached the client over the call's SSE stream before the abort.
    expect(progress).toBeGreaterThanOrEqual(2);

    // The server keeps serving the same client afterwards.
    const again = await client.callTool({ name: 'echo', arguments: { text: 'after abort' } }, { timeout: kCallTimeout });
    expect(text(again)).toBe('after abort');
  }, kTestTimeout);

  it('aborting a call that has streamed nothing yet (plain JSON reply pending) cancels the tool too', async () => {
    const s = await server();
    const { client, wire } = await connect(s.address, 'pin');
    // No onprogress: no progress token, so the server has written nothing when the client leaves.
    const out = await abortBlockCall(
      (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, { signal, timeout: 20_000 }),
      'interop v2 abort (no progress)',
    );
    expect(out.settled, wire.describe()).toBe('rejected');
    expect(out.cancelled).toMatch(/^cancelled thread=\d+ reason=client disconnected$/);
    const [call] = posts(wire.log, 'tools/call');
    expect(((rpc(call)!.params as { _meta?: Record<string, unknown> })._meta ?? {}).progressToken).toBeUndefined();
    expect(call.status, 'no response may have started before the abort').toBeUndefined();
  }, kTestTimeout);

  it('over stdio too: modern era, and an abort is a notifications/cancelled the tool observes', async () => {
    const transport = new StdioTransportV2({ command: process.execPath, args: [kBin, 'serve', '--stdio', '--tools', kToolsPath], stderr: 'pipe' });
    let stderr = '';
    transport.stderr?.on('data', (chunk: Buffer) => { stderr += chunk.toString('utf8'); });
    const sent: Array<Record<string, unknown>> = [];
    const send = transport.send.bind(transport);
    transport.send = (message) => { sent.push(message as Record<string, unknown>); return send(message); };
    const client = new ClientV2({ name: 'sluice-interop-v2-stdio', version: '2.0.0' }, { versionNegotiation: { mode: { pin: kModern } } });
    onCleanup(() => client.close());
    await client.connect(transport, { timeout: kCallTimeout });
    expect(client.getProtocolEra(), stderr).toBe('modern');

    const result = await client.callTool({ name: 'echo', arguments: { text: 'v2 stdio' } }, { timeout: kCallTimeout });
    expect(text(result)).toBe('v2 stdio');

    const out = await abortBlockCall(
      (record, signal) => client.callTool({ name: 'block', arguments: { ms: 10_000, tick: 20, record } }, { signal, timeout: 20_000 }),
      'interop v2 stdio abort',
    );
    expect(out.settled, stderr).toBe('rejected');
    expect(out.cancelled).toMatch(/^cancelled thread=\d+ reason=interop v2 stdio abort$/);
    expect(sent.some((m) => m.method === 'initialize')).toBe(false);
    const call = sent.find((m) => m.method === 'tools/call' && (m.params as { name?: string }).name === 'block')!;
    expect(((call.params as { _meta?: Record<string, unknown> })._meta ?? {})[kMetaVersion]).toBe(kModern);
    const cancel = sent.find((m) => m.method === 'notifications/cancelled');
    expect((cancel?.params as { requestId?: unknown } | undefined)?.requestId).toBe(call.id);
  }, kTestTimeout);
});
