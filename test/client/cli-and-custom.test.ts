import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { main as customTransportExample } from '../../examples/custom-transport.js';
import { recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const bin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

describe('sluice call', () => {
  it('prints progress and the result; Ctrl-C cancels the call, the server sees it, the exit code is non-zero', async () => {
    running = await startServer();
    const ok = spawn(process.execPath, [bin, 'call', '--json', running.address.url, 'echo', '{"text":"hi"}']);
    let out = '';
    ok.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    const [code] = await once(ok, 'exit');
    expect(code).toBe(0);
    expect(JSON.parse(out).content).toEqual([{ type: 'text', text: 'hi' }]);

    const record = recordPath();
    const child = spawn(process.execPath, [bin, 'call', '--era', 'legacy', running.address.url, 'block', JSON.stringify({ ms: 10_000, tick: 20, record })]);
    let err = '';
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    const exited = once(child, 'exit');
    try {
      await until(() => err.includes('progress 2'), 10_000, 'progress on stderr');
      child.kill('SIGINT');
      const [exitCode] = await exited;
      expect(exitCode).toBe(130);
      expect(err).toContain('cancelled: interrupted (SIGINT)');
      await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the server to see the cancel');
    } finally {
      if (child.exitCode === null) child.kill('SIGKILL');
    }
  });

  it('talks to a stdio server command, and a timeout cancels with a non-zero exit', async () => {
    const child = spawn(process.execPath, [bin, 'call', '--stdio', `${process.execPath} ${bin} serve --stdio`, 'sleep', '{"ms":5000}', '--timeout', '100']);
    let err = '';
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    const [code] = await once(child, 'exit');
    expect(code).toBe(1);
    expect(err).toContain('timed out after 100 ms');
  });
});

describe('custom transports', () => {
  it('the documented in-process example works', async () => {
    expect(await customTransportExample()).toBe('Hello, world!');
  });
});
