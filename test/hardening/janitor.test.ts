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

describe('the janitor on an idle server', () => {
  it('reads neither table while nothing in it could go (no cancellation row, no thread gone): the tables stay out of memory', () => {
    // Page faults, not RSS: a first read of a page never written maps the kernel's shared zero page,
    // which some kernels count in RSS and others (6.18 here) do not; it is a fault either way. Every
    // thread of the process counts, so the bounds leave room for the test runner's own.
    const faults = () => process.resourceUsage().minorPageFault;
    const mib = () => process.memoryUsage().rss / 2 ** 20;
    const reg = createRegistry(); // the defaults: a 48 MiB in-flight table and a 19 MiB cancellation table, untouched
    const before = { faults: faults(), mib: mib() };
    for (let i = 0; i < 3; i++) expect(reg.cleanup(0)).toEqual({ removed: 0, inFlightRemoved: 0 });
    const afterSweeps = faults();
    expect(afterSweeps - before.faults).toBeLessThan(2_000); // 4 KiB pages: 2 000 is 8 MiB of 67
    expect(mib() - before.mib).toBeLessThan(16);
    // The measure sees a read of the tables: scan() reads every slot of both (67 MiB, ~17 000 pages).
    expect(reg.scan()).toEqual({ cancellationRows: 0, inFlightRows: 0 });
    expect(faults() - afterSweeps).toBeGreaterThan(10_000);
    // With a row to age out, the cancellation table is read, and the row goes.
    reg.seedCancellation('old', 's', 0, 'since 1970');
    expect(reg.cleanup(0)).toEqual({ removed: 1, inFlightRemoved: 0 });
    expect(reg.scan().cancellationRows).toBe(0);
  });
});
