import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';
import type { HandleRef, Registry, TrackHandle } from '../../src/index.js';

const started: Worker[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

const kScope = 'session:reason-after-flag';

/** Threads that only spin: with them, the two test threads outnumber the cores and get preempted. */
function hogs(count: number): () => void {
  const stop = new Int32Array(new SharedArrayBuffer(4));
  const source = 'const { workerData } = require("node:worker_threads"); const w = new Int32Array(workerData); while (Atomics.load(w, 0) === 0);';
  started.push(...Array.from({ length: count }, () => new Worker(source, { eval: true, workerData: stop.buffer })));
  return () => Atomics.store(stop, 0, 1);
}

/**
 * Tracks `rounds` requests; a worker (fixtures/reason-reader.mjs) spins on each in turn and reads its
 * reason the moment its flag rises, while this thread cancels it (`beforeCancel` runs just before).
 * Returns the reasons the worker got wrong and those this thread did not find right after `cancel`.
 */
async function readRightAfterFlag(reg: Registry, rounds: number, beforeCancel: (i: number) => void = () => {}) {
  const handles: TrackHandle[] = [];
  for (let i = 0; i < rounds; i++) {
    const h = reg.track(i, kScope);
    if (!h.ok) throw new Error(h.error);
    handles.push(h);
  }
  const control = new Int32Array(new SharedArrayBuffer(8));
  const missingHere: number[] = [];
  Atomics.store(control, 0, -1);
  const worker = new Worker(new URL('./fixtures/reason-reader.mjs', import.meta.url), {
    workerData: { registry: reg.descriptor, control: control.buffer },
  });
  started.push(worker);
  reg.watch(worker);
  const done = once(worker, 'message');
  const refs: HandleRef[] = handles.map((h) => h.ref);
  worker.postMessage({ refs });
  for (let i = 0; i < rounds; i++) {
    // Cancel only once the reader spins on this very handle, so it sees the flag the moment it rises.
    while (Atomics.load(control, 0) !== i || Atomics.load(control, 1) !== 1) Atomics.wait(control, 1, 0, 1);
    beforeCancel(i);
    expect(reg.cancel(i, `reason ${i}`, kScope)).toEqual({ ok: true });
    if (reg.reason(i, kScope) !== `reason ${i}`) missingHere.push(i);
    while (Atomics.load(control, 1) === 1 && Atomics.load(control, 0) === i) Atomics.wait(control, 1, 1, 1);
    reg.clear(i, kScope); // the reader is done with it (and the scope's quota is 256)
  }
  const [result] = (await done) as [{ observed: number; wrong: Array<{ i: number; reason: string | null }> }];
  for (const h of handles) reg.untrack(h);
  return { observed: result.observed, wrong: result.wrong, missingHere };
}

describe('a reason read right after the flag, in another thread', () => {
  // `cancel` raises the flag before it publishes the row that holds the reason; a reader that sees
  // the flag first waits for the canceller in between, however long that takes.
  it('is the reason of the cancel that raised the flag, with the threads outnumbering the cores', async () => {
    const stopHogs = hogs(3);
    const reg = createRegistry();
    const rounds = 1000;
    const result = await readRightAfterFlag(reg, rounds);
    stopHogs();
    expect({ wrong: result.wrong, missingHere: result.missingHere }).toEqual({ wrong: [], missingHere: [] });
    expect(result.observed).toBe(rounds);
    expect(reg.verify()).toEqual([]);
  });

  // The window made long on purpose: at the global cap, the cancel evicts a batch (a scan and sort of
  // every row: milliseconds at this size) between raising the flag and publishing its row. A reader
  // whose wait was bounded in time (5 ms, the first version) missed the reason here every time;
  // being descheduled there does the same, only rarely.
  it('is the reason of the cancel that raised the flag when that cancel evicts at the cap in between', async () => {
    const maxRows = 20_000;
    const reg = createRegistry({ maxRows, maxRowsPerScope: Infinity });
    let filler = 0;
    const evictionsBefore: number[] = [];
    const result = await readRightAfterFlag(reg, 6, (i) => {
      // Back to the cap (one counters() call: it scans the in-flight table). The fillers' scope is
      // the largest, so eviction takes them, never the rows under test.
      const counts = reg.counters();
      evictionsBefore[i] = counts.evictions;
      for (let n = counts.cancellationRows; n < maxRows; n++) expect(reg.cancel(filler++, 'filler', 'session:filler').ok).toBe(true);
    });
    expect({ wrong: result.wrong, missingHere: result.missingHere }).toEqual({ wrong: [], missingHere: [] });
    expect(result.observed).toBe(6);
    // Every cancel under test evicted a batch (so its window held a reclaim).
    evictionsBefore.push(reg.counters().evictions);
    for (let i = 0; i < 6; i++) expect(evictionsBefore[i + 1]! - evictionsBefore[i]!).toBe(maxRows / 20);
    expect(reg.verify()).toEqual([]);
  });
});
