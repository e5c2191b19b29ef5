import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { describe, expect, it } from 'vitest';
import {
  CancelledError, SluiceError, attachRegistry, createRegistry, registryByteLength, validRequestId,
} from '../../src/index.js';
import type { Registry, TrackHandle } from '../../src/index.js';
import { integer, integerOrInfinity } from '../../src/validate.js';


function tracked(reg: Registry, id: string | number, scope: string): TrackHandle {
  const h = reg.track(id, scope);
  if (!h.ok) throw new Error(`track refused: ${h.error}`);
  return h;
}

function capture(name: string): { events: unknown[]; stop: () => void } {
  const events: unknown[] = [];
  const fn = (message: unknown) => { events.push(message); };
  subscribe(name, fn);
  return { events, stop: () => unsubscribe(name, fn) };
}

describe('cancel and cancelled', () => {
  it('records by id; 42 and "42" are different ids (JSON-RPC)', () => {
    const reg = createRegistry();
    expect(reg.cancel(42, 'user pressed stop', 's')).toEqual({ ok: true });
    expect(reg.cancelled(42, 's')).toBe(true);
    expect(reg.cancelled('42', 's')).toBe(false);
    expect(reg.cancel('42', undefined, 's')).toEqual({ ok: true });
    expect(reg.cancelled('42', 's')).toBe(true);
    expect(reg.scan().cancellationRows).toBe(2);
  });

  it('stores the reason', () => {
    const reg = createRegistry();
    reg.cancel('req-1', 'timeout', 's');
    expect(reg.reason('req-1', 's')).toBe('timeout');
    reg.cancel('req-2', undefined, 's');
    expect(reg.cancelled('req-2', 's')).toBe(true);
    expect(reg.reason('req-2', 's')).toBeUndefined();
    expect(reg.reason('nope', 's')).toBeUndefined();
  });

  it('a null or missing id is a no-op', () => {
    const reg = createRegistry();
    expect(reg.cancel(null, null, 's')).toEqual({ ok: true });
    expect(reg.cancel(undefined, 'x', 's')).toEqual({ ok: true });
    expect(reg.cancelled(null, 's')).toBe(false);
    expect(reg.scan().cancellationRows).toBe(0);
  });

  it.each([{}, [1, 2], 1.5, NaN, Infinity, -Infinity, 2 ** 53, -(2 ** 53), true, false, Symbol('x'), 10n])(
    'refuses an id that is not a safe integer or string: %s', (id) => {
      const reg = createRegistry();
      expect(reg.cancel(id, 'r', 's')).toEqual({ ok: false, error: 'invalid_request_id' });
      expect(reg.scan().cancellationRows).toBe(0);
      expect(validRequestId(id)).toBe(false);
    });

  it('accepts every safe integer, negative and zero included; -0 is 0', () => {
    const reg = createRegistry();
    for (const id of [0, -5, Number.MAX_SAFE_INTEGER, Number.MIN_SAFE_INTEGER]) {
      expect(reg.cancel(id, 'r', 's')).toEqual({ ok: true });
      expect(reg.cancelled(id, 's')).toBe(true);
    }
    expect(reg.cancelled(-0, 's')).toBe(true);
    expect(reg.cancelled(1, 's')).toBe(false);
  });

  it('caps string ids at 256 UTF-8 bytes', () => {
    const reg = createRegistry();
    expect(reg.cancel('a'.repeat(256), 'r', 's')).toEqual({ ok: true });
    expect(reg.cancel('a'.repeat(257), 'r', 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.cancel('é'.repeat(129), 'r', 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.cancel('é'.repeat(128), 'r', 's')).toEqual({ ok: true });
    expect(reg.cancel('𝄞'.repeat(64), 'r', 's')).toEqual({ ok: true });
    expect(reg.cancel('𝄞'.repeat(65), 'r', 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.cancel('', 'r', 's')).toEqual({ ok: true });
    expect(reg.scan().cancellationRows).toBe(4);
  });

  it('keeps ids with unpaired surrogates apart (no lossy encoding)', () => {
    const reg = createRegistry();
    reg.cancel('\uD800', 'r', 's');
    expect(reg.cancelled('\uD800', 's')).toBe(true);
    expect(reg.cancelled('\uDBFF', 's')).toBe(false);
    expect(reg.cancelled('\uFFFD', 's')).toBe(false);
  });

  it('truncates and strips control characters from the reason', () => {
    const reg = createRegistry();
    reg.cancel('r', `abort\u0000\u001b[31m${'x'.repeat(500)}`, 's');
    const reason = reg.reason('r', 's')!;
    expect(reason).toHaveLength(200);
    expect(reason).not.toContain('\u0000');
    expect(reason).not.toContain('\u001b');
    reg.cancel('long', '𝄞'.repeat(300), 's');
    expect([...reg.reason('long', 's')!]).toHaveLength(200);
  });

  it('accepts a non-string reason', () => {
    const reg = createRegistry();
    expect(reg.cancel('r', { why: 'because' }, 's')).toEqual({ ok: true });
    expect(reg.reason('r', 's')).toBe('{"why": "because"}');
  });

  it('a re-cancel overwrites the reason and keeps one row', () => {
    const reg = createRegistry();
    reg.cancel('r', 'first', 's');
    reg.cancel('r', 'second', 's');
    expect(reg.reason('r', 's')).toBe('second');
    expect(reg.scan().cancellationRows).toBe(1);
    expect(reg.counters().cancellationRows).toBe(1);
  });

  it('stores scopes over 256 bytes as a digest, still keeping them apart', () => {
    const reg = createRegistry();
    const a = `principal:${'p'.repeat(300)}a`;
    const b = `principal:${'p'.repeat(300)}b`;
    reg.cancel(1, 'r', a);
    expect(reg.cancelled(1, a)).toBe(true);
    expect(reg.cancelled(1, b)).toBe(false);
    const h = tracked(reg, 2, b);
    reg.cancel(2, 'r', a);
    expect(h.cancelled).toBe(false);
    reg.cancel(2, 'r', b);
    expect(h.cancelled).toBe(true);
  });

  it('throws a coded error for a scope that is not a string (a programming error)', () => {
    const reg = createRegistry();
    expect(() => reg.cancel(1, 'r', 42 as unknown as string)).toThrow(expect.objectContaining({ code: 'invalid_scope' }));
  });
});

describe('cross-client isolation', () => {
  it('client A cancelling id 1 does not touch client B\'s id 1', () => {
    const reg = createRegistry();
    const b = tracked(reg, 1, 'session:b');
    reg.cancel(1, 'stop', 'session:a');
    expect(reg.cancelled(1, 'session:a')).toBe(true);
    expect(reg.cancelled(1, 'session:b')).toBe(false);
    expect(b.cancelled).toBe(false);
  });

  it('two principals behind one address do not share a namespace', () => {
    const reg = createRegistry();
    reg.cancel('7', 'r', 'principal:alice');
    expect(reg.cancelled('7', 'principal:alice')).toBe(true);
    expect(reg.cancelled('7', 'principal:bob')).toBe(false);
  });

  it('a principal whose id equals an address shares neither rows nor quota with it', () => {
    const reg = createRegistry({ maxRowsPerScope: 1 });
    expect(reg.cancel('1', 'r', 'principal:203.0.113.9')).toEqual({ ok: true });
    expect(reg.cancel('2', 'r', 'ip:203.0.113.9')).toEqual({ ok: true });
    expect(reg.cancelled('1', 'ip:203.0.113.9')).toBe(false);
  });

  it('clear only clears the caller\'s own row', () => {
    const reg = createRegistry();
    reg.cancel('x', 'r', 'a');
    reg.cancel('x', 'r', 'b');
    reg.clear('x', 'a');
    expect(reg.cancelled('x', 'a')).toBe(false);
    expect(reg.cancelled('x', 'b')).toBe(true);
  });
});

describe('row bounds', () => {
  it('the global cap evicts, never refuses; the newest survives', () => {
    const reg = createRegistry({ maxRows: 2, maxRowsPerScope: Infinity });
    for (const id of ['a', 'b', 'c']) expect(reg.cancel(id, 'r', 's')).toEqual({ ok: true });
    expect(reg.scan().cancellationRows).toBeLessThanOrEqual(2);
    expect(reg.cancelled('c', 's')).toBe(true);
    expect(reg.cancelled('a', 's')).toBe(false);
    expect(reg.counters().evictions).toBe(1);
  });

  it('the per-scope quota stops one client denying cancellation to others', () => {
    const reg = createRegistry({ maxRowsPerScope: 3 });
    for (let i = 0; i < 3; i++) expect(reg.cancel(`a${i}`, 'r', 'attacker')).toEqual({ ok: true });
    expect(reg.cancel('a3', 'r', 'attacker')).toEqual({ ok: false, error: 'cancellation_limit_reached' });
    expect(reg.cancel('a0', 'again', 'attacker')).toEqual({ ok: false, error: 'cancellation_limit_reached' });
    expect(reg.cancel('v', 'r', 'victim')).toEqual({ ok: true });
    expect(reg.cancelled('v', 'victim')).toBe(true);
    expect(reg.counters().cancellationsRefused).toBe(2);
    // Room again once a row of the scope goes.
    reg.clear('a1', 'attacker');
    expect(reg.cancel('a3', 'r', 'attacker')).toEqual({ ok: true });
  });

  it('Infinity turns the per-scope quota off', () => {
    const reg = createRegistry({ maxRowsPerScope: Infinity, maxRows: 1000 });
    for (let i = 0; i < 300; i++) reg.cancel(i, 'r', 's');
    expect(reg.scan().cancellationRows).toBe(300);
  });

  it('the global cap does not deny a scope that is under its own quota', () => {
    const reg = createRegistry({ maxRows: 100, maxRowsPerScope: 20 });
    for (let s = 0; s < 6; s++) for (let i = 0; i < 20; i++) expect(reg.cancel(i, 'r', `scope-${s}`).ok).toBe(true);
    expect(reg.scan().cancellationRows).toBeLessThanOrEqual(100);
    expect(reg.cancel('v-0', 'r', 'victim')).toEqual({ ok: true });
    for (let i = 1; i < 20; i++) expect(reg.cancel(`v-${i}`, 'r', 'victim')).toEqual({ ok: true });
    expect(reg.cancel('v-over', 'r', 'victim')).toEqual({ ok: false, error: 'cancellation_limit_reached' });
  });

  it('reclaim evicts the largest scope, not the caller or a bystander', () => {
    const reg = createRegistry({ maxRows: 100, maxRowsPerScope: Infinity });
    const now = Date.now();
    reg.seedCancellation('bystander-1', 'bystander', now - 10_000);
    reg.seedCancellation('bystander-2', 'bystander', now - 9_999);
    for (let i = 1; i <= 98; i++) reg.seedCancellation(`hog-${i}`, 'hog', now - 5_000 + i);
    expect(reg.cancel('small-1', 'r', 'small')).toEqual({ ok: true });
    expect(reg.cancelled('bystander-1', 'bystander') && reg.cancelled('bystander-2', 'bystander')).toBe(true);
    expect(reg.cancelled('small-1', 'small')).toBe(true);
    for (let i = 1; i <= 5; i++) expect(reg.cancelled(`hog-${i}`, 'hog')).toBe(false);
    expect(reg.cancelled('hog-6', 'hog')).toBe(true);
    expect(reg.scan().cancellationRows).toBe(96);
  });

  it('reclaim spills into the next largest scope when the largest is smaller than a batch', () => {
    const reg = createRegistry({ maxRows: 100, maxRowsPerScope: Infinity });
    const now = Date.now();
    let t = now - 100_000;
    for (let i = 1; i <= 91; i++) reg.seedCancellation(`single-${i}`, `single-${i}`, t++);
    for (let i = 1; i <= 2; i++) reg.seedCancellation(`small-${i}`, 'small', t++);
    for (let i = 1; i <= 3; i++) reg.seedCancellation(`mid-${i}`, 'mid', t++);
    for (let i = 1; i <= 4; i++) reg.seedCancellation(`big-${i}`, 'big', t++);
    expect(reg.cancel('caller', 'r', 'caller')).toEqual({ ok: true });
    expect(reg.scan().cancellationRows).toBe(96);
    for (let i = 1; i <= 4; i++) expect(reg.cancelled(`big-${i}`, 'big')).toBe(false);
    expect(reg.cancelled('mid-1', 'mid')).toBe(false);
    expect(reg.cancelled('mid-2', 'mid') && reg.cancelled('mid-3', 'mid')).toBe(true);
    expect(reg.cancelled('small-1', 'small') && reg.cancelled('small-2', 'small')).toBe(true);
    for (let i = 1; i <= 91; i++) expect(reg.cancelled(`single-${i}`, `single-${i}`)).toBe(true);
    expect(reg.cancelled('caller', 'caller')).toBe(true);
  });

  it('reclaim frees a full batch when every scope holds one row, oldest first', () => {
    const reg = createRegistry({ maxRows: 100, maxRowsPerScope: Infinity });
    const now = Date.now();
    for (let i = 100; i >= 1; i--) reg.seedCancellation(`id-${i}`, `scope-${i}`, now - 1000 + i);
    expect(reg.cancel('caller', 'r', 'caller')).toEqual({ ok: true });
    expect(reg.scan().cancellationRows).toBe(96);
    for (let i = 1; i <= 5; i++) expect(reg.cancelled(`id-${i}`, `scope-${i}`)).toBe(false);
    for (let i = 6; i <= 100; i++) expect(reg.cancelled(`id-${i}`, `scope-${i}`)).toBe(true);
    expect(reg.cancelled('caller', 'caller')).toBe(true);
    expect(reg.counters().evictions).toBe(5);
  });

  it('rows of one millisecond are aged by insertion order', () => {
    const reg = createRegistry({ maxRows: 20, maxRowsPerScope: Infinity }); // batch 1
    const at = Date.now() - 1000;
    for (const s of ['c', 'b', 'a']) reg.seedCancellation('x', s, at);
    for (let i = 0; i < 17; i++) reg.seedCancellation(`n${i}`, `n${i}`, at + 1 + i);
    reg.cancel('new', 'r', 'new');
    expect(reg.cancelled('x', 'c')).toBe(false);
    expect(reg.cancelled('x', 'b') && reg.cancelled('x', 'a')).toBe(true);
  });
});

describe('clear', () => {
  it('removes a cancellation row', () => {
    const reg = createRegistry();
    reg.cancel('x', 'r', 's');
    reg.clear('x', 's');
    expect(reg.cancelled('x', 's')).toBe(false);
    expect(reg.counters().cancellationRows).toBe(0);
  });

  it('ignores null and malformed ids', () => {
    const reg = createRegistry();
    expect(() => reg.clear(null, 's')).not.toThrow();
    expect(() => reg.clear({}, 's')).not.toThrow();
    expect(() => reg.clear(1.5, 's')).not.toThrow();
  });

  it('reads before it writes: clearing a key with no row leaves shared memory untouched', () => {
    const reg = createRegistry({ maxRows: 50 });
    reg.cancel('other', 'r', 's');
    const before = Buffer.from(new Uint8Array(reg.descriptor.cancellations.buffer).slice());
    const state = Buffer.from(new Uint8Array(reg.descriptor.state).slice());
    for (let i = 0; i < 1000; i++) reg.clear(i, 's');
    expect(Buffer.compare(before, Buffer.from(new Uint8Array(reg.descriptor.cancellations.buffer).slice()))).toBe(0);
    expect(Buffer.compare(state, Buffer.from(new Uint8Array(reg.descriptor.state).slice()))).toBe(0);
  });
});

describe('track, untrack, inFlight', () => {
  it('a tracked id is in flight in its own scope only', () => {
    const reg = createRegistry();
    const h = tracked(reg, 7, 'a');
    expect(reg.inFlight(7, 'a')).toBe(true);
    expect(reg.inFlight('7', 'a')).toBe(false);
    expect(reg.inFlight(7, 'b')).toBe(false);
    expect(reg.inFlight(70, 'a')).toBe(false);
    reg.untrack(h);
    expect(reg.inFlight(7, 'a')).toBe(false);
    reg.untrack(h); // idempotent
    expect(reg.counters()).toMatchObject({ tracked: 1, untracked: 1, inFlight: 0 });
  });

  it('concurrent duplicates of one id each hold a row', () => {
    const reg = createRegistry();
    const first = tracked(reg, 'dup', 's');
    const second = tracked(reg, 'dup', 's');
    reg.untrack(second);
    expect(reg.inFlight('dup', 's')).toBe(true);
    reg.cancel('dup', 'late', 's');
    expect(first.cancelled).toBe(true);
    expect(second.cancelled).toBe(false);
    reg.untrack(first);
    expect(reg.inFlight('dup', 's')).toBe(false);
  });

  it('refuses null and over-long ids, so nothing runs untracked by accident', () => {
    const reg = createRegistry();
    expect(reg.track(null as unknown as number, 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.track('a'.repeat(257), 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.track(1.5, 's')).toEqual({ ok: false, error: 'invalid_request_id' });
    expect(reg.scan().inFlightRows).toBe(0);
    expect(reg.inFlight(null, 's')).toBe(false);
  });

  it('cancel raises the flag of every in-flight row with the key, and of no other', () => {
    const reg = createRegistry();
    const a1 = tracked(reg, 1, 's');
    const a2 = tracked(reg, 1, 's');
    const other = tracked(reg, 2, 's');
    const elsewhere = tracked(reg, 1, 't');
    reg.cancel(1, 'why', 's');
    expect([a1.cancelled, a2.cancelled, other.cancelled, elsewhere.cancelled]).toEqual([true, true, false, false]);
    expect(a1.reason).toBe('why');
    expect(() => a1.throwIfCancelled()).toThrow(CancelledError);
    expect(() => other.throwIfCancelled()).not.toThrow();
  });

  it('a cancellation applies to the requests in flight when it is recorded, not to later ones', () => {
    const reg = createRegistry();
    reg.cancel(5, 'early', 's');
    const later = tracked(reg, 5, 's');
    expect(later.cancelled).toBe(false);
    expect(reg.cancelled(5, 's')).toBe(true); // the row itself exists until cleared
  });

  it('a handle keeps its answer after its row is gone, and never reads a slot\'s next occupant', () => {
    const reg = createRegistry();
    const h = tracked(reg, 1, 's');
    reg.cancel(1, 'r', 's');
    reg.untrack(h);
    reg.clear(1, 's');
    const next = tracked(reg, 1, 's');
    expect(next.slot).toBe(h.slot); // the tombstone was reused
    expect(h.cancelled).toBe(true);
    expect(next.cancelled).toBe(false);
    const quiet = tracked(reg, 9, 's');
    reg.untrack(quiet);
    const reuse = tracked(reg, 9, 's');
    reg.cancel(9, 'r', 's');
    expect(reuse.cancelled).toBe(true);
    expect(quiet.cancelled).toBe(false);
  });

  it('signal aborts with a CancelledError carrying the reason, without polling', async () => {
    const reg = createRegistry();
    const h = tracked(reg, 'sig', 's');
    const aborted = new Promise<unknown>((resolve) => h.signal.addEventListener('abort', () => resolve(h.signal.reason)));
    expect(h.signal.aborted).toBe(false);
    reg.cancel('sig', 'stop now', 's');
    const reason = await aborted;
    expect(reason).toBeInstanceOf(CancelledError);
    expect((reason as CancelledError).reason).toBe('stop now');
    expect((reason as CancelledError).code).toBe('request_cancelled');
  });

  it('signal of an already cancelled request is aborted at once; untrack ends the wait quietly', async () => {
    const reg = createRegistry();
    const h = tracked(reg, 1, 's');
    reg.cancel(1, undefined, 's');
    expect(h.signal.aborted).toBe(true);
    const quiet = tracked(reg, 2, 's');
    const signal = quiet.signal;
    reg.untrack(quiet);
    await new Promise((r) => setTimeout(r, 20));
    expect(signal.aborted).toBe(false);
  });

  it('refuses past the in-flight capacity, and takes requests again as they finish', () => {
    const reg = createRegistry({ inFlightCapacity: 3 });
    const hs = [1, 2, 3].map((i) => tracked(reg, i, 's'));
    expect(reg.track(4, 's')).toEqual({ ok: false, error: 'in_flight_capacity_exhausted' });
    reg.untrack(hs[0]);
    expect(reg.track(4, 's').ok).toBe(true);
    expect(reg.counters()).toMatchObject({ trackRefused: 1, inFlight: 3 });
  });
});

describe('cleanup', () => {
  it('removes rows older than the TTL (strictly)', () => {
    const reg = createRegistry();
    reg.cancel('fresh', 'r', 's');
    reg.seedCancellation('stale', 's', Date.now() - 60_000);
    expect(reg.cleanup(30_000)).toEqual({ removed: 1, inFlightRemoved: 0 });
    expect(reg.cancelled('fresh', 's')).toBe(true);
    expect(reg.cancelled('stale', 's')).toBe(false);
    expect(reg.counters()).toMatchObject({ expired: 1, cancellationRows: 1 });
  });

  it('publishes sluice:cancellation:cleanup', () => {
    const reg = createRegistry();
    reg.seedCancellation('stale', 's', Date.now() - 60_000);
    const { events, stop } = capture('sluice:cancellation:cleanup');
    try {
      reg.cleanup(1000);
    } finally {
      stop();
    }
    expect(events).toEqual([{ removed: 1, inFlightRemoved: 0 }]);
  });

  it('rejects a bad TTL with a coded error', () => {
    const reg = createRegistry();
    expect(() => reg.cleanup(-1)).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    expect(() => reg.cleanup(NaN)).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });

  it('a janitor runs cleanup on its interval and stops', async () => {
    const reg = createRegistry();
    reg.seedCancellation('stale', 's', Date.now() - 60_000);
    const stop = reg.startJanitor({ intervalMs: 10, ttlMs: 1000 });
    try {
      for (let i = 0; i < 100 && reg.cancelled('stale', 's'); i++) await new Promise((r) => setTimeout(r, 10));
    } finally {
      stop();
    }
    expect(reg.cancelled('stale', 's')).toBe(false);
  });
});

describe('telemetry and counters', () => {
  it('publishes sluice:request:cancelled for each recorded cancellation only', () => {
    const reg = createRegistry({ maxRowsPerScope: 1 });
    const { events, stop } = capture('sluice:request:cancelled');
    try {
      reg.cancel('evt-1', 'client abort', 's');
      reg.cancel('evt-2', 'refused: over quota', 's');
      reg.cancel({}, 'invalid', 's');
    } finally {
      stop();
    }
    expect(events).toEqual([{ requestId: 'evt-1', scope: 's', reason: 'client abort' }]);
  });

  it('counts exactly, readable from a second attachment', () => {
    const reg = createRegistry({ maxRowsPerScope: 2 });
    const other = attachRegistry(structuredClone(reg.descriptor));
    const h = tracked(reg, 1, 's');
    reg.cancel(1, 'r', 's');
    reg.cancel(2, 'r', 's');
    reg.cancel(3, 'r', 's');
    reg.untrack(h);
    reg.clear(1, 's');
    expect(other.counters()).toEqual({
      inFlight: 0, cancellationRows: 1, tracked: 1, untracked: 1, trackRefused: 0, cancellations: 2,
      cancellationsRefused: 1, evictions: 0, expired: 0, inFlightSwept: 0,
    });
  });
});

describe('options and descriptor', () => {
  it.each([
    [{ maxRows: 0 }], [{ maxRows: 1.5 }], [{ maxRows: Infinity }], [{ maxRowsPerScope: 0 }], [{ maxRowsPerScope: -1 }],
    [{ inFlightCapacity: 0 }], [{ inFlightCapacity: '10' }], [{ maxThreads: 5000 }],
  ])('rejects %j with invalid_option', (options) => {
    expect(() => createRegistry(options as never)).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });

  it('checks its integer options with the one integer check (same words for the same value)', () => {
    const thrown = (f: () => unknown): unknown => {
      try {
        f();
      } catch (error) {
        return error;
      }
      throw new Error('did not throw');
    };
    expect(thrown(() => createRegistry({ maxRows: 1.5 }))).toEqual(thrown(() => integer('maxRows', 1.5, 10_000, 1, 10_000_000)));
    expect(thrown(() => createRegistry({ maxThreads: 5000 }))).toEqual(thrown(() => integer('maxThreads', 5000, 1024, 1, 4096)));
    expect(thrown(() => createRegistry({ maxRowsPerScope: 0 }))).toEqual(thrown(() => integerOrInfinity('maxRowsPerScope', 0, 256, 1, 10_000_000)));
    expect(String((thrown(() => createRegistry({ maxRowsPerScope: 0 })) as Error).message)).toBe('maxRowsPerScope must be an integer from 1 to 10000000 or Infinity, got 0');
    expect(createRegistry({ maxRows: 16, maxRowsPerScope: Infinity }).maxRowsPerScope).toBe(Infinity);
    const reg = createRegistry({ maxRows: 16 });
    expect(thrown(() => reg.startJanitor({ intervalMs: 0 }))).toEqual(thrown(() => integer('intervalMs', 0, 60_000, 1, 2 ** 31 - 1)));
    expect(thrown(() => reg.startJanitor({ ttlMs: -1 }))).toMatchObject({ code: 'invalid_option', message: expect.stringContaining('ttlMs must be an integer') });
  });

  it('refuses something that is not its descriptor', () => {
    expect(() => attachRegistry({} as never)).toThrow(expect.objectContaining({ code: 'bad_descriptor' }));
  });

  it('says how many bytes it takes', () => {
    const reg = createRegistry({ maxRows: 1000, inFlightCapacity: 1000, maxThreads: 16 });
    const d = reg.descriptor;
    const actual = d.roster.buffer.byteLength + d.inFlight.buffer.byteLength + d.cancellations.buffer.byteLength + d.state.byteLength;
    expect(registryByteLength({ maxRows: 1000, inFlightCapacity: 1000, maxThreads: 16 })).toBe(actual);
  });

  it('errors carry stable codes and cross threads as data', () => {
    const e = new SluiceError('cancellation_limit_reached', 'full');
    const back = SluiceError.fromWire(structuredClone(e.toWire()));
    expect(back.code).toBe('cancellation_limit_reached');
    const c = SluiceError.fromWire(structuredClone(new CancelledError('bye').toWire()));
    expect(c).toBeInstanceOf(CancelledError);
    expect(c.message).toBe('request cancelled: bye');
    expect((c as CancelledError).reason).toBe('bye');
  });
});
