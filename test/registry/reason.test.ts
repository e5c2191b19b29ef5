import { describe, expect, it } from 'vitest';
import { sanitizeReason } from '../../src/index.js';

const codePoints = (s: string) => [...s].length;
const validUtf16 = (s: string) => !/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/.test(s);

describe('sanitizeReason (reasons cut and cleaned by code point)', () => {
  it('passes plain strings through', () => {
    expect(sanitizeReason('user pressed stop')).toBe('user pressed stop');
    expect(sanitizeReason('')).toBe('');
  });

  it('keeps null and undefined as "no reason"', () => {
    expect(sanitizeReason(null)).toBeUndefined();
    expect(sanitizeReason(undefined)).toBeUndefined();
  });

  it.each([
    ['tools/call\u0000\u0001\u0002', 'tools/call'],
    ['a\u007Fb', 'ab'],
    ['a\u0085b', 'ab'],
    ['ok\r\n2026-01-01 [error] forged', 'ok2026-01-01 [error] forged'],
    ['\u001b[31mred', '[31mred'],
    ['a\u061Cb\u2060c\uFEFFd', 'abcd'],
    ['x\u200By\u200Fz', 'xyz'],
    ['\u2028\u2029\u202A\u202Eq', 'q'],
    ['\u2066\u2069\u206Fw', 'w'],
    ['tab\there', 'tabhere'],
  ])('strips control and invisible formatting characters: %j', (input, output) => {
    expect(sanitizeReason(input)).toBe(output);
  });

  it('clamps to 200 characters, or an explicit length', () => {
    expect(sanitizeReason('x'.repeat(5000))).toHaveLength(200);
    expect(sanitizeReason('x'.repeat(500), 40)).toHaveLength(40);
  });

  it('never splits a surrogate pair, at every length around the clamp', () => {
    for (const ch of ['€', '𝄞']) {
      for (let n = 195; n <= 215; n++) {
        const out = sanitizeReason(ch.repeat(n))!;
        expect(validUtf16(out)).toBe(true);
        expect(codePoints(out)).toBe(Math.min(n, 200));
      }
    }
    expect(codePoints(sanitizeReason('€'.repeat(300))!)).toBe(200);
  });

  it('drops unpaired surrogates (they could not be written as UTF-8)', () => {
    expect(sanitizeReason('a\uD800b\uDC00c\uD83D')).toBe('abc');
  });

  it('keeps visible characters that follow a long run of stripped ones', () => {
    expect(sanitizeReason('\u0000'.repeat(1000) + 'visible')).toBe('visible');
  });

  it('bounds the work on hostile input', () => {
    const huge = '\u0000'.repeat(4 * 1024 * 1024) + 'late';
    expect(sanitizeReason(huge)).toBe(''); // only the first 64 KiB are looked at
    expect(sanitizeReason('a\u0301'.repeat(400_000))!.length).toBeLessThanOrEqual(400);
  });

  it.each([
    [42, '42'],
    [true, 'true'],
    [10n, '10'],
    [[1.5], '[1.5]'],
    [[{}], '[{}]'],
    [[-1], '[-1]'],
    [[], '[]'],
    [[1, 2], '[1, 2]'],
    [['a'], '["a"]'],
    [{ why: 'because' }, '{"why": "because"}'],
    [Symbol('s'), 'Symbol(s)'],
  ])('renders non-strings to a short string: %s', (input, output) => {
    expect(sanitizeReason(input)).toBe(output);
  });

  it('renders hostile objects without throwing', () => {
    const cyclic: Record<string, unknown> = {};
    cyclic.self = cyclic;
    const throwing = new Proxy({}, { ownKeys() { throw new Error('no'); } });
    expect(typeof sanitizeReason(cyclic)).toBe('string');
    expect(sanitizeReason(throwing)).toBe('[unrenderable]');
    expect(sanitizeReason(() => 1)).toBe('[function]');
    expect(sanitizeReason(JSON.parse('{"__proto__": {"x": 1}, "constructor": 2}'))).toBe('{"__proto__": {"x": 1}, "constructor": 2}');
    const wide = Array.from({ length: 100_000 }, (_, i) => i);
    expect(codePoints(sanitizeReason(wide)!)).toBeLessThanOrEqual(200);
    const deep: unknown[] = [];
    let at = deep;
    for (let i = 0; i < 10_000; i++) { const next: unknown[] = []; at.push(next); at = next; }
    expect(sanitizeReason(deep)).toBe('[[[[[…]]]]]');
  });
});
