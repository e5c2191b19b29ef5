// `sluice serve --stdio` shuts down gracefully on SIGTERM/SIGINT (desktop clients stop stdio servers
// that way): running calls finish within the grace, the rest are cancelled, exit 0. And a pool
// thread still loading its modules at that moment must not take the process down with it. A client
// that stops reading stdout ends the server the same way, never with an unhandled EPIPE; one that
// closes stderr only loses the log.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { serveStdioServer } from '../../src/index.js';
import { recordPath, recorded, until } from '../helpers/server.js';

const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kTools = new URL('../fixtures/supervisor-tools.mjs', import.meta.url);
/** The CLI's grace period (shutdownGraceMs default). */
const kCliGraceMs = 5_000;

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

function within<T>(promise: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error(`${what}: still pending after ${ms} ms`)), ms); }),
  ]);
}

/** `sluice serve --stdio` as a child: send lines, read the lines it answers. */
function startStdio() {
  const child = spawn(process.execPath, [kBin, 'serve', '--stdio', '--tools', fileURLToPath(kTools)], { stdio: ['pipe', 'pipe', 'pipe'] });
  children.push(child);
  let stderr = '';
  let buffered = '';
  const lines: Array<Record<string, any>> = [];
  child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
  child.stdout!.setEncoding('utf8').on('data', (c: string) => {
    buffered += c;
    let i;
    while ((i = buffered.indexOf('\n')) !== -1) {
      lines.push(JSON.parse(buffered.slice(0, i)) as Record<string, any>);
      buffered = buffered.slice(i + 1);
    }
  });
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => resolve({ code, signal }));
  });
  const send = (message: unknown) => child.stdin!.write(`${JSON.stringify(message)}\n`);
  return { child, lines, stderr: () => stderr, exited, send };
}

const kInitialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };
const kCrashSigns = /Aborted|core dumped|FATAL|Assertion|Segmentation|uncaught|Unhandled|crashed/i;

describe('sluice serve --stdio and signals', () => {
  it('SIGTERM with a call in flight: the call completes, exit 0 well within the grace', async () => {
    const s = startStdio();
    s.send(kInitialize);
    await within(until(() => s.lines.some((l) => l.id === 0), 10_000, 'initialize'), 11_000, 'initialize');
    const record = recordPath();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'block', arguments: { ms: 800, record } } });
    await until(() => recorded(record).length > 0, 10_000, 'the call to start');
    const signalled = Date.now();
    s.child.kill('SIGTERM');
    const { code, signal } = await within(s.exited, kCliGraceMs + 3_000, 'sluice to exit after SIGTERM');
    expect({ code, signal }, s.stderr()).toEqual({ code: 0, signal: null });
    expect(Date.now() - signalled).toBeLessThan(kCliGraceMs);
    expect(s.lines.find((l) => l.id === 1)).toMatchObject({ result: { structuredContent: { finished: true } } });
    expect(s.stderr()).toContain('sluice: shutting down');
    expect(s.stderr()).not.toMatch(kCrashSigns);
  });

  it('SIGINT with a call that ignores cancellation: cancelled at the end of the grace, exit 0 soon after', async () => {
    const s = startStdio();
    s.send(kInitialize);
    const record = recordPath();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'stubborn', arguments: { ms: 60_000, record } } });
    await until(() => recorded(record).length > 0, 10_000, 'the call to start');
    const signalled = Date.now();
    s.child.kill('SIGINT');
    const { code, signal } = await within(s.exited, kCliGraceMs + 5_000, 'sluice to exit after SIGINT');
    const tookMs = Date.now() - signalled;
    expect({ code, signal }, s.stderr()).toEqual({ code: 0, signal: null });
    expect(tookMs).toBeGreaterThanOrEqual(kCliGraceMs - 200);
    expect(tookMs).toBeLessThan(kCliGraceMs + 2_000);
    expect(s.lines.some((l) => l.id === 1)).toBe(false); // cancelled: never answered
    expect(s.stderr()).not.toMatch(kCrashSigns);
  });

  it('a client that stops reading stdout (EPIPE): its running call is cancelled, exit 0 with stdin still open, no crash', async () => {
    const s = startStdio();
    s.send(kInitialize);
    await within(until(() => s.lines.some((l) => l.id === 0), 10_000, 'initialize'), 11_000, 'initialize');
    const record = recordPath();
    // Its progress every 20 ms is what meets the closed pipe.
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'watch_cancel', arguments: { record }, _meta: { progressToken: 'p' } } });
    await until(() => recorded(record).length > 0, 10_000, 'the call to start');
    s.child.stdout!.destroy();
    const { code, signal } = await within(s.exited, 10_000, 'sluice to exit once its output is gone');
    expect({ code, signal }, s.stderr()).toEqual({ code: 0, signal: null });
    expect(s.child.stdin!.writableEnded).toBe(false);
    expect(recorded(record)[1]).toMatch(/^cancelled=true reason=the client stopped reading the server's output signal$/);
    expect(s.stderr()).toMatch(/sluice: the client stopped reading stdout \(EPIPE\): 1 running request cancelled; no more input is read/);
    expect(s.stderr()).not.toMatch(kCrashSigns);
  });

  it('a client that closes stderr: the server logs into the void and answers on, exit 0 at the end of stdin', async () => {
    const s = startStdio();
    s.send(kInitialize);
    await within(until(() => s.lines.some((l) => l.id === 0), 10_000, 'initialize'), 11_000, 'initialize');
    s.child.stderr!.destroy();
    // A notification the server refuses is logged at warn: the first write to meet the closed pipe.
    for (let i = 1; i <= 20; i++) {
      s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: 5 });
      s.send({ jsonrpc: '2.0', id: i, method: 'ping' });
    }
    await until(() => s.lines.filter((l) => l.id !== 0).length === 20, 10_000, 'twenty pings answered');
    s.child.stdin!.end();
    expect(await within(s.exited, 10_000, 'sluice to exit at the end of stdin')).toEqual({ code: 0, signal: null });
  });

  it('SIGTERM while the pool thread is still loading its modules: exit 0, no assertion (6 tries)', async () => {
    const outcomes: string[] = [];
    for (let i = 0; i < 6; i++) {
      const s = startStdio();
      s.send(kInitialize);
      // The initialize answer means the handlers are installed and the pool thread has just started.
      await within(until(() => s.lines.some((l) => l.id === 0), 10_000, 'initialize'), 11_000, 'initialize');
      if (i % 2 === 1) await new Promise((r) => setTimeout(r, 5 * i));
      s.child.kill('SIGTERM');
      const { code, signal } = await within(s.exited, 15_000, 'sluice to exit after SIGTERM');
      outcomes.push(`${code}/${signal}${kCrashSigns.test(s.stderr()) ? ` ${s.stderr()}` : ''}`);
    }
    expect(outcomes.filter((o) => o !== '0/null')).toEqual([]);
  });
});

describe('serveStdioServer({ signal })', () => {
  it('aborting stops reading, lets calls finish within the grace, then cancels the rest with a reason', async () => {
    const input = new PassThrough();
    const output = new PassThrough();
    const lines: Array<Record<string, any>> = [];
    let buffered = '';
    output.setEncoding('utf8').on('data', (c: string) => {
      buffered += c;
      let i;
      while ((i = buffered.indexOf('\n')) !== -1) {
        lines.push(JSON.parse(buffered.slice(0, i)) as Record<string, any>);
        buffered = buffered.slice(i + 1);
      }
    });
    const shutdown = new AbortController();
    const done = serveStdioServer({ tools: kTools, input, output, signal: shutdown.signal, shutdownGraceMs: 400, log: () => {} });
    const send = (m: unknown) => input.write(`${JSON.stringify(m)}\n`);
    send(kInitialize);
    const quick = recordPath();
    const slow = recordPath();
    send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'block', arguments: { ms: 200, record: quick } } });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'watch_cancel', arguments: { record: slow } } });
    await until(() => recorded(quick).length > 0 && recorded(slow).length > 0, 10_000, 'both calls to start');
    const aborted = Date.now();
    shutdown.abort();
    send({ jsonrpc: '2.0', id: 3, method: 'ping' }); // after the abort: not read any more
    await within(done, 4_000, 'serveStdioServer to resolve');
    const tookMs = Date.now() - aborted;
    expect(tookMs).toBeGreaterThanOrEqual(350);
    // Alone this takes 440–500 ms (the 400 ms grace, then the cancel); on a slow 2-core VM running
    // three test files at once, 1.9 s was seen (Node 24), and 2.8 s in CI's Debian 13 root (Node 24,
    // clean-clone run of c898bd3). The bound says "soon after the grace", under the 4 s that
    // `within` allows; that the rest was cancelled, not waited for, is the recorded reason below
    // (watch_cancel never ends by itself).
    expect(tookMs).toBeLessThan(3_500);
    expect(lines.find((l) => l.id === 1)).toMatchObject({ result: { structuredContent: { finished: true } } });
    expect(lines.some((l) => l.id === 2 || l.id === 3)).toBe(false);
    // The tool saw the cancel by polling and through its signal, with the shutdown's reason.
    expect(recorded(slow).at(-1)).toBe('cancelled=true reason=server shutting down signal');
    expect(input.listenerCount('data')).toBe(0); // the caller's stream is left alone, unread
  });
});
