import { describe, expect, it } from 'vitest';
import { clientBucket, deriveScope, formatIPv6 } from '../../src/index.js';

describe('clientBucket', () => {
  it.each([
    ['192.0.2.7', '192.0.2.7'],
    ['127.0.0.1', '127.0.0.1'],
    ['2001:db8:1:2:3:4:5:6', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:a:b:c:d', '2001:db8:1:2::/64'],
    ['2001:db8:1:2:ffff:0:0:1', '2001:db8:1:2::/64'],
    ['2001:DB8:0001:0002::1', '2001:db8:1:2::/64'],
    ['::ffff:192.0.2.1', '192.0.2.1'],
    ['::ffff:c000:201', '192.0.2.1'],
    ['::1', '::/64'],
    ['::', '::/64'],
    ['2001:0:0:1::5', '2001:0:0:1::/64'],
    ['2001:db8::', '2001:db8::/64'],
    ['2001::1', '2001::/64'],
    ['::a.b.c.d', 'unknown'],
    ['::192.0.2.1', '::/64'], // IPv4-compatible (deprecated) is not unwrapped
    ['fe80::1%eth0', 'fe80::/64'],
    ['', 'unknown'],
    ['garbage', 'unknown'],
    ['1.2.3', 'unknown'],
    ['01.2.3.4', 'unknown'],
    ['256.1.1.1', 'unknown'],
    ['1::2::3', 'unknown'],
    ['x'.repeat(10_000), 'unknown'],
  ])('%s -> %s', (input, output) => {
    expect(clientBucket(input)).toBe(output);
  });

  it.each([undefined, null, 42, {}, ['127.0.0.1']])('non-strings are unknown: %j', (input) => {
    expect(clientBucket(input)).toBe('unknown');
  });

  it('formats RFC 5952: longest zero run, leftmost on ties, none for a single zero', () => {
    expect(formatIPv6([0x2001, 0xdb8, 0, 0, 1, 0, 0, 1])).toBe('2001:db8::1:0:0:1');
    expect(formatIPv6([0x2001, 0xdb8, 0, 1, 1, 1, 1, 1])).toBe('2001:db8:0:1:1:1:1:1');
    expect(formatIPv6([0, 0, 0, 0, 0, 0, 0, 0])).toBe('::');
  });
});

describe('deriveScope', () => {
  it('prefers the session, then the principal, then the client address', () => {
    expect(deriveScope({ sessionId: 'sess-1', principal: { id: 'user-1' }, address: '203.0.113.9' })).toBe('session:sess-1');
    expect(deriveScope({ principal: { id: 'user-1' }, address: '203.0.113.9' })).toBe('principal:user-1');
    expect(deriveScope({ address: '203.0.113.9' })).toBe('ip:203.0.113.9');
  });

  it.each([123, { nested: 'x' }, Symbol('atom'), null])('a principal id that is not a string falls back to the address: %s', (id) => {
    expect(deriveScope({ principal: { id }, address: '203.0.113.9' })).toBe('ip:203.0.113.9');
  });

  it('scopes an anonymous IPv6 client to its /64', () => {
    expect(deriveScope({ address: '2001:db8:1:2:a:b:c:d' })).toBe('ip:2001:db8:1:2::/64');
    expect(deriveScope({ address: '2001:db8:1:2:ffff:0:0:1' })).toBe('ip:2001:db8:1:2::/64');
  });

  it('falls back to ip:unknown with nothing to go on', () => {
    expect(deriveScope({})).toBe('ip:unknown');
  });
});
