/**
 * The table loops that run both in the main thread (timed around them there) and in the S5
 * workers (timed inside those): one function per loop, so each stays monomorphic. No side effects
 * on import.
 */
import type { RosterMember, ShmTable } from '../../native-free-shm/index.js';
import type { PreparedKeys } from './keys.js';

/** `total` lookups of `keys` in the shuffled `order` (power-of-two length); returns the hits. */
export function findAll(t: ShmTable, keys: PreparedKeys, order: Uint32Array, total: number): number {
  const { words, lengths, hashes } = keys;
  const mask = order.length - 1;
  let hits = 0;
  for (let i = 0; i < total; i++) {
    const k = order[i & mask];
    if (t.find(words[k], lengths[k], hashes[k]) >= 0) hits++;
  }
  return hits;
}

/** `total` claim + value write + publish + remove pairs, cycling through `keys` (power-of-two count). */
export function insertDeleteAll(t: ShmTable, member: RosterMember, keys: PreparedKeys, total: number): void {
  const { words, lengths, hashes } = keys;
  const mask = words.length - 1;
  const w = t.i32;
  for (let i = 0; i < total; i++) {
    const k = i & mask;
    const slot = t.claim(words[k], lengths[k], hashes[k], member);
    if (slot < 0) throw new Error('table full during insert+delete');
    w[t.valueIndex(slot)] = i;
    const ctl = t.publish(slot, member);
    if (t.remove(slot, ctl) === 0) throw new Error(`remove failed during insert+delete (slot ${slot}, ctl ${ctl})`);
  }
}
