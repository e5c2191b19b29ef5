// parseJson decodes first and checks the bytes (isUtf8) only when the text holds U+FFFD, the
// decoder's mark for a broken sequence. Against a strict reference (TextDecoder with fatal: true,
// which also drops a leading BOM, then JSON.parse), for bodies that are valid, broken in every way
// UTF-8 can be (stray continuation bytes, overlong forms, encoded surrogates, past U+10FFFF, cut
// short) and that carry a properly encoded U+FFFD: the same value, or refused where it refuses.
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { kBrokenJson, parseJson } from '../../src/protocol/message.js';

const strict = new TextDecoder('utf-8', { fatal: true });

/** What parseJson must answer: the reference's value, or kBrokenJson where the reference throws. */
function reference(bytes: Uint8Array): unknown {
  try {
    return JSON.parse(strict.decode(bytes)) as unknown;
  } catch {
    return kBrokenJson;
  }
}

/** Byte sequences that are not UTF-8, each on its own. */
const kBroken: readonly number[][] = [
  [0x80], [0xbf], [0xc0, 0xaf], [0xc1, 0xbf], [0xe0, 0x80, 0xaf], [0xf0, 0x80, 0x80, 0xaf],
  [0xed, 0xa0, 0x80], [0xed, 0xbf, 0xbf], [0xf4, 0x90, 0x80, 0x80], [0xf5, 0x80, 0x80, 0x80], [0xfe], [0xff],
  [0xc3], [0xe2, 0x82], [0xf0, 0x9f, 0x98], [0xc3, 0x41], [0xe2, 0x28, 0xa1],
];

/** A JSON text with a string member whose bytes get `inner` spliced in. */
function body(before: string, inner: Uint8Array, after: string): Uint8Array {
  return Buffer.concat([Buffer.from(`{"jsonrpc":"2.0","id":1,"method":"ping","params":{"s":"${before}`), inner, Buffer.from(`${after}"}}`)]);
}

const text = fc.string({ unit: 'grapheme', maxLength: 12 }).map((s) => s.replace(/["\\\u0000-\u001f]/g, ''));
const broken = fc.constantFrom(...kBroken).map((b) => Uint8Array.from(b));
const fffd = fc.constant(Buffer.from('\ufffd', 'utf8'));
const valid = text.map((s) => Buffer.from(s, 'utf8'));

describe('parseJson', () => {
  it('answers what a strict decoder and JSON.parse answer, for valid, broken and U+FFFD-carrying bodies', () => {
    const inner = fc.array(fc.oneof(valid, broken, fffd), { maxLength: 5 }).map((parts) => Buffer.concat(parts));
    fc.assert(fc.property(text, inner, text, fc.boolean(), (before, middle, after, bom) => {
      const bytes = body(before, middle, after);
      const sent = bom ? Buffer.concat([Buffer.from([0xef, 0xbb, 0xbf]), bytes]) : bytes;
      expect(parseJson(sent)).toEqual(reference(sent));
    }), { numRuns: 2_000 });
  });

  it('answers it for arbitrary bytes too', () => {
    fc.assert(fc.property(fc.uint8Array({ maxLength: 64 }), (bytes) => {
      expect(parseJson(bytes)).toEqual(reference(bytes));
    }), { numRuns: 5_000 });
  });

  it('refuses every broken sequence, alone and beside a properly encoded U+FFFD', () => {
    for (const b of kBroken) {
      expect(parseJson(body('a', Uint8Array.from(b), 'b'))).toBe(kBrokenJson);
      expect(parseJson(body('\ufffd', Uint8Array.from(b), ''))).toBe(kBrokenJson);
      expect(parseJson(body('', Uint8Array.from(b), '\ufffd'))).toBe(kBrokenJson);
    }
  });

  it('keeps a properly encoded U+FFFD, and takes a Uint8Array that is not a Buffer', () => {
    const bytes = body('x\ufffdy', new Uint8Array(0), '');
    expect(parseJson(bytes)).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping', params: { s: 'x\ufffdy' } });
    const plain = new Uint8Array(new ArrayBuffer(bytes.length + 8), 4, bytes.length);
    plain.set(bytes);
    expect(parseJson(plain)).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping', params: { s: 'x\ufffdy' } });
  });

  it('ignores one leading BOM, not two', () => {
    const bom = Buffer.from([0xef, 0xbb, 0xbf]);
    const ping = Buffer.from('{"jsonrpc":"2.0","id":1,"method":"ping"}');
    expect(parseJson(Buffer.concat([bom, ping]))).toEqual({ jsonrpc: '2.0', id: 1, method: 'ping' });
    expect(parseJson(Buffer.concat([bom, bom, ping]))).toBe(kBrokenJson);
  });
});
