import { kNodeReusePort, skipNote } from '../helpers/adapters.js';
import { describe, expect, it, vi } from 'vitest';
import { Client, HttpClientTransport } from '../../src/client/index.js';
import { createServer, defineTool } from '../../src/index.js';
import { SluiceError } from '../../src/errors.js';
import { filterLog, kServerLogLevels, resolveOptions } from '../../src/server/options.js';
import type { ServerLogLevel } from '../../src/server/options.js';
import { kToolsModule } from '../helpers/server.js';

describe('logLevel', () => {
  it('filterLog passes lines at the threshold or above, in one place', () => {
    const table: [ServerLogLevel, ServerLogLevel[]][] = [
      ['debug', ['debug', 'info', 'warn', 'error']],
      ['info', ['info', 'warn', 'error']],
      ['warn', ['warn', 'error']],
      ['error', ['error']],
    ];
    for (const [threshold, passed] of table) {
      const seen: ServerLogLevel[] = [];
      const log = filterLog(threshold, (level) => { seen.push(level); });
      for (const level of kServerLogLevels) log(level, 'x');
      expect(seen, threshold).toEqual(passed);
    }
  });

  it("defaults to 'warn'; anything but a level is invalid_option", () => {
    expect(resolveOptions({ tools: [] }).logLevel).toBe('warn');
    expect(resolveOptions({ tools: [], logLevel: 'debug' }).logLevel).toBe('debug');
    for (const bad of ['verbose', 'WARN', 3, null]) {
      const error = (() => { try { resolveOptions({ tools: [], logLevel: bad as ServerLogLevel }); } catch (e) { return e; } return undefined; })();
      expect(error, String(bad)).toBeInstanceOf(SluiceError);
      expect((error as SluiceError).code).toBe('invalid_option');
    }
  });

  it.skipIf(kNodeReusePort)(`the server hook gets only lines at logLevel or above (a warning from the supervisor, here)${skipNote(!kNodeReusePort, `Node ${process.versions.node} shares the port, so the supervisor has no one-thread warning to filter`)}`, async () => {
    // node:http with 2 workers on Node 20 warns that it serves with one.
    const run = async (logLevel: ServerLogLevel | undefined) => {
      const lines: [string, string][] = [];
      const server = createServer({ tools: kToolsModule, port: 0, workers: 2, http: 'node', janitor: false, ...(logLevel === undefined ? {} : { logLevel }) }, { log: (level, message) => { lines.push([level, message]); } });
      await server.listen();
      await server.close();
      return lines;
    };
    expect((await run(undefined)).some(([level, m]) => level === 'warn' && m.includes('1 HTTP thread'))).toBe(true);
    expect((await run('error')).some(([, m]) => m.includes('1 HTTP thread'))).toBe(false);
  });
});

describe('a log hook that fails', () => {
  const boom = defineTool({ name: 'boom', description: 'Throws.', inputSchema: { type: 'object' }, handler: () => { throw new Error('tool failure'); } });

  it('throwing or rejecting, it costs no answer and no line: the lines go to stderr, after one saying why', async () => {
    for (const [kind, hook] of [['throws', () => { throw new Error('hook bug'); }], ['rejects', async () => { throw new Error('hook bug'); }]] as const) {
      const written: string[] = [];
      const escaped: unknown[] = [];
      const onEscape = (error: unknown) => escaped.push(error);
      process.on('uncaughtException', onEscape);
      process.on('unhandledRejection', onEscape);
      const stderr = vi.spyOn(process.stderr, 'write').mockImplementation((chunk: string | Uint8Array) => { written.push(String(chunk)); return true; });
      const server = createServer({ tools: [boom], port: 0, janitor: false }, { log: hook });
      try {
        const client = new Client(new HttpClientTransport({ url: (await server.listen()).url }));
        // Before: the failure's log line threw before the answer went out (the call waited for ever), then reached uncaughtException.
        for (let i = 0; i < 2; i++) expect((await client.callTool('boom', {}, { timeoutMs: 5_000 })).isError, kind).toBe(true);
        await client.close();
        await new Promise((resolve) => setTimeout(resolve, 50));
      } finally {
        await server.close();
        stderr.mockRestore();
        process.off('uncaughtException', onEscape);
        process.off('unhandledRejection', onEscape);
      }
      expect(escaped, kind).toEqual([]);
      expect(written[0], kind).toBe('sluice: the log hook failed (Error: hook bug); the lines it fails on go to stderr\n');
      expect(written.filter((line) => line.startsWith('sluice: tool boom threw: Error: tool failure\n')), kind).toHaveLength(2);
    }
  });
});

describe('cors option', () => {
  it('resolves to { origins } or undefined; anything else is invalid_option', () => {
    expect(resolveOptions({ tools: [] }).cors).toBeUndefined();
    expect(resolveOptions({ tools: [], cors: { origins: ['https://a.example'] } }).cors).toEqual({ origins: ['https://a.example'] });
    for (const bad of [{}, { origins: 'https://a.example' }, { origins: [1] }, { origins: [''] }, null]) {
      expect(() => resolveOptions({ tools: [], cors: bad as { origins: string[] } }), JSON.stringify(bad)).toThrow(/cors\.origins/);
    }
  });
});
