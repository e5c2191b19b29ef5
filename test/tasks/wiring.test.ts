/**
 * The `tasks` option and where the store lives: checked limits, on by default, `false` for off; the
 * supervisor fails a lost worker's tasks (`runnerLost` with its thread id) and closes the store
 * after its workers; stdio and the in-process HTTP form close it too.
 */
import { describe, expect, it } from 'vitest';
import { MemoryTaskStore, createServer, defineTool, kDefaultTaskLimits } from '../../src/index.js';
import type { TaskStore } from '../../src/index.js';
import { resolveOptions } from '../../src/server/options.js';
import { stdioServer } from '../helpers/stdio.js';

const kTools = new URL('../fixtures/server-tools.mjs', import.meta.url);

/** A MemoryTaskStore that notes what the server asks of it. */
class RecordingStore extends MemoryTaskStore {
  readonly calls: string[] = [];
  override async runnerLost(runner: string, reason: string): Promise<number> {
    this.calls.push(`runnerLost ${runner}: ${reason}`);
    return super.runnerLost(runner, reason);
  }
  override async close(): Promise<void> {
    this.calls.push('close');
    return super.close();
  }
}

describe('the tasks option', () => {
  it('is on by default with the default limits; false turns it off; limits merge over the defaults', () => {
    expect(resolveOptions({ tools: [] }).tasks).toEqual({ limits: kDefaultTaskLimits });
    expect(resolveOptions({ tools: [], tasks: false }).tasks).toBe(false);
    expect(resolveOptions({ tools: [], tasks: { limits: { maxTasks: 50, maxTasksPerOwner: 5 } } }).tasks).toEqual({ limits: { ...kDefaultTaskLimits, maxTasks: 50, maxTasksPerOwner: 5, maxTasksPerClient: 50 } });
    // A per-client bound left at its default follows the bounds around it: under maxTasks, over a larger maxTasksPerOwner.
    expect(resolveOptions({ tools: [], tasks: { limits: { maxTasksPerOwner: 5_000 } } }).tasks).toMatchObject({ limits: { maxTasksPerOwner: 5_000, maxTasksPerClient: 5_000 } });
    expect(() => resolveOptions({ tools: [], tasks: { limits: { maxTasksPerOwner: 50, maxTasksPerClient: 10 } } })).toThrow(/maxTasksPerOwner \(50\) must not exceed tasks\.limits\.maxTasksPerClient \(10\)/);
    // Structured-cloneable: the resolved options travel to every worker.
    expect(structuredClone(resolveOptions({ tools: [], tasks: { store: new RecordingStore() } }).tasks)).toEqual({ limits: kDefaultTaskLimits });
  });

  it('refuses bad limits and stores with invalid_option errors that name the option', () => {
    const refused = (tasks: unknown) => {
      try {
        resolveOptions({ tools: [], tasks: tasks as false });
        return 'accepted';
      } catch (error) {
        return `${(error as { code: string }).code}: ${(error as Error).message}`;
      }
    };
    expect(refused({ limits: { maxTasks: 0 } })).toMatch(/^invalid_option: tasks\.limits\.maxTasks must be an integer from 1/);
    expect(refused({ limits: { maxTaskBytes: 1.5 } })).toMatch(/^invalid_option: tasks\.limits\.maxTaskBytes/);
    expect(refused({ limits: { pollIntervalMs: '250' } })).toMatch(/^invalid_option: tasks\.limits\.pollIntervalMs/);
    expect(refused({ limits: { ttl: 5 } })).toMatch(/^invalid_option: tasks\.limits\.ttl is not a task limit/);
    expect(refused({ limits: { defaultTtlMs: 10_000, maxTtlMs: 5_000 } })).toMatch(/^invalid_option: tasks\.limits\.defaultTtlMs \(10000\) must not exceed/);
    expect(refused({ store: { get() {} } })).toMatch(/^invalid_option: tasks\.store must implement TaskStore \(missing: create, list/);
    expect(refused(true)).toMatch(/^invalid_option: tasks must be false or/);
    expect(() => createServer({ tools: kTools, tasks: { limits: { maxTasks: -1 } } })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });
});

describe('where the store lives', () => {
  it('HTTP workers: when a worker exits its tasks are failed (runnerLost, its thread id), and the store closes after the workers', async () => {
    const store = new RecordingStore();
    const server = createServer({ tools: kTools, port: 0, workers: 2, tasks: { store } }, { log: () => {} });
    let ids: readonly number[] = [];
    try {
      await server.listen();
      ids = server.workerThreadIds;
      expect(ids.length).toBeGreaterThanOrEqual(1); // node:http without reusePort runs one
      const task = await store.create({ taskId: 'running', owner: 'session:a', dialect: 'modern', toolName: 'slow', runner: String(ids[0]) });
      expect(task.status).toBe('working');
      expect(store.calls).toEqual([]);
      // Watch before close: the store is emptied on close, so read the failure as it happens.
      const seen: string[] = [];
      store.watch('running', (t) => { if (t !== undefined) seen.push(`${t.status}: ${t.error?.message ?? ''}`); });
      await server.close();
      expect(seen).toEqual(['failed: the worker running this task exited']);
    } finally {
      await server.close();
    }
    expect(store.calls.slice(0, ids.length).sort()).toEqual(ids.map((id) => `runnerLost ${id}: the worker running this task exited`).sort());
    expect(store.calls.slice(ids.length)).toEqual(['close']);
  });

  it('tasks: false starts no store and serves as before', async () => {
    const server = createServer({ tools: kTools, port: 0, workers: 1, http: 'node', tasks: false }, { log: () => {} });
    try {
      const { url } = await server.listen();
      expect(url).toMatch(/^http:/);
    } finally {
      await server.close();
    }
  });

  it('in-process HTTP and stdio close the user\'s store with the server', async () => {
    const echo = defineTool({ name: 'echo', description: 'Says ok.', inputSchema: { type: 'object' }, handler: () => 'ok' });
    const inProcess = new RecordingStore();
    const server = createServer({ tools: [echo], port: 0, http: 'node', tasks: { store: inProcess } }, { log: () => {} });
    try {
      await server.listen();
    } finally {
      await server.close();
    }
    expect(inProcess.calls).toEqual(['close']);

    const forStdio: TaskStore & { calls: string[] } = new RecordingStore();
    const stdio = stdioServer({ tools: [echo], tasks: { store: forStdio } });
    stdio.send({ jsonrpc: '2.0', id: 1, method: 'ping' });
    await expect.poll(() => stdio.lines.length).toBe(1);
    stdio.input.end();
    await stdio.done;
    expect(forStdio.calls).toEqual(['close']);
  });
});
