/**
 * Keys prepared for the table benchmarks (words, length, hash), so the timed loops only look up.
 * No side effects on import: bench/registry.ts and its contention worker share it.
 */
import { KeyScratch } from '../native-free-shm/index.js';
import type { ShmTable } from '../native-free-shm/index.js';

export interface PreparedKeys {
  strings: readonly string[];
  words: Int32Array[];
  lengths: Int32Array;
  hashes: Int32Array;
}

export function prepareKeys(table: ShmTable, strings: readonly string[], maxKeyBytes: number): PreparedKeys {
  const words: Int32Array[] = [];
  const lengths = new Int32Array(strings.length);
  const hashes = new Int32Array(strings.length);
  for (let i = 0; i < strings.length; i++) {
    const scratch = new KeyScratch(maxKeyBytes).setString(strings[i]);
    words.push(scratch.words);
    lengths[i] = scratch.length;
    hashes[i] = table.hash(scratch.words, scratch.length);
  }
  return { strings, words, lengths, hashes };
}
