/** `sluice call --task` against the scripted task server (both dialects). */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { until } from '../helpers/server.js';
import { startScriptedServer } from '../client/task-server.js';
import type { ScriptedServer } from '../client/task-server.js';
import { kBin, runCli } from './helpers.js';

let server: ScriptedServer;
beforeAll(async () => { server = await startScriptedServer(); });
afterAll(async () => { await server.close(); });

const statusLine = /^\d\d:\d\d:\d\d\.\d{3} (working|input_required|completed|failed|cancelled)( .*)?$/;

describe('sluice call --task', () => {
  it.each(['modern', 'legacy'] as const)('%s: one stderr line per status change, the result on stdout', async (era) => {
    const run = await runCli(['call', server.url, 'work', '{}', '--task', '--era', era]);
    expect(run).toMatchObject({ code: 0, stdout: 'worked\n' });
    const lines = run.stderr.trim().split('\n');
    expect(lines[0]).toMatch(/^\d\d:\d\d:\d\d\.\d{3} working$/);
    expect(lines[1]).toMatch(/^sluice: task t\d+-work$/);
    expect(lines.at(-1)).toMatch(/ completed$/);
    for (const line of lines.filter((l) => !l.startsWith('sluice:'))) expect(line).toMatch(statusLine);
    if (era === 'modern') expect(lines.some((l) => l.endsWith('working halfway'))).toBe(true);
  });

  it('a failed task: the error, exit 1; --json prints the raw result', async () => {
    const failed = await runCli(['call', server.url, 'fail', '--task', '--era', 'modern']);
    expect(failed.code).toBe(1);
    expect(failed.stderr).toContain('the job broke (JSON-RPC error -32050)');
    expect(failed.stderr).toMatch(/ failed the job broke\n/);
    const json = await runCli(['call', server.url, 'work', '--task', '--json']);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout)).toEqual({ content: [{ type: 'text', text: 'worked' }] });
  });

  it('input the CLI cannot give: the task is cancelled, exit 1', async () => {
    const run = await runCli(['call', server.url, 'ask', '--task', '--era', 'modern']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('needs input (elicitation/create)');
    const id = /task (t\d+-ask)/.exec(run.stderr)![1]!;
    expect(server.tasks.get(id)!.status).toBe('cancelled');
  });

  it('a synchronous answer says so and prints the result', async () => {
    const run = await runCli(['call', server.url, 'sync', '--task']);
    expect(run).toMatchObject({ code: 0, stdout: 'sync sync\n' });
    expect(run.stderr).toContain('without a task');
  });

  it.each(['modern', 'legacy'] as const)('%s: Ctrl-C sends tasks/cancel, then exits 130', async (era) => {
    const child = spawn(process.execPath, [kBin, 'call', server.url, 'slow', '--task', '--era', era], { stdio: ['ignore', 'pipe', 'pipe'] });
    let stderr = '';
    child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
    child.stdout.resume();
    const closed = once(child, 'close');
    await until(() => /task (t\d+-slow)/.test(stderr), 10_000, 'the task');
    child.kill('SIGINT');
    const [code] = (await closed) as [number | null];
    expect(code).toBe(130);
    expect(stderr).toContain('sluice: cancelled: interrupted (SIGINT)');
    const id = /task (t\d+-slow)/.exec(stderr)![1]!;
    expect(server.tasks.get(id)!.status).toBe('cancelled');
  });

  it('--task goes with call only', async () => {
    expect(await runCli(['list', server.url, '--task'])).toMatchObject({ code: 2 });
  });
});
