/**
 * Keys of the table benchmarks: a deterministic RNG and shuffle, the key strings ("req:" + 16 hex
 * digits), a writer of the same bytes without a string, and keys prepared for the timed loops
 * (words, length, hash). No side effects on import: the main thread and the S5 workers share it.
 */
import { KeyScratch } from '../../native-free-shm/index.js';
import type { ShmTable } from '../../native-free-shm/index.js';
import { kKeyBytes, kMaxKeyBytes } from './config.js';

/** mulberry32: small, fast, deterministic. */
export function makeRng(seed: number): () => number {
  let a = seed | 0;
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return (t ^ (t >>> 14)) >>> 0;
  };
}

export function shuffledOrder(n: number, rng: () => number): Uint32Array {
  const order = new Uint32Array(n);
  for (let i = 0; i < n; i++) order[i] = i;
  for (let i = n - 1; i > 0; i--) {
    const j = rng() % (i + 1);
    const t = order[i];
    order[i] = order[j];
    order[j] = t;
  }
  return order;
}

const kHex = '0123456789abcdef';
const kHexBytes = new Uint8Array(16).map((_, i) => kHex.charCodeAt(i));
const kPrefix = [0x72, 0x65, 0x71, 0x3a]; // "req:"

function scramble(c: number): number {
  return Math.imul(c ^ 0x5bd1e995, 0x9e3779b1) >>> 0;
}

/** Key number `c` as a 20-byte string: "req:" + 8 hex of a scramble of c + 8 hex of c. */
export function keyString(c: number): string {
  return `req:${scramble(c).toString(16).padStart(8, '0')}${(c >>> 0).toString(16).padStart(8, '0')}`;
}

/** The same bytes as `setString(keyString(c))`, written without making a string. */
export function writeKey(scratch: KeyScratch, c: number): void {
  const b = scratch.bytes;
  b[0] = kPrefix[0];
  b[1] = kPrefix[1];
  b[2] = kPrefix[2];
  b[3] = kPrefix[3];
  const s = scramble(c);
  const u = c >>> 0;
  for (let i = 0; i < 8; i++) {
    b[4 + i] = kHexBytes[(s >>> (28 - 4 * i)) & 15];
    b[12 + i] = kHexBytes[(u >>> (28 - 4 * i)) & 15];
  }
  scratch.seal(kKeyBytes);
}

/** Sanity: the fast key writer makes the same bytes as setString. */
export function checkKeyWriter(): void {
  const a = new KeyScratch(kMaxKeyBytes);
  const b = new KeyScratch(kMaxKeyBytes);
  for (const c of [0, 1, 12345, 0x7fffffff, 0xfffffffe]) {
    writeKey(a, c);
    b.setString(keyString(c));
    if (a.length !== kKeyBytes || b.length !== kKeyBytes || a.words.some((v, i) => v !== b.words[i])) {
      throw new Error(`key writer mismatch for ${c}`);
    }
  }
}

/**
 * Keys prepared for the timed loops (words, length, hash), so the loops only look up. `packed` holds
 * the same keys as records of `kPackedStride` words, [hash, length, key words…], which the timed
 * kernels read: a key then costs one cache line, as the Map's key string does (32 k separate
 * typed arrays would cost two misses each, the view object and its backing store: a cost of this
 * benchmark's key storage, not of the table; the registry's own keys sit in one reused scratch buffer).
 */
export interface PreparedKeys {
  strings: readonly string[];
  words: Int32Array[];
  lengths: Int32Array;
  hashes: Int32Array;
  packed: Int32Array;
}

/** Words per packed key record: hash, length, up to 6 key words (two records per 64-byte line). */
export const kPackedStride = 8;
export const kPackedHash = 0;
export const kPackedLen = 1;
export const kPackedKey = 2;

export function prepareKeys(table: ShmTable, strings: readonly string[], maxKeyBytes: number): PreparedKeys {
  const words: Int32Array[] = [];
  const lengths = new Int32Array(strings.length);
  const hashes = new Int32Array(strings.length);
  const packed = new Int32Array(strings.length * kPackedStride);
  for (let i = 0; i < strings.length; i++) {
    const scratch = new KeyScratch(maxKeyBytes).setString(strings[i]);
    words.push(scratch.words);
    lengths[i] = scratch.length;
    hashes[i] = table.hash(scratch.words, scratch.length);
    const keyWords = (scratch.length + 3) >>> 2;
    if (keyWords > kPackedStride - kPackedKey) throw new Error(`key of ${scratch.length} bytes does not fit a packed record`);
    const at = i * kPackedStride;
    packed[at + kPackedHash] = hashes[i];
    packed[at + kPackedLen] = scratch.length;
    packed.set(scratch.words.subarray(0, keyWords), at + kPackedKey);
  }
  return { strings, words, lengths, hashes, packed };
}
