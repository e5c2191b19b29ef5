import { describe, expect, it } from 'vitest';
import { KeyScratch, Roster, ShmTable, kFlagBit } from '../../native-free-shm/index.js';

function setup(capacity = 64, seed?: number) {
  const roster = Roster.create({ capacity: 8 });
  const table = ShmTable.create({ capacity, maxKeyBytes: 64, valueWords: 2, tableId: 0, ...(seed === undefined ? {} : { seed }) }, roster);
  const member = roster.join();
  return { roster, table, member };
}

function key(text: string): KeyScratch {
  return new KeyScratch(64).setString(text);
}

function insert(t: ShmTable, m: ReturnType<Roster['join']>, text: string, value = 0): { slot: number; ctl: number } {
  const k = key(text);
  const slot = t.claim(k.words, k.length, t.hash(k.words, k.length), m);
  if (slot < 0) return { slot, ctl: 0 };
  t.i32[t.valueIndex(slot)] = value;
  return { slot, ctl: t.publish(slot, m) };
}

function findAll(t: ShmTable, text: string): number[] {
  const k = key(text);
  const out: number[] = [];
  for (let s = t.find(k.words, k.length, t.hash(k.words, k.length)); s >= 0; s = t.next()) out.push(s);
  return out;
}

describe('ShmTable', () => {
  it('finds what was published, and nothing before publish', () => {
    const { table, member } = setup();
    const k = key('alpha');
    const slot = table.claim(k.words, k.length, table.hash(k.words, k.length), member);
    expect(slot).toBeGreaterThanOrEqual(0);
    expect(findAll(table, 'alpha')).toEqual([]); // WRITING is invisible
    table.publish(slot, member);
    expect(findAll(table, 'alpha')).toEqual([slot]);
    expect(findAll(table, 'alph')).toEqual([]);
    expect(findAll(table, 'alphb')).toEqual([]);
  });

  it('is a multiset: duplicates each hold a row and removing one keeps the other', () => {
    const { table, member } = setup();
    const a = insert(table, member, 'dup', 1);
    const b = insert(table, member, 'dup', 2);
    expect(findAll(table, 'dup').sort()).toEqual([a.slot, b.slot].sort());
    expect(table.remove(a.slot, a.ctl)).not.toBe(0);
    expect(findAll(table, 'dup')).toEqual([b.slot]);
    expect(table.remove(a.slot, a.ctl)).toBe(0); // already gone: idempotent
  });

  it('compares whole keys: colliding hashes and shared prefixes never match', () => {
    // A table of 8 slots forces every key into one small ring: homes collide constantly.
    const { table, member } = setup(6);
    const texts = ['k', 'k\u0000', 'kk', 'k1', 'k2', 'K'];
    for (const t of texts) insert(table, member, t);
    for (const t of texts) expect(findAll(table, t)).toHaveLength(1);
    expect(findAll(table, 'k3')).toEqual([]);
    expect(table.verify()).toEqual([]);
  });

  it('a remove or raise aimed at an old incarnation of a slot does nothing to the new row', () => {
    const { table, member } = setup();
    const old = insert(table, member, 'x');
    table.remove(old.slot, old.ctl);
    const fresh = insert(table, member, 'x');
    expect(fresh.slot).toBe(old.slot); // the tombstone is reused
    expect(fresh.ctl).not.toBe(old.ctl);
    expect(table.raise(old.slot, old.ctl)).toBe(false);
    expect(table.remove(old.slot, old.ctl)).toBe(0);
    expect(table.ctl(fresh.slot) & kFlagBit).toBe(0);
    expect(findAll(table, 'x')).toEqual([fresh.slot]);
  });

  it('raise sets the flag once and keeps the identity; remove reports the flag', () => {
    const { table, member } = setup();
    const r = insert(table, member, 'f');
    expect(table.raise(r.slot, r.ctl)).toBe(true);
    expect(table.raise(r.slot, r.ctl)).toBe(false);
    expect(findAll(table, 'f')).toEqual([r.slot]);
    expect(table.remove(r.slot, r.ctl) & kFlagBit).toBe(kFlagBit);
  });

  it('refuses a claim when every slot is taken, and takes one again after a remove', () => {
    const { table, member } = setup(6); // 8 slots
    const rows = [];
    for (let i = 0; i < table.slots; i++) rows.push(insert(table, member, `r${i}`));
    expect(rows.every((r) => r.slot >= 0)).toBe(true);
    expect(insert(table, member, 'one-more').slot).toBe(-1);
    table.remove(rows[3].slot, rows[3].ctl);
    expect(insert(table, member, 'one-more').slot).toBe(rows[3].slot);
  });

  it('churn does not degrade lookups: the probe limit stays bounded and everything stays findable', () => {
    const { table, member } = setup(4096);
    const live = new Map<string, { slot: number; ctl: number }>();
    let next = 0;
    for (; next < 2048; next++) live.set(`key-${next}`, insert(table, member, `key-${next}`));
    const names = [...live.keys()];
    let seed = 7;
    const rand = () => { seed = (Math.imul(seed, 1103515245) + 12345) >>> 0; return seed; };
    let failures = 0;
    for (let i = 0; i < 200_000; i++) {
      const at = rand() % names.length;
      const victim = names[at];
      const row = live.get(victim)!;
      if (table.remove(row.slot, row.ctl) === 0) failures++;
      live.delete(victim);
      const name = `key-${next++}`;
      const inserted = insert(table, member, name);
      if (inserted.slot < 0) failures++;
      live.set(name, inserted);
      names[at] = name;
    }
    expect(failures).toBe(0);
    expect(table.verify()).toEqual([]);
    expect(table.countLive()).toBe(2048);
    for (const [name, row] of live) expect(findAll(table, name)).toEqual([row.slot]);
    // Probe limits reflect clusters of live rows, not accumulated tombstones.
    expect(table.maxProbe()).toBeLessThan(200);
    for (let i = 0; i < 1000; i++) expect(findAll(table, `absent-${i}`)).toEqual([]);
  });

  it('attaches from a descriptor to the same memory', () => {
    const { roster, table, member } = setup();
    insert(table, member, 'shared');
    const again = ShmTable.attach(table.descriptor, Roster.attach(roster.descriptor));
    const k = key('shared');
    expect(again.find(k.words, k.length, again.hash(k.words, k.length))).toBeGreaterThanOrEqual(0);
    expect(() => ShmTable.attach({ kind: 'native-free-shm/table', buffer: new SharedArrayBuffer(64) }, roster)).toThrow(/magic/);
  });

  it('documents its size in bytes', () => {
    expect(ShmTable.byteLength(1000, 64, 2)).toBe(ShmTable.create({ capacity: 1000, maxKeyBytes: 64, valueWords: 2, tableId: 1 }, Roster.create()).byteLength);
  });
});

describe('Roster', () => {
  it('hands out one entry per thread, and a released entry gets a new generation', () => {
    const roster = Roster.create({ capacity: 2 });
    const me = roster.join();
    expect(roster.join()).toBe(me);
    expect(roster.alive(me.token)).toBe(true);
    roster.release(0); // the main thread's threadId
    expect(roster.alive(me.token)).toBe(false);
    const again = roster.join();
    expect(again.index).toBe(me.index);
    expect(again.token).not.toBe(me.token);
    expect(roster.alive(again.token)).toBe(true);
  });

  it('undoes a dead writer\'s claim on release', () => {
    const { roster, table, member } = setup();
    const k = key('half-written');
    const slot = table.claim(k.words, k.length, table.hash(k.words, k.length), member);
    expect(table.verify()).toEqual([`slot ${slot} is stuck WRITING (writer ${member.index})`]);
    roster.release(0);
    expect(table.verify()).toEqual([]);
    const fresh = roster.join();
    expect(insert(table, fresh, 'next').slot).toBeGreaterThanOrEqual(0);
  });
});
