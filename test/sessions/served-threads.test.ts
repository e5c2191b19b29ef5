import { once } from 'node:events';
import { Worker, threadId } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { SessionStore } from '../../src/sessions/store.js';

/**
 * A legacy session's DELETE tells only the threads that served the session to cancel what of it
 * runs (SessionStore.delete's bits): a thread that found the session must be among them, or its
 * request would run on after the DELETE.
 */
describe('the threads a session DELETE names', () => {
  it('are those that looked the session up, and only they', async () => {
    const store = SessionStore.create(16, 8);
    const created = store.create(undefined, 0, 'ip:a', 10);
    if (!created.ok) throw new Error('create failed');
    const worker = new Worker(new URL('../fixtures/session-lookups.mjs', import.meta.url), {
      workerData: { store: store.descriptor, gate: new SharedArrayBuffer(8), ids: new SharedArrayBuffer(32), served: new SharedArrayBuffer(64), rounds: 0, workers: 1, index: 0 },
    });
    await once(worker, 'message');
    // Only its creator (this thread) served the first session: its DELETE names no other thread.
    const alone = store.delete(store.lookup(created.id, undefined, 60_000));
    expect(store.threadsOf(alone)).toEqual([threadId]);
    expect(store.namesOthers(alone)).toBe(false);
    await once(worker, 'exit');
    // A second session looked up by a thread of its own: its DELETE names that thread too.
    const second = store.create(undefined, 0, 'ip:a', 10);
    if (!second.ok) throw new Error('create failed');
    const gate = new SharedArrayBuffer(8);
    const ids = new SharedArrayBuffer(32);
    new Uint8Array(ids).set(new TextEncoder().encode(second.id));
    const reader = new Worker(new URL('../fixtures/session-lookups.mjs', import.meta.url), {
      workerData: { store: store.descriptor, gate, ids, served: new SharedArrayBuffer(64), rounds: 1, workers: 1, index: 0 },
    });
    await once(reader, 'message');
    Atomics.store(new Int32Array(gate), 0, 1);
    // The reader looks it up until the DELETE: wait until it has found it at least once.
    const seen = store.lookup(second.id, undefined, 60_000);
    await new Promise((resolve) => setTimeout(resolve, 50));
    const both = store.delete(seen);
    expect(store.threadsOf(both).sort()).toEqual([threadId, reader.threadId].sort());
    expect(store.namesOthers(both)).toBe(true);
    // A second DELETE of the same session names no one (the first one ended it).
    expect(store.delete(seen)).toBe(0);
    await once(reader, 'exit');
  });

  it('include every thread whose lookup found the session, while another thread races its DELETE', async () => {
    const kWorkers = 1;
    const kRounds = 20_000;
    const store = SessionStore.create(64, 8);
    const gate = new SharedArrayBuffer(8);
    const ids = new SharedArrayBuffer(32);
    const served = new SharedArrayBuffer((kRounds + 1) * kWorkers * 4);
    const g = new Int32Array(gate);
    const workers = Array.from({ length: kWorkers }, (_, index) => new Worker(new URL('../fixtures/session-lookups.mjs', import.meta.url), {
      workerData: { store: store.descriptor, gate, ids, served, rounds: kRounds, workers: kWorkers, index },
    }));
    await Promise.all(workers.map((w) => once(w, 'message')));
    const threads = workers.map((w) => w.threadId);
    const named: number[][] = [];
    const encoder = new TextEncoder();
    for (let round = 1; round <= kRounds; round++) {
      const created = store.create(undefined, 0, 'ip:a', 10);
      if (!created.ok) throw new Error(`round ${round}: create failed (${created.reason})`);
      new Uint8Array(ids).set(encoder.encode(created.id));
      Atomics.store(g, 1, 0);
      Atomics.store(g, 0, round);
      // Let the workers get going for a varying while, so the DELETE lands anywhere in their loops.
      const until = performance.now() + (round % 7) * 0.01;
      while (performance.now() < until) { /* spin */ }
      named[round] = store.threadsOf(store.delete(store.lookup(created.id, undefined, 60_000)));
      while (Atomics.load(g, 1) < kWorkers) { /* each worker's lookup fails now */ }
    }
    await Promise.all(workers.map((w) => once(w, 'exit')));
    const s = new Int32Array(served);
    const missed: string[] = [];
    let found = 0;
    for (let round = 1; round <= kRounds; round++) {
      for (let w = 0; w < kWorkers; w++) {
        if (s[round * kWorkers + w] === 0) continue;
        found++;
        if (!named[round]!.includes(threads[w]!)) missed.push(`round ${round}: worker ${threads[w]} found the session, the DELETE named ${named[round]!.join(', ')}`);
      }
    }
    expect(missed.slice(0, 5)).toEqual([]);
    // The races happened: workers found sessions, and DELETEs landed before some workers did.
    expect(found).toBeGreaterThan(kRounds / 2);
    expect(found).toBeLessThan(kRounds * kWorkers);
  });
});
