/**
 * The bus codec's strict reader against msgpackr, the writer every node uses: every message a node
 * can send reads back as itself, and arbitrary bytes never throw, and read as a message only when a
 * general MessagePack decoder reads the same message from them.
 */
import fc from 'fast-check';
import { Packr } from 'msgpackr';
import { describe, expect, it } from 'vitest';
import { checkMessage, decodeMessage, encodeMessage, kMaxNodeId, kMaxReason, kMaxRequestId, kMaxScope } from '../../src/cluster/codec.js';
import type { BusMessage } from '../../src/cluster/codec.js';

const packr = new Packr({ useRecords: false, moreTypes: false });
const text = (max: number) => fc.string({ unit: 'binary', maxLength: max });
const id = fc.oneof(fc.integer({ min: Number.MIN_SAFE_INTEGER, max: Number.MAX_SAFE_INTEGER }), fc.integer(), text(kMaxRequestId / 2));
const message: fc.Arbitrary<BusMessage> = fc.oneof(
  fc.record({ k: fc.constant('c' as const), f: text(kMaxNodeId / 4), s: text(kMaxScope / 4), i: id, r: fc.option(text(kMaxReason / 4), { nil: undefined }) }),
  fc.record({ k: fc.constant('a' as const), f: text(64), n: text(64), t: fc.integer({ min: 0, max: 2 ** 40 }), s: text(64), x: fc.string({ maxLength: 4_000 }) }),
  fc.record({ k: fc.constant('l' as const), f: text(64), l: fc.constantFrom('tools' as const, 'resources' as const, 'prompts' as const) }),
);

describe('bus codec', () => {
  it('reads back every message msgpackr writes', () => {
    fc.assert(fc.property(message, (m) => {
      expect(decodeMessage(encodeMessage(m))).toEqual(m);
    }), { numRuns: 2_000 });
  });

  it('lone surrogates (which JSON can carry) cross as U+FFFD instead of making the message unreadable', () => {
    const m: BusMessage = { k: 'c', f: 'n', s: 'principal:\ud800x', i: '\udc00', r: 'a\ud83d' };
    expect(decodeMessage(encodeMessage(m))).toEqual({ k: 'c', f: 'n', s: 'principal:\ufffdx', i: '\ufffd', r: 'a\ufffd' });
    const long: BusMessage = { k: 'a', f: 'n', n: 'm', t: 1, s: 's', x: `${'y'.repeat(100_000)}\udfff` };
    expect(decodeMessage(encodeMessage(long))).toMatchObject({ x: `${'y'.repeat(100_000)}\ufffd` });
  });

  it('never throws on arbitrary bytes, and accepts only what a general decoder reads as the same message', () => {
    const bytes = fc.oneof(
      fc.uint8Array({ maxLength: 200 }),
      // Good messages with a few bytes changed: the inputs most likely to slip through.
      fc.tuple(message, fc.array(fc.tuple(fc.nat(), fc.integer({ min: 0, max: 255 })), { maxLength: 4 })).map(([m, edits]) => {
        const b = Uint8Array.from(encodeMessage(m));
        for (const [at, v] of edits) if (b.length > 0) b[at % b.length] = v;
        return b;
      }),
    );
    fc.assert(fc.property(bytes, (b) => {
      const read = decodeMessage(b);
      if (read === undefined) return;
      let general: unknown;
      try {
        general = packr.unpack(b);
      } catch {
        throw new Error(`accepted bytes msgpackr refuses: ${Buffer.from(b).toString('hex')}`);
      }
      expect(checkMessage(general)).toEqual(read);
    }), { numRuns: 5_000 });
  });
});
