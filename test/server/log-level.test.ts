import { kNodeReusePort, skipNote } from '../helpers/adapters.js';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
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

describe('cors option', () => {
  it('resolves to { origins } or undefined; anything else is invalid_option', () => {
    expect(resolveOptions({ tools: [] }).cors).toBeUndefined();
    expect(resolveOptions({ tools: [], cors: { origins: ['https://a.example'] } }).cors).toEqual({ origins: ['https://a.example'] });
    for (const bad of [{}, { origins: 'https://a.example' }, { origins: [1] }, { origins: [''] }, null]) {
      expect(() => resolveOptions({ tools: [], cors: bad as { origins: string[] } }), JSON.stringify(bad)).toThrow(/cors\.origins/);
    }
  });
});
