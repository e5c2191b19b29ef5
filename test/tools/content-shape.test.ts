// isBase64 against the reference it stands for: `atob` (WHATWG forgiving-base64), which the official
// SDK clients run on every image, audio and blob they receive.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { isBase64 } from '../../src/tools/content-shape.js';

/** What the SDK clients accept: atob does not throw. */
function atobAccepts(text: string): boolean {
  try {
    atob(text);
    return true;
  } catch {
    return false;
  }
}

describe('isBase64', () => {
  it('agrees with atob on strings of base64 characters, padding, whitespace and strangers', () => {
    const char = fc.constantFrom(...'AZaz09+/', '=', ' ', '\n', '\t', '\r', '\f', '\v', '-', '_', 'é', '\u00a0');
    fc.assert(fc.property(fc.array(char, { maxLength: 24 }).map((cs) => cs.join('')), (text) => {
      expect(isBase64(text)).toBe(atobAccepts(text));
    }), { numRuns: 20_000 });
  });

  it('agrees with atob on real encodings, plain and wrapped at 76 columns', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 200 }), (bytes) => {
      const plain = Buffer.from(bytes).toString('base64');
      const wrapped = plain.replace(/(.{76})/g, '$1\r\n');
      expect(isBase64(plain)).toBe(true);
      expect(isBase64(wrapped)).toBe(atobAccepts(wrapped));
      expect(isBase64(wrapped)).toBe(true);
    }));
  });

  it('takes megabytes in one pass (no regular-expression backtracking, no stack)', () => {
    const big = Buffer.alloc(12_000_000, 7).toString('base64');
    expect(isBase64(big)).toBe(true);
    expect(isBase64(`${big.replace(/(.{76})/g, '$1\n')}`)).toBe(true);
    expect(isBase64(`${big}!`)).toBe(false);
  });
});
