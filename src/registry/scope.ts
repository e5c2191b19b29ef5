import { isIPv4, isIPv6 } from 'node:net';

/**
 * The address bucket an anonymous client is scoped to: IPv4 as is, IPv4-mapped IPv6 unwrapped to
 * IPv4, other IPv6 as its /64 in RFC 5952 form (a host usually holds a whole /64 and could rotate
 * through it), and `'unknown'` for anything else.
 *
 * ```ts
 * clientBucket('2001:db8:1:2:a:b:c:d') // '2001:db8:1:2::/64'
 * clientBucket('::ffff:192.0.2.1')     // '192.0.2.1'
 * ```
 */
export function clientBucket(address: unknown): string {
  if (typeof address !== 'string' || address.length === 0 || address.length > 64) return 'unknown';
  if (isIPv4(address)) return address;
  let text = address;
  const zone = text.indexOf('%');
  if (zone > 0) text = text.slice(0, zone);
  if (!isIPv6(text)) return 'unknown';
  const groups = parseIPv6(text);
  if (groups === undefined) return 'unknown';
  if (groups[0] === 0 && groups[1] === 0 && groups[2] === 0 && groups[3] === 0 && groups[4] === 0 && groups[5] === 0xffff) {
    return `${groups[6] >>> 8}.${groups[6] & 0xff}.${groups[7] >>> 8}.${groups[7] & 0xff}`;
  }
  return `${formatIPv6([groups[0], groups[1], groups[2], groups[3], 0, 0, 0, 0])}/64`;
}

/** Eight 16-bit groups of a textual IPv6 address already accepted by `net.isIPv6`. */
function parseIPv6(text: string): number[] | undefined {
  const parseSide = (side: string): number[] | undefined => {
    if (side === '') return [];
    const out: number[] = [];
    const parts = side.split(':');
    for (let i = 0; i < parts.length; i++) {
      const part = parts[i];
      if (i === parts.length - 1 && part.includes('.')) {
        if (!isIPv4(part)) return undefined;
        const [a, b, c, d] = part.split('.').map(Number);
        out.push((a << 8) | b, (c << 8) | d);
      } else {
        if (!/^[0-9a-fA-F]{1,4}$/.test(part)) return undefined;
        out.push(parseInt(part, 16));
      }
    }
    return out;
  };
  const gap = text.indexOf('::');
  if (gap === -1) {
    const all = parseSide(text);
    return all?.length === 8 ? all : undefined;
  }
  const head = parseSide(text.slice(0, gap));
  const tail = parseSide(text.slice(gap + 2));
  if (head === undefined || tail === undefined || head.length + tail.length > 7) return undefined;
  return [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
}

/** RFC 5952: lower-case hex, no leading zeros, the longest run (≥ 2) of zero groups as `::`, leftmost on ties. */
export function formatIPv6(groups: readonly number[]): string {
  let bestStart = -1;
  let bestLen = 1;
  for (let i = 0; i < 8;) {
    if (groups[i] !== 0) { i++; continue; }
    let j = i;
    while (j < 8 && groups[j] === 0) j++;
    if (j - i > bestLen) { bestStart = i; bestLen = j - i; }
    i = j;
  }
  const hex = groups.map((g) => g.toString(16));
  if (bestStart === -1) return hex.join(':');
  return `${hex.slice(0, bestStart).join(':')}::${hex.slice(bestStart + bestLen).join(':')}`;
}

/** What a request is scoped by, most specific first. */
export interface ScopeInputs {
  /** The MCP session id (legacy era, sessions on). */
  sessionId?: string | undefined;
  /** The authenticated principal; used only when its `id` is a string. */
  principal?: { id?: unknown } | undefined;
  /** The client's address (socket peer, or X-Forwarded-For behind a trusted proxy). */
  address?: string | undefined;
}

/** `session:<id>`, else `principal:<id>`, else `ip:<bucket>`: the prefixes keep the namespaces apart. */
export function deriveScope(inputs: ScopeInputs): string {
  if (typeof inputs.sessionId === 'string' && inputs.sessionId !== '') return `session:${inputs.sessionId}`;
  const id = inputs.principal?.id;
  if (typeof id === 'string') return `principal:${id}`;
  return `ip:${clientBucket(inputs.address)}`;
}
