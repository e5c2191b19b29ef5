import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';
import type { HandleRef, TrackHandle } from '../../src/index.js';

const started: Worker[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

describe('a reason read right after the flag, in another thread', () => {
  it('is the reason of the cancel that raised the flag (the row is published before the flag rises)', async () => {
    const reg = createRegistry();
    const rounds = 400;
    const handles: TrackHandle[] = [];
    for (let i = 0; i < rounds; i++) {
      const h = reg.track(i, 'session:reason-after-flag');
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
      expect(reg.cancel(i, `reason ${i}`, 'session:reason-after-flag')).toEqual({ ok: true });
      if (reg.reason(i, 'session:reason-after-flag') !== `reason ${i}`) missingHere.push(i);
      while (Atomics.load(control, 1) === 1 && Atomics.load(control, 0) === i) Atomics.wait(control, 1, 1, 1);
      reg.clear(i, 'session:reason-after-flag'); // the reader is done with it (and the scope's quota is 256)
    }
    const [result] = (await done) as [{ observed: number; wrong: Array<{ i: number; reason: string | null }> }];
    expect({ wrong: result.wrong, missingHere }).toEqual({ wrong: [], missingHere: [] });
    expect(result.observed).toBe(rounds);
    for (const h of handles) reg.untrack(h);
    expect(reg.verify()).toEqual([]);
  });
});
