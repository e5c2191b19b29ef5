// Over stdio, stdout carries the protocol: a line that is not JSON-RPC makes strict clients (Codex
// CLI, for one) close the transport. A tool's console.log, at its module's top level, inline, after
// an await or in a pool thread, goes to stderr; stdout holds only messages.
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { PassThrough } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { serveStdioServer } from '../../src/index.js';
import { until } from '../helpers/server.js';

const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
const kTools = fileURLToPath(new URL('../fixtures/console-tools.mjs', import.meta.url));

const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
});

const kInitialize = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } };

describe('sluice serve --stdio: console output', () => {
  it('a tool\'s console output goes to stderr; every stdout line is a JSON-RPC message', async () => {
    const child = spawn(process.execPath, [kBin, 'serve', '--stdio', '--tools', kTools], { stdio: ['pipe', 'pipe', 'pipe'] });
    children.push(child);
    let stdout = '';
    let stderr = '';
    child.stdout!.setEncoding('utf8').on('data', (c: string) => { stdout += c; });
    child.stderr!.setEncoding('utf8').on('data', (c: string) => { stderr += c; });
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    const answered = (id: number) => stdout.split('\n').some((line) => line.includes(`"id":${id},`) || line.includes(`"id":${id}}`));
    const send = (message: unknown) => child.stdin!.write(`${JSON.stringify(message)}\n`);
    send(kInitialize);
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'chatty', arguments: {} } });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'chatty_pool', arguments: {} } });
    await until(() => answered(1) && answered(2), 15_000, 'both calls answered');
    child.stdin!.end();
    expect(await exited, stderr).toBe(0);

    const lines = stdout.split('\n').filter((line) => line !== '');
    for (const line of lines) expect(JSON.parse(line), line).toMatchObject({ jsonrpc: '2.0' });
    const byId = new Map(lines.map((line) => JSON.parse(line) as { id: number; result?: unknown }).map((m) => [m.id, m.result]));
    expect(byId.get(1)).toMatchObject({ content: [{ type: 'text', text: 'done' }] });
    expect(byId.get(2)).toMatchObject({ content: [{ type: 'text', text: 'done in the pool' }] });
    for (const text of ['console-tools: top level of thread 0', 'chatty: log', 'chatty: info', 'chatty: debug', "chatty: 'dir'", 'chatty: group', 'chatty: count: 1', 'chatty: after an await', 'chatty_pool: log', 'chatty_pool: info']) {
      expect(stderr).toContain(text);
    }
    expect(stderr).toMatch(/console-tools: top level of thread [1-9]/); // the pool thread's import
    expect(stderr).toMatch(/│.*chatty.*│/); // console.table
  });
});

describe('serveStdioServer: console', () => {
  it('with an output of its own, the console is left alone; it is back as it was once process.stdout was served', async () => {
    const log = console.log;
    const input = new PassThrough();
    const output = new PassThrough();
    const served = serveStdioServer({ tools: kTools, input, output, log: () => undefined, poolThreads: 1 });
    input.end();
    await served;
    expect(console.log).toBe(log);

    const stdin = new PassThrough();
    const seen: Array<() => void> = [];
    const servedOnStdout = serveStdioServer({ tools: kTools, input: stdin, log: () => undefined, poolThreads: 1, onServing: () => { seen.push(console.log); } });
    await until(() => seen.length > 0, 15_000, 'serving');
    expect(seen[0]).not.toBe(log);
    stdin.end();
    await servedOnStdout;
    expect(console.log).toBe(log);
  });
});
