/**
 * The table loops that run both in the main thread (timed around them there) and in the S5
 * workers (timed inside those): one function per loop, so each stays monomorphic. No side effects
 * on import.
 */
import type { RosterMember, ShmTable } from '../../native-free-shm/index.js';
import * as keys from './keys.js';
import type { PreparedKeys } from './keys.js';

// Module-local copies of the record layout: an imported binding is read through its cell, with a
// hole check, at every use in optimised code, which the Map loops beside these would not pay.
const { kPackedHash, kPackedKey, kPackedLen, kPackedStride } = keys;

/** `total` lookups of `keys` in the shuffled `order` (power-of-two length); returns the hits. */
export function findAll(t: ShmTable, keys: PreparedKeys, order: Uint32Array, total: number): number {
  const packed = keys.packed;
  const mask = order.length - 1;
  let hits = 0;
  for (let i = 0; i < total; i++) {
    const at = order[i & mask] * kPackedStride;
    if (t.find(packed, packed[at + kPackedLen], packed[at + kPackedHash], at + kPackedKey) >= 0) hits++;
  }
  return hits;
}

/** `total` claim + value write + publish + remove pairs, cycling through `keys` (power-of-two count). */
export function insertDeleteAll(t: ShmTable, member: RosterMember, keys: PreparedKeys, total: number): void {
  const packed = keys.packed;
  const mask = keys.words.length - 1;
  const w = t.i32;
  for (let i = 0; i < total; i++) {
    const at = (i & mask) * kPackedStride;
    const slot = t.claim(packed, packed[at + kPackedLen], packed[at + kPackedHash], member, at + kPackedKey);
    if (slot < 0) throw new Error('table full during insert+delete');
    w[t.valueIndex(slot)] = i;
    const ctl = t.publish(slot, member);
    if (t.remove(slot, ctl) === 0) throw new Error(`remove failed during insert+delete (slot ${slot}, ctl ${ctl})`);
  }
}
