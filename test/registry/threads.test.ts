import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';
import type { Registry, TrackHandle } from '../../src/index.js';

const peerUrl = new URL('../fixtures/registry-peer.mjs', import.meta.url);
const started: Worker[] = [];

afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

interface Peer {
  worker: Worker;
  ask(message: object): Promise<Record<string, unknown>>;
  next(): Promise<Record<string, unknown>>;
}

async function peer(reg: Registry): Promise<Peer> {
  const worker = new Worker(peerUrl, { workerData: { registry: reg.descriptor } });
  started.push(worker);
  reg.watch(worker);
  const next = async () => (await once(worker, 'message'))[0] as Record<string, unknown>;
  await next();
  return { worker, next, ask: async (message) => { const reply = next(); worker.postMessage(message); return reply; } };
}

function tracked(reg: Registry, id: string | number, scope: string): TrackHandle {
  const h = reg.track(id, scope);
  if (!h.ok) throw new Error(h.error);
  return h;
}

describe('across threads', () => {
  it('a cancel on this thread is seen by a tool polling in another thread', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    const h = tracked(reg, 'poll-me', 'session:x');
    const spinning = new SharedArrayBuffer(4);
    expect(await p.ask({ op: 'poll', ref: h.ref, spinning })).toEqual({ waiting: true });
    const result = p.next();
    while (Atomics.load(new Int32Array(spinning), 0) === 0) await new Promise((r) => setTimeout(r, 1));
    reg.cancel('poll-me', 'stop polling', 'session:x');
    const reply = await result;
    expect(reply).toMatchObject({ observed: true, reason: 'stop polling' });
    expect(reply.spins).toBeGreaterThanOrEqual(1000); // it really was spinning before the cancel landed
  });

  it('a cancel on this thread fires an AbortSignal listener in another thread', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    const h = tracked(reg, 7, 'ip:192.0.2.1');
    expect(await p.ask({ op: 'signal', ref: h.ref })).toEqual({ waiting: true });
    const result = p.next();
    reg.cancel(7, 'client went away', 'ip:192.0.2.1');
    expect(await result).toEqual({ observed: true, name: 'CancelledError', reason: 'client went away' });
  });

  it('a cancel recorded in another thread reaches a request tracked here', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    const h = tracked(reg, 'here', 's');
    const fired = new Promise((resolve) => h.signal.addEventListener('abort', resolve));
    expect(await p.ask({ op: 'cancel', id: 'here', reason: 'from afar', scope: 's' })).toEqual({ ok: true });
    await fired;
    expect(h.cancelled).toBe(true);
    expect(h.reason).toBe('from afar');
  });

  it('whenCancelled hears a cancel from another thread through the thread\'s watcher, with no signal made', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    const a = tracked(reg, 'a', 's');
    const b = tracked(reg, 'b', 's');
    const heard: string[] = [];
    a.whenCancelled(() => heard.push('a'));
    b.whenCancelled(() => heard.push('b'));
    expect(reg.watching).toBe(2);
    expect(await p.ask({ op: 'cancel', id: 'a', reason: 'only a', scope: 's' })).toEqual({ ok: true });
    for (let i = 0; i < 200 && heard.length === 0; i++) await new Promise((r) => setTimeout(r, 2));
    expect(heard).toEqual(['a']);
    expect(reg.watching).toBe(1); // b is still awaited, and untracking it lets it go
    reg.untrack(b);
    expect(reg.watching).toBe(0);
    expect(a.reason).toBe('only a');
  });

  it('a signal read late (after whenCancelled parked the watcher) aborts on a cancel from another thread', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    const h = tracked(reg, 'late', 's');
    let heard = 0;
    h.whenCancelled(() => heard++);
    await new Promise((r) => setTimeout(r, 5));
    const signal = h.signal;
    const fired = new Promise<unknown>((resolve) => signal.addEventListener('abort', () => resolve(signal.reason)));
    expect(await p.ask({ op: 'cancel', id: 'late', reason: 'later', scope: 's' })).toEqual({ ok: true });
    expect(await fired).toMatchObject({ name: 'CancelledError', reason: 'later' });
    expect(heard).toBe(1);
    expect(reg.watching).toBe(0);
  });

  it('cleanup removes in-flight rows of a thread that exited without untracking', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    expect(await p.ask({ op: 'track', id: 'leaked', scope: 's' })).toMatchObject({ ok: true });
    const live = tracked(reg, 'live', 's');
    // A sweep while no thread has gone reads no in-flight row; it must not keep the next one from doing so.
    expect(reg.cleanup(30_000)).toEqual({ removed: 0, inFlightRemoved: 0 });
    const exited = once(p.worker, 'exit');
    p.worker.postMessage({ op: 'exit' });
    await exited;
    expect(reg.inFlight('leaked', 's')).toBe(true); // not until the sweep
    // The dead thread's row counts until swept, by counter as by scan.
    expect(reg.counters().inFlight).toBe(2);
    expect(reg.scan().inFlightRows).toBe(2);
    expect(reg.cleanup(30_000)).toEqual({ removed: 0, inFlightRemoved: 1 });
    expect(reg.inFlight('leaked', 's')).toBe(false);
    expect(reg.inFlight('live', 's')).toBe(true);
    expect(live.cancelled).toBe(false);
    expect(reg.counters()).toMatchObject({ inFlight: 1, inFlightSwept: 1 });
    expect(reg.scan().inFlightRows).toBe(1);
  });

  it('cleanup(Infinity) sweeps a dead thread\'s rows and keeps every cancellation row, however old', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    await p.ask({ op: 'track', id: 'leaked', scope: 's' });
    reg.seedCancellation('ancient', 's', 0, 'since 1970');
    reg.cancel('fresh', 'now', 's');
    await p.worker.terminate();
    expect(reg.cleanup(Infinity)).toEqual({ removed: 0, inFlightRemoved: 1 });
    expect(reg.inFlight('leaked', 's')).toBe(false);
    expect(reg.cancelled('ancient', 's')).toBe(true);
    expect(reg.reason('ancient', 's')).toBe('since 1970');
    expect(reg.counters()).toMatchObject({ cancellationRows: 2, expired: 0, inFlightSwept: 1 });
    expect(reg.cleanup(60_000).removed).toBe(1); // a finite TTL reads the table: the ancient row goes
  });

  it('sweeping a dead thread\'s row keeps a live request with the same key', async () => {
    const reg = createRegistry();
    const p = await peer(reg);
    await p.ask({ op: 'track', id: 'shared', scope: 's' });
    const mine = tracked(reg, 'shared', 's');
    await p.worker.terminate();
    expect(reg.cleanup(30_000).inFlightRemoved).toBe(1);
    expect(reg.inFlight('shared', 's')).toBe(true);
    expect(reg.scan().inFlightRows).toBe(1);
    reg.cancel('shared', 'still works', 's');
    expect(mine.cancelled).toBe(true);
    reg.untrack(mine);
    expect(reg.inFlight('shared', 's')).toBe(false);
  });

  it('capacity held by a terminated thread comes back', async () => {
    const reg = createRegistry({ inFlightCapacity: 4 });
    const p = await peer(reg);
    for (let i = 0; i < 3; i++) expect(await p.ask({ op: 'track', id: i, scope: 's', tag: i })).toMatchObject({ ok: true });
    expect(reg.track('x', 's').ok).toBe(true);
    expect(reg.track('y', 's')).toEqual({ ok: false, error: 'in_flight_capacity_exhausted' });
    await p.worker.terminate();
    reg.cleanup(60_000);
    for (const id of ['y', 'z', 'w']) expect(reg.track(id, 's').ok).toBe(true);
    expect(reg.track('v', 's').ok).toBe(false);
  });
});
