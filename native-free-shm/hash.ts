/**
 * Seeded MurmurHash3 (x86, 32-bit) over a key's 32-bit words. The seed is random per table, so a
 * client cannot aim keys at one home slot without knowing it. Not a cryptographic hash: see README.
 *
 * Split in two so a caller can hash a shared key prefix once and continue from it: the length
 * enters only in `finishHash`.
 */
export function mixWords(h: number, words: Int32Array, from: number, to: number): number {
  for (let i = from; i < to; i++) {
    let k = Math.imul(words[i], 0xcc9e2d51);
    k = (k << 15) | (k >>> 17);
    k = Math.imul(k, 0x1b873593);
    h ^= k;
    h = (h << 13) | (h >>> 19);
    h = (Math.imul(h, 5) + 0xe6546b64) | 0;
  }
  return h;
}

export function finishHash(h: number, byteLength: number): number {
  h ^= byteLength;
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  h ^= h >>> 16;
  return h;
}

/** The whole hash of `byteLength` key bytes held (zero-padded) in `words`. */
export function hashWords(words: Int32Array, wordCount: number, byteLength: number, seed: number): number {
  return finishHash(mixWords(seed, words, 0, wordCount), byteLength);
}

/** Words needed for `byteLength` key bytes. */
export function wordsFor(byteLength: number): number {
  return (byteLength + 3) >>> 2;
}
