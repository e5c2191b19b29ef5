import { createHash } from 'node:crypto';
import * as shm from '../../native-free-shm/index.js';
import { KeyScratch } from '../../native-free-shm/index.js';
import { SluiceError } from '../errors.js';

// Module-local copies: optimised code reads an imported binding through its cell, with a hole check,
// at every use (V8 does not fold another module's exports); a module-local const is an immediate.
const { finishHash, mixWords, wordsFor } = shm;

/** Longest string request id, in UTF-8 bytes. */
export const kMaxIdBytes = 256;
/** Longest scope stored as is, in UTF-8 bytes; a longer one is stored as its SHA-256. */
export const kMaxScopeBytes = 256;
/**
 * Key layout, word-aligned so the scope part is hashed once per scope and integer ids are two words:
 * [header: scope length in bytes, bit 15 = digest, 2 bytes + 2 zero][scope bytes, zero-padded to 4]
 * [id tag: 1 = integer, 2 = string, 1 byte + 3 zero][integer: float64 bits | string: UTF-8 bytes].
 */
export const kMaxKeyBytes = 4 + kMaxScopeBytes + 4 + kMaxIdBytes;
const kDigestFlag = 0x8000;
const kTagInteger = 1;
const kTagString = 2;
const kScopeHashSalt = 0x5bd1e995;

/** A JSON-RPC request id the registry accepts: a safe integer, or a string of at most 256 UTF-8 bytes. */
export type RequestId = number | string;

/**
 * Writes `text` as WTF-8 (UTF-8 that also encodes unpaired surrogates, so distinct strings never share
 * bytes) from `at`; returns the end offset, or -1 past `limit`.
 */
export function writeWtf8(text: string, bytes: Uint8Array, at: number, limit: number): number {
  const n = text.length;
  let o = at;
  for (let i = 0; i < n; i++) {
    let c = text.charCodeAt(i);
    if (c < 0x80) {
      if (o >= limit) return -1;
      bytes[o++] = c;
    } else if (c < 0x800) {
      if (o + 2 > limit) return -1;
      bytes[o++] = 0xc0 | (c >> 6);
      bytes[o++] = 0x80 | (c & 0x3f);
    } else {
      if (c >= 0xd800 && c <= 0xdbff && i + 1 < n) {
        const d = text.charCodeAt(i + 1);
        if (d >= 0xdc00 && d <= 0xdfff) {
          if (o + 4 > limit) return -1;
          c = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
          bytes[o++] = 0xf0 | (c >> 18);
          bytes[o++] = 0x80 | ((c >> 12) & 0x3f);
          bytes[o++] = 0x80 | ((c >> 6) & 0x3f);
          bytes[o++] = 0x80 | (c & 0x3f);
          continue;
        }
      }
      if (o + 3 > limit) return -1;
      bytes[o++] = 0xe0 | (c >> 12);
      bytes[o++] = 0x80 | ((c >> 6) & 0x3f);
      bytes[o++] = 0x80 | (c & 0x3f);
    }
  }
  return o;
}

/** The scope, when it is a string; a non-string scope is a programming error (`invalid_scope`). */
export function checkScope(scope: unknown): string {
  if (typeof scope !== 'string') throw new SluiceError('invalid_scope', `scope must be a string, got ${typeof scope}`);
  return scope;
}

const checkBytes = new Uint8Array(kMaxIdBytes);

/** True for the ids the registry accepts: a safe integer, or a string of at most 256 UTF-8 bytes. `42` and `"42"` are both valid and distinct. */
export function validRequestId(id: unknown): id is RequestId {
  if (typeof id === 'number') return Number.isSafeInteger(id);
  if (typeof id !== 'string') return false;
  if (id.length > kMaxIdBytes) return false; // every UTF-16 unit is at least one byte
  if (id.length * 3 <= kMaxIdBytes) return true;
  return writeWtf8(id, checkBytes, 0, kMaxIdBytes) !== -1;
}

/**
 * Turns (id, scope) into key bytes in a reusable scratch buffer and hashes them. One per thread and
 * registry; the last scope's bytes and hash state are kept, since consecutive requests usually share
 * a scope, and encoding the same key twice in a row (untrack then clear) costs nothing.
 */
export class KeyEncoder {
  readonly key = new KeyScratch(kMaxKeyBytes);
  /** The tables' seeded hash of the current key (both tables share the seed). */
  hash = 0;
  readonly #seed: number;
  readonly #f64 = new Float64Array(1);
  readonly #f64Words = new Int32Array(this.#f64.buffer);
  #scope: string | undefined;
  #scopeWords = 0;
  #scopeState = 0;
  #scopeHash = 0;
  #id: unknown = undefined;
  #valid = false;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /** Hash of the scope part alone (the registry's per-scope quota buckets use it). */
  get scopeHash(): number {
    return this.#scopeHash;
  }

  /** Bytes of the header plus the padded scope: the key prefix every row of the scope shares. */
  get scopeEnd(): number {
    return this.#scopeWords * 4;
  }

  /** Encodes the key. False when `id` is not a valid request id. `scope` must be a string. */
  encode(id: unknown, scope: string): boolean {
    if (id === this.#id && scope === this.#scope && id !== undefined) return this.#valid;
    this.#id = id;
    this.#valid = false;
    if (scope !== this.#scope) this.#encodeScope(scope);
    const words = this.key.words;
    const at = this.#scopeWords;
    let length: number;
    if (typeof id === 'number') {
      if (!Number.isSafeInteger(id)) return false;
      this.#f64[0] = id + 0; // -0 and 0 are one id
      words[at] = kTagInteger;
      words[at + 1] = this.#f64Words[0];
      words[at + 2] = this.#f64Words[1];
      length = (at + 3) * 4;
      this.key.length = length;
    } else if (typeof id === 'string') {
      if (id.length > kMaxIdBytes) return false;
      words[at] = kTagString;
      const start = (at + 1) * 4;
      const end = writeWtf8(id, this.key.bytes, start, start + kMaxIdBytes);
      if (end === -1) return false;
      this.key.seal(end);
      length = end;
    } else {
      return false;
    }
    this.hash = finishHash(mixWords(this.#scopeState, words, at, wordsFor(length)), length);
    this.#valid = true;
    return true;
  }

  #encodeScope(scope: string): void {
    const bytes = this.key.bytes;
    let end = writeWtf8(scope, bytes, 4, 4 + kMaxScopeBytes);
    let header: number;
    if (end === -1) {
      const digest = createHash('sha256').update(scope).digest();
      bytes.set(digest, 4);
      end = 4 + digest.length;
      header = kDigestFlag | digest.length;
    } else {
      header = end - 4;
    }
    this.key.seal(end);
    this.key.words[0] = header;
    const scopeWords = wordsFor(end);
    this.#scopeWords = scopeWords;
    this.#scopeState = mixWords(this.#seed, this.key.words, 0, scopeWords);
    this.#scopeHash = finishHash(mixWords(this.#seed ^ kScopeHashSalt, this.key.words, 0, scopeWords), end);
    this.#scope = scope;
  }
}

/** Bytes of the header plus the padded scope, read from a key's header word. */
export function scopeEndOf(bytes: Uint8Array, at = 0): number {
  const scopeBytes = ((bytes[at + 1] << 8) | bytes[at]) & 0x7fff;
  return 4 + ((scopeBytes + 3) & ~3);
}
