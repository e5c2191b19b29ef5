// Pool threads die with their HTTP worker and never report it themselves; the supervisor must
// release their registry roster entries when that worker exits, or every crash leaks one entry per
// pool thread until pool tools fail with "all roster entries are taken".
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/registry/index.js';
import { ToolPool } from '../../src/tools/pool.js';
import { threadEntry } from '../../src/process/thread-entry.js';
import { post } from '../helpers/http.js';
import { modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';

const kTools = new URL('../fixtures/supervisor-tools.mjs', import.meta.url);
import type { TestServer } from '../helpers/server.js';
import { adapterCases } from '../helpers/adapters.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const kModern = { 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call' };

function call(url: string, id: number, name: string, args: Record<string, unknown>) {
  return post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args, _meta: modernMeta() } }, { ...kModern, 'mcp-name': name });
}

/** Resolves once the server answers again (a replacement worker listens), bounded. */
async function serving(url: string): Promise<void> {
  const deadline = Date.now() + 10_000;
  for (let i = 0; ; i++) {
    const ok = await call(url, 5000 + i, 'echo', { text: 'up?' }).then((r) => r.status === 200, () => false);
    if (ok) return;
    if (Date.now() > deadline) throw new Error(`no replacement worker is serving: ${running?.logs.join('\n')}`);
    await new Promise((r) => setTimeout(r, 20));
  }
}

// Entries: the supervisor, one HTTP worker, its pool thread, and one spare. A single leaked
// pool-thread entry per crash fills this roster on the second crash.
const cases = adapterCases('HTTP worker crashes and the pool (crash)', [
  // An uncaught error: the worker's crash handler runs (and closes the pool itself).
  { crashTool: 'crash', http: 'uws' as const },
  // An abrupt end, no JavaScript clean-up in the worker (node:http: uWS would abort the process).
  { crashTool: 'hard_exit', http: 'node' as const },
]);

describe('HTTP worker crashes and the pool', () => {
  it.each(cases)('release the dead worker\'s pool threads ($crashTool, $http): pool tools keep working on a roster with room for one worker', async ({ crashTool, http }) => {
    running = await startServer({ tools: kTools, http, workers: 1, poolThreads: 1, registry: { maxThreads: 4 } });
    const { url } = running.address;
    for (let crash = 0; crash < 5; crash++) {
      const res = await call(url, crash, 'spin', { ms: 1 });
      expect(JSON.parse(res.body).result, `pool call before crash ${crash}: ${res.body}`).toMatchObject({ structuredContent: { finished: true } });
      const [before] = running.server.workerThreadIds;
      await call(url, 100 + crash, crashTool, {}).catch(() => undefined);
      await until(() => running!.server.workerThreadIds.length === 1 && running!.server.workerThreadIds[0] !== before, 10_000, `a replacement worker after crash ${crash}`);
      await serving(url);
    }
    const last = await call(url, 999, 'spin', { ms: 1 });
    expect(JSON.parse(last.body).result).toMatchObject({ structuredContent: { finished: true } });
    expect(running.logs.filter((l) => /roster|replacement worker failed/.test(l))).toEqual([]);
  });
});

describe('ToolPool start and stop', () => {
  // Terminating a thread while it still instantiates ES modules can abort the whole process
  // (`facade->InstantiateModule` assertion): close() lets starting threads finish loading first.
  it('close() right after construction waits for the threads still loading their tools module', async () => {
    const record = recordPath();
    process.env.SLUICE_TEST_LOADED = record; // pool threads copy the environment when they start
    const registry = createRegistry({ maxThreads: 8 });
    const threads: Array<[number, boolean]> = [];
    try {
      const pool = new ToolPool({
        entry: threadEntry('pool-worker'),
        toolsModule: new URL('../fixtures/supervisor-slow-tools.mjs', import.meta.url).href,
        registry, registryDescriptor: registry.descriptor, threads: 2,
        onThread: (id, alive) => { threads.push([id, alive]); },
      });
      await pool.close();
      expect(recorded(record)).toHaveLength(2);
      // Each thread was reported once alive, then once gone.
      expect(threads.filter(([, alive]) => alive)).toHaveLength(2);
      expect(threads.filter(([, alive]) => !alive).map(([id]) => id).sort()).toEqual(threads.filter(([, alive]) => alive).map(([id]) => id).sort());
    } finally {
      delete process.env.SLUICE_TEST_LOADED;
    }
  });
});
