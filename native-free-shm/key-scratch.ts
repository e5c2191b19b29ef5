import { wordsFor } from './hash.js';

/**
 * A reusable key buffer: bytes and the same memory as 32-bit words, the form the table hashes and
 * compares. Bytes past `length` up to the word boundary are kept zero.
 */
export class KeyScratch {
  readonly bytes: Uint8Array;
  readonly words: Int32Array;
  length = 0;

  constructor(maxBytes: number) {
    const buffer = new ArrayBuffer(wordsFor(maxBytes) * 4 + 4);
    this.bytes = new Uint8Array(buffer);
    this.words = new Int32Array(buffer);
  }

  /** Zeroes the padding after `length` bytes (call after writing bytes directly). */
  seal(length: number): void {
    this.length = length;
    const end = wordsFor(length) * 4;
    for (let i = length; i < end; i++) this.bytes[i] = 0;
  }

  setBytes(source: Uint8Array): this {
    this.bytes.set(source);
    this.seal(source.length);
    return this;
  }

  /** Latin-1 / UTF-16 low bytes would not be injective, so strings go in as UTF-8. */
  setString(text: string): this {
    const { written } = new TextEncoder().encodeInto(text, this.bytes);
    this.seal(written);
    return this;
  }
}
