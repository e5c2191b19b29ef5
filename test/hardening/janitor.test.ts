import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';

describe('the janitor racing cancels and completions', () => {
  it('sweeps nothing that is live, loses no flag, and leaves exact counts', async () => {
    const reg = createRegistry({ maxRowsPerScope: 1000 });
    const workers = [0, 1].map((i) => {
      const w = new Worker(new URL('../fixtures/registry-churn.mjs', import.meta.url), { workerData: { registry: reg.descriptor, scope: `session:churn-${i}`, ms: 1500 } });
      reg.watch(w);
      return w;
    });
    const reports = workers.map(async (w) => (await once(w, 'message'))[0] as { completed: number; flaggedSeen: number; wrongFlag: number });
    const exits = workers.map((w) => once(w, 'exit'));
    // The janitor at its most aggressive: a TTL of 0 removes every cancellation row it sees.
    let sweeps = 0;
    let swept = 0;
    const deadline = Date.now() + 1500;
    while (Date.now() < deadline) {
      const r = reg.cleanup(0);
      swept += r.removed;
      expect(r.inFlightRemoved).toBe(0); // both threads are alive: none of their rows may go
      sweeps++;
      await new Promise((resolve) => setImmediate(resolve));
    }
    const done = await Promise.all(reports);
    await Promise.all(exits);
    expect(sweeps).toBeGreaterThan(10);
    for (const r of done) {
      expect(r.completed).toBeGreaterThan(1000);
      expect(r.wrongFlag).toBe(0);
    }
    reg.cleanup(0);
    expect(reg.scan()).toEqual({ cancellationRows: 0, inFlightRows: 0 });
    expect(reg.counters()).toMatchObject({ inFlight: 0, cancellationRows: 0 });
    const c = reg.counters();
    expect(c.tracked).toBe(c.untracked);
    expect(swept).toBeGreaterThanOrEqual(0);
    expect(reg.verify()).toEqual([]);
  });
});
