import { once } from 'node:events';
import { Worker } from 'node:worker_threads';
import fc from 'fast-check';
import { afterEach, describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';
import type { RequestId, TrackHandle } from '../../src/index.js';
import { KeyEncoder, storedId } from '../../src/registry/key.js';

const started: Worker[] = [];
afterEach(async () => {
  await Promise.all(started.splice(0).map((w) => w.terminate()));
});

function tracked(reg: ReturnType<typeof createRegistry>, id: RequestId, scope: string): TrackHandle {
  const h = reg.track(id, scope);
  if (!h.ok) throw new Error(h.error);
  return h;
}

// Ids whose bytes differ in every way the key can: integers (−0 is 0), ASCII, two-, three- and
// four-byte UTF-8, unpaired surrogates (WTF-8), an empty string, 256 bytes exactly.
const kIds: RequestId[] = [0, 1, -7, Number.MAX_SAFE_INTEGER, '1', '', 'abc', 'é', '€uro', '😀', '\ud800', 'x\udfff', 'y'.repeat(256), '\u00ff'.repeat(128)];

describe('cancelScope (a session DELETEd)', () => {
  it('cancels every request of the scope, with its reason, and nothing of another scope', () => {
    const reg = createRegistry({ maxRowsPerScope: 2 });
    const mine = kIds.map((id) => tracked(reg, id, 'session:a'));
    const twin = tracked(reg, 'abc', 'session:a'); // a second request under one key: both go
    const others = kIds.map((id) => tracked(reg, id, 'session:b'));
    const prefixOfMine = tracked(reg, 1, 'session:'); // a scope that is a prefix of it
    expect(reg.cancelScope('session:a', 'the session ended')).toBe(kIds.length + 1);
    for (const h of [...mine, twin]) {
      expect(h.cancelled, String(h.id)).toBe(true);
      expect(h.reason, String(h.id)).toBe('the session ended');
      expect(reg.reason(h.id, 'session:a')).toBe('the session ended');
    }
    for (const h of [...others, prefixOfMine]) expect(h.cancelled, String(h.id)).toBe(false);
    // Never refused by the scope's quota (2 here), as a request's own cancel is not.
    expect(reg.counters()).toMatchObject({ cancellations: kIds.length + 1, cancellationsRefused: 0 });
    expect(reg.cancelScope('session:none', 'x')).toBe(0);
  });

  it('a scope stored as its digest (over 256 bytes) is matched whole', () => {
    const reg = createRegistry();
    const long = `session:${'s'.repeat(300)}`;
    const a = tracked(reg, 'q', long);
    const b = tracked(reg, 'q', `${long}t`);
    expect(reg.cancelScope(long, 'gone')).toBe(1);
    expect([a.cancelled, b.cancelled]).toEqual([true, false]);
  });

  it('skips requests already ended, and leaves the table sound', () => {
    const reg = createRegistry();
    const ended = tracked(reg, 'done', 's');
    const running = tracked(reg, 'running', 's');
    reg.untrack(ended);
    expect(reg.cancelScope('s', 'r')).toBe(1);
    expect(running.cancelled).toBe(true);
    reg.untrack(running);
    expect(reg.counters().inFlight).toBe(0);
    expect(reg.verify()).toEqual([]);
  });

  it('reaches a request tracked in another thread', async () => {
    const reg = createRegistry();
    const worker = new Worker(new URL('../fixtures/registry-peer.mjs', import.meta.url), { workerData: { registry: reg.descriptor } });
    started.push(worker);
    reg.watch(worker);
    const next = async () => (await once(worker, 'message'))[0] as Record<string, unknown>;
    await next();
    const ask = async (message: object) => { const reply = next(); worker.postMessage(message); return reply; };
    const { ref } = await ask({ op: 'track', id: 'far', scope: 'session:far' }) as { ref: object };
    expect(await ask({ op: 'signal', ref })).toEqual({ waiting: true });
    const observed = next();
    expect(reg.cancelScope('session:far', 'the session ended')).toBe(1);
    expect(await observed).toEqual({ observed: true, name: 'CancelledError', reason: 'the session ended' });
  });

  it('property: a stored key gives back the id it was made from', () => {
    const enc = new KeyEncoder(1);
    const ids = fc.oneof(fc.maxSafeInteger(), fc.string({ unit: 'binary', maxLength: 64 }), fc.string({ unit: fc.integer({ min: 0xd800, max: 0xdfff }).map((c) => String.fromCharCode(c)), maxLength: 8 }));
    fc.assert(fc.property(ids, fc.string({ maxLength: 300 }), (id, scope) => {
      fc.pre(enc.encode(id, scope));
      const bytes = enc.key.bytes.slice(0, enc.key.length);
      expect(storedId(bytes, 0, bytes.length)).toBe(id === 0 ? 0 : id); // the key holds −0 as 0
    }), { numRuns: 2000 });
  });
});
