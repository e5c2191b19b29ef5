import { createHash } from 'node:crypto';
import { KeyScratch, hashWords, wordsFor } from '../../native-free-shm/index.js';

/** Longest string request id, in UTF-8 bytes. */
export const kMaxIdBytes = 256;
/** Longest scope stored as is, in UTF-8 bytes; a longer one is stored as its SHA-256. */
export const kMaxScopeBytes = 256;
/** Key layout: [scope length: 2 bytes, bit 15 = digest][scope bytes][id tag: 1 byte][id bytes]. */
export const kMaxKeyBytes = 2 + kMaxScopeBytes + 1 + kMaxIdBytes;
const kDigestFlag = 0x8000;
const kTagInteger = 1;
const kTagString = 2;

/** A JSON-RPC request id the registry accepts: a safe integer, or a string of at most 256 UTF-8 bytes. */
export type RequestId = number | string;

/**
 * Writes `text` as WTF-8 (UTF-8 that also encodes unpaired surrogates, so distinct strings never share
 * bytes) from `at`; returns the end offset, or -1 past `limit`.
 */
function writeWtf8(text: string, bytes: Uint8Array, at: number, limit: number): number {
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

/** True for the ids the registry accepts (SPEC §3). `42` and `"42"` are both valid and distinct. */
export function validRequestId(id: unknown): id is RequestId {
  if (typeof id === 'number') return Number.isSafeInteger(id);
  if (typeof id !== 'string') return false;
  if (id.length > kMaxIdBytes) return false; // every UTF-16 unit is at least one byte
  if (id.length * 3 <= kMaxIdBytes) return true;
  return writeWtf8(id, scratchForCheck, 0, kMaxIdBytes) !== -1;
}
const scratchForCheck = new Uint8Array(kMaxIdBytes);

/**
 * Turns (id, scope) into key bytes in a reusable scratch buffer. One per thread and registry; the
 * last scope's bytes and hash are kept, since consecutive requests usually share a scope.
 */
export class KeyEncoder {
  readonly key = new KeyScratch(kMaxKeyBytes);
  readonly #seed: number;
  readonly #f64 = new Float64Array(1);
  readonly #f64Bytes = new Uint8Array(this.#f64.buffer);
  #scope: string | undefined;
  #scopeEnd = 0;
  #scopeHash = 0;

  constructor(seed: number) {
    this.#seed = seed;
  }

  /** Hash of the scope part alone (the registry's per-scope quota buckets use it). */
  get scopeHash(): number {
    return this.#scopeHash;
  }

  /** Bytes of the length field plus the stored scope: the key prefix every row of the scope shares. */
  get scopeEnd(): number {
    return this.#scopeEnd;
  }

  /** Encodes the key. False when `id` is not a valid request id. `scope` must be a string. */
  encode(id: unknown, scope: string): boolean {
    const bytes = this.key.bytes;
    if (scope !== this.#scope) this.#encodeScope(scope);
    let o = this.#scopeEnd;
    if (typeof id === 'number') {
      if (!Number.isSafeInteger(id)) return false;
      bytes[o++] = kTagInteger;
      this.#f64[0] = id + 0; // -0 and 0 are one id
      const b = this.#f64Bytes;
      bytes[o] = b[0]; bytes[o + 1] = b[1]; bytes[o + 2] = b[2]; bytes[o + 3] = b[3];
      bytes[o + 4] = b[4]; bytes[o + 5] = b[5]; bytes[o + 6] = b[6]; bytes[o + 7] = b[7];
      o += 8;
    } else if (typeof id === 'string') {
      bytes[o++] = kTagString;
      if (id.length > kMaxIdBytes) return false;
      o = writeWtf8(id, bytes, o, o + kMaxIdBytes);
      if (o === -1) return false;
    } else {
      return false;
    }
    this.key.seal(o);
    return true;
  }

  #encodeScope(scope: string): void {
    const bytes = this.key.bytes;
    let end = writeWtf8(scope, bytes, 2, 2 + kMaxScopeBytes);
    let header: number;
    if (end === -1) {
      const digest = createHash('sha256').update(scope).digest();
      bytes.set(digest, 2);
      end = 2 + digest.length;
      header = kDigestFlag | digest.length;
    } else {
      header = end - 2;
    }
    bytes[0] = header & 0xff;
    bytes[1] = header >>> 8;
    this.key.seal(end);
    this.#scopeHash = hashWords(this.key.words, wordsFor(end), end, this.#seed ^ 0x5bd1e995);
    this.#scope = scope;
    this.#scopeEnd = end;
  }
}

/** Reads the id back out of key bytes (for diagnostics and eviction order). */
export function idBytesOf(bytes: Uint8Array, length: number): Uint8Array {
  const scopeEnd = 2 + (((bytes[1] << 8) | bytes[0]) & 0x7fff);
  return bytes.subarray(scopeEnd, length);
}

/** Bytes of the length header plus the scope, from a key's first two bytes. */
export function scopeEndOf(bytes: Uint8Array, at = 0): number {
  return 2 + (((bytes[at + 1] << 8) | bytes[at]) & 0x7fff);
}
