import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createRegistry } from '../../src/index.js';
import type { Registry, RequestId, TrackHandle } from '../../src/index.js';

/**
 * Model-based test: random operation sequences run against the registry and against a plain Map
 * model of the registry's rules (docs/registry.md); after every step every observable answer must agree.
 */

const kPerScope = 3;
const kMaxRows = 8; // below 4 scopes x quota 3, so the global cap's eviction is exercised too

interface ModelRow { reason: string | undefined; seq: number; scope: string }
interface ModelHandle { key: string; live: boolean; cancelled: boolean }
interface Model {
  rows: Map<string, ModelRow>;
  handles: ModelHandle[];
  seq: number;
  evictions: number;
}
interface Real { reg: Registry; handles: TrackHandle[] }

const keyOf = (id: RequestId, scope: string) => `${scope}\u0000${typeof id}:${String(id)}`;

function modelEvict(m: Model): void {
  // Largest scope first, oldest first inside it, spilling over; equal sizes by age.
  const sizes = new Map<string, number>();
  for (const row of m.rows.values()) sizes.set(row.scope, (sizes.get(row.scope) ?? 0) + 1);
  const order = [...m.rows.entries()].sort(([, a], [, b]) => (sizes.get(b.scope)! - sizes.get(a.scope)!) || a.seq - b.seq);
  const batch = Math.max(1, Math.floor(kMaxRows / 20));
  for (const [key] of order.slice(0, batch)) m.rows.delete(key);
  m.evictions += batch;
}

function check(m: Model, r: Real): void {
  const counts = r.reg.counters();
  expect(counts.cancellationRows).toBe(m.rows.size);
  expect(r.reg.scan().cancellationRows).toBe(m.rows.size);
  // The counter (tracked − untracked − swept) and the table's rows, each against the model.
  expect(counts.inFlight).toBe(m.handles.filter((h) => h.live).length);
  expect(r.reg.scan().inFlightRows).toBe(counts.inFlight);
  expect(counts.evictions).toBe(m.evictions);
  m.handles.forEach((h, i) => expect(r.handles[i].cancelled, `handle ${i}`).toBe(h.cancelled));
}

class Track implements fc.Command<Model, Real> {
  constructor(readonly id: RequestId, readonly scope: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const h = r.reg.track(this.id, this.scope);
    expect(h.ok).toBe(true);
    r.handles.push(h as TrackHandle);
    m.handles.push({ key: keyOf(this.id, this.scope), live: true, cancelled: false });
    check(m, r);
  }
  toString = () => `track(${JSON.stringify(this.id)}, ${this.scope})`;
}

class Untrack implements fc.Command<Model, Real> {
  constructor(readonly pick: number) {}
  check = (m: Readonly<Model>) => m.handles.length > 0;
  run(m: Model, r: Real): void {
    const i = this.pick % m.handles.length;
    r.reg.untrack(r.handles[i]);
    m.handles[i].live = false;
    check(m, r);
  }
  toString = () => `untrack(#${this.pick})`;
}

class Cancel implements fc.Command<Model, Real> {
  constructor(readonly id: RequestId, readonly reason: string | undefined, readonly scope: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const key = keyOf(this.id, this.scope);
    const inScope = [...m.rows.values()].filter((row) => row.scope === this.scope).length;
    const result = r.reg.cancel(this.id, this.reason, this.scope);
    if (inScope >= kPerScope) {
      expect(result).toEqual({ ok: false, error: 'cancellation_limit_reached' });
    } else {
      expect(result).toEqual({ ok: true });
      if (m.rows.size >= kMaxRows) modelEvict(m);
      m.rows.delete(key);
      m.rows.set(key, { reason: this.reason?.replace(/\u0000/g, ''), seq: m.seq++, scope: this.scope });
      for (const h of m.handles) if (h.live && h.key === key) h.cancelled = true;
    }
    check(m, r);
  }
  toString = () => `cancel(${JSON.stringify(this.id)}, ${JSON.stringify(this.reason)}, ${this.scope})`;
}

class Clear implements fc.Command<Model, Real> {
  constructor(readonly id: RequestId, readonly scope: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    r.reg.clear(this.id, this.scope);
    m.rows.delete(keyOf(this.id, this.scope));
    check(m, r);
  }
  toString = () => `clear(${JSON.stringify(this.id)}, ${this.scope})`;
}

class Query implements fc.Command<Model, Real> {
  constructor(readonly id: RequestId, readonly scope: string) {}
  check = () => true;
  run(m: Model, r: Real): void {
    const key = keyOf(this.id, this.scope);
    expect(r.reg.cancelled(this.id, this.scope)).toBe(m.rows.has(key));
    expect(r.reg.reason(this.id, this.scope)).toBe(m.rows.get(key)?.reason);
    expect(r.reg.inFlight(this.id, this.scope)).toBe(m.handles.some((h) => h.live && h.key === key));
  }
  toString = () => `query(${JSON.stringify(this.id)}, ${this.scope})`;
}

describe('registry against a Map model', () => {
  it('agrees on every answer after every step', () => {
    // 1 and "1" are distinct ids; four scopes with a quota of 3 and a global cap of 8.
    const id = fc.oneof(fc.integer({ min: 0, max: 3 }), fc.constantFrom('0', '1', '2', '3'));
    const scope = fc.constantFrom('session:a', 'session:b', 'ip:192.0.2.1', 'principal:p');
    const reason = fc.option(fc.constantFrom('stop', 'timeout', 'user\u0000abort'), { nil: undefined });
    const commands = [
      fc.tuple(id, scope).map(([i, s]) => new Track(i, s)),
      fc.nat().map((n) => new Untrack(n)),
      fc.tuple(id, reason, scope).map(([i, why, s]) => new Cancel(i, why, s)),
      fc.tuple(id, scope).map(([i, s]) => new Clear(i, s)),
      fc.tuple(id, scope).map(([i, s]) => new Query(i, s)),
    ];
    fc.assert(
      fc.property(fc.commands(commands, { maxCommands: 120, size: 'max' }), (cmds) => {
        const setup = () => ({
          model: { rows: new Map(), handles: [], seq: 0, evictions: 0 } as Model,
          real: { reg: createRegistry({ maxRows: kMaxRows, maxRowsPerScope: kPerScope, maxThreads: 2, inFlightCapacity: 1000 }), handles: [] } as Real,
        });
        fc.modelRun(setup, cmds);
      }),
      { numRuns: 300 },
    );
  });
});
