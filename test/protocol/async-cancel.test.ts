// Async runs and cancellation from another thread: the run hears a cancel through its thread's one
// cancel watcher (no AbortController, no per-request wait), whether or not the handler ever reads
// ctx.signal; a ctx.signal read late still aborts. A peer worker attaches the engine's registry.
import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { collectCatalog } from '../../src/catalog/catalog.js';
import { Engine } from '../../src/protocol/engine.js';
import type { EngineConfig } from '../../src/protocol/engine.js';
import { createRegistry } from '../../src/registry/index.js';
import { ServerCounters, Counter } from '../../src/telemetry/counters.js';
import { defineTool } from '../../src/tools/define.js';
import { until } from '../helpers/wait.js';
import { FakeReply, info, tick } from './helpers.js';

const peerUrl = new URL('../fixtures/registry-peer.mjs', import.meta.url);
const started: Worker[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

const noArgs = { type: 'object', properties: {} };
const release: Array<() => void> = [];
const seen: string[] = [];

const tools = [
  // Async and never touches ctx.signal (nor ctx.cancelled): only the run can hear the cancel.
  defineTool({ name: 'deaf', description: 'Never ends.', inputSchema: noArgs, handler: () => new Promise<string>(() => {}) }),
  // Reads ctx.signal only after the test lets it (late), then waits for the abort.
  defineTool({
    name: 'late', description: 'Reads ctx.signal late.', inputSchema: noArgs,
    handler: async (_a, ctx) => {
      await new Promise<void>((r) => release.push(r));
      const signal = ctx.signal;
      if (signal.aborted) {
        seen.push(`already:${(signal.reason as Error).name}`);
        return 'already';
      }
      return new Promise<string>((resolve) => signal.addEventListener('abort', () => {
        seen.push(`aborted:${(signal.reason as Error).name}:${(signal.reason as { reason?: string }).reason}`);
        resolve('stopped');
      }));
    },
  }),
];

function engine(streamCancelTimeoutMs = 60_000): { engine: Engine; config: EngineConfig } {
  const config: EngineConfig = {
    registry: createRegistry({ inFlightCapacity: 64 }),
    counters: ServerCounters.create(4),
    catalog: collectCatalog(tools),
    serverInfo: { name: 'async-cancel-test', version: '1.0.0' },
    streamCancelTimeoutMs,
    clientRequestTimeoutMs: 300_000,
    log: () => {},
    stateKeys: [new Uint8Array(32).fill(7)],
  };
  return { engine: new Engine(config), config };
}

async function peer(config: EngineConfig): Promise<(message: object) => Promise<Record<string, unknown>>> {
  const worker = new Worker(peerUrl, { workerData: { registry: config.registry.descriptor } });
  started.push(worker);
  const next = async () => (await once(worker, 'message'))[0] as Record<string, unknown>;
  await next();
  return async (message) => { const reply = next(); worker.postMessage(message); return reply; };
}

describe('async runs, cancelled from another thread', () => {
  it('reach a run whose handler never touches ctx.signal: stream ended, no response, killed after the timeout', async () => {
    const { engine: e, config } = engine(30);
    const ask = await peer(config);
    const reply = new FakeReply();
    const scope = info('legacy');
    e.handleRequest('d1', 'tools/call', { name: 'deaf' }, scope, reply);
    await new Promise((r) => setImmediate(r)); // the turn ends with the run still running: it is armed
    expect(config.registry.watching).toBe(1); // the run waits through the thread's watcher
    expect(await ask({ op: 'cancel', id: 'd1', reason: 'from the pool', scope: scope.scope })).toEqual({ ok: true });
    await until(() => reply.calls.includes('cancelled'));
    expect(reply.calls).toEqual(['started', 'cancelled']);
    expect(config.registry.watching).toBe(0);
    await until(() => reply.calls.includes('released'));
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']);
    expect(config.counters.sum(Counter.Killed)).toBe(1);
    expect(config.registry.inFlight('d1', scope.scope)).toBe(false);
  });

  /** Starts the `late` tool as `id` and waits until it parks before reading ctx.signal. */
  async function startLate(id: string) {
    const { engine: e, config } = engine();
    const ask = await peer(config);
    const reply = new FakeReply();
    const scope = info('legacy');
    seen.length = 0;
    release.length = 0;
    e.handleRequest(id, 'tools/call', { name: 'late' }, scope, reply);
    await until(() => release.length === 1);
    return { config, ask, reply, scope };
  }

  it('ctx.signal read late (after the run started waiting) still aborts, with the reason', async () => {
    const { config, ask, reply, scope } = await startLate('l1');
    release[0]!(); // the handler now reads ctx.signal, long after the run parked on the watcher
    await tick();
    expect(await ask({ op: 'cancel', id: 'l1', reason: 'late but heard', scope: scope.scope })).toEqual({ ok: true });
    await until(() => reply.calls.includes('released'));
    expect(seen).toEqual(['aborted:CancelledError:late but heard']);
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']); // its 'stopped' is not sent
    expect(config.registry.watching).toBe(0);
  });

  it('ctx.signal first read after the cancel landed is already aborted', async () => {
    const { config, ask, reply, scope } = await startLate('l2');
    expect(await ask({ op: 'cancel', id: 'l2', reason: 'before the read', scope: scope.scope })).toEqual({ ok: true });
    await until(() => reply.calls.includes('cancelled'));
    release[0]!();
    await until(() => reply.calls.includes('released'));
    expect(seen).toEqual(['already:CancelledError']);
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']);
  });

  it('a run that ends without a cancel leaves nothing with the watcher', async () => {
    const { engine: e, config } = engine();
    const reply = new FakeReply();
    release.length = 0;
    e.handleRequest('n1', 'tools/call', { name: 'late' }, info('legacy'), reply);
    await new Promise((r) => setImmediate(r)); // armed at the end of its first turn
    expect(config.registry.watching).toBe(1);
    await until(() => release.length === 1);
    release[0]!();
    await tick();
    // The handler now waits on ctx.signal: still one entry (the handle), not two.
    expect(config.registry.watching).toBe(1);
    expect(e.cancelAll('done')).toBe(1);
    await until(() => reply.calls.includes('released'));
    expect(config.registry.watching).toBe(0);
  });
});
