/**
 * Whether a listening port is ours alone: SO_REUSEPORT (uWS always, node:http's reusePort) lets any
 * other server with the option bind the same address without an error, and the kernel then splits
 * the connections between the two. Linux lists every listening socket in /proc/net/tcp{,6}.
 */
import { readFileSync } from 'node:fs';
import { isIPv4, isIPv6 } from 'node:net';
import { endianness } from 'node:os';

/** The TCP socket state /proc/net/tcp{,6} writes for a listening socket. */
const kProcListen = '0A';

/**
 * The number of listening TCP sockets on exactly `host:port` in this network namespace, from
 * /proc/net/tcp (IPv4) or /proc/net/tcp6 (IPv6). Undefined where that cannot be known: `host` is
 * not an IP literal, or the file is not there (not Linux).
 *
 * Why: the supervisor probes a port (checkPortFree) before its first listener binds it, so a second
 * SO_REUSEPORT server that binds in between (two servers starting together, or both given the same
 * picked port) shares the port without any error. Counted right after the first listener is up,
 * more than one listener on its address means the port is shared; whichever of two servers counts
 * last sees both.
 */
export function listenersOn(host: string, port: number): number | undefined {
  const address = procAddress(host);
  if (address === undefined) return undefined;
  let table: string;
  try {
    table = readFileSync(isIPv4(host) ? '/proc/net/tcp' : '/proc/net/tcp6', 'latin1');
  } catch {
    return undefined;
  }
  const wanted = `${address}:${port.toString(16).toUpperCase().padStart(4, '0')}`;
  let count = 0;
  // Each line: "  sl: local_address rem_address st ...", addresses as HEX:PORT.
  for (const line of table.split('\n')) {
    const fields = line.trim().split(/\s+/);
    if (fields[1] === wanted && fields[3] === kProcListen) count++;
  }
  return count;
}

/** How /proc/net/tcp{,6} spells an address: each 32-bit word as hex in the machine's byte order. */
function procAddress(host: string): string | undefined {
  const bytes = ipBytes(host);
  if (bytes === undefined) return undefined;
  const little = endianness() === 'LE';
  let text = '';
  for (let word = 0; word < bytes.length; word += 4) {
    for (let i = 0; i < 4; i++) text += bytes[word + (little ? 3 - i : i)]!.toString(16).toUpperCase().padStart(2, '0');
  }
  return text;
}

/** The 4 or 16 bytes of an IP literal (IPv6 may end in a dotted IPv4 part); undefined for a name. */
function ipBytes(host: string): number[] | undefined {
  if (isIPv4(host)) return host.split('.').map(Number);
  if (!isIPv6(host)) return undefined;
  const literal = host.includes('%') ? host.slice(0, host.indexOf('%')) : host;
  const groups = (part: string): number[] => {
    if (part === '') return [];
    const out: number[] = [];
    for (const group of part.split(':')) {
      if (group.includes('.')) {
        const [a, b, c, d] = group.split('.').map(Number) as [number, number, number, number];
        out.push((a << 8) | b, (c << 8) | d);
      } else {
        out.push(parseInt(group, 16));
      }
    }
    return out;
  };
  const gap = literal.indexOf('::');
  const head = groups(gap === -1 ? literal : literal.slice(0, gap));
  const tail = gap === -1 ? [] : groups(literal.slice(gap + 2));
  const words = [...head, ...new Array<number>(8 - head.length - tail.length).fill(0), ...tail];
  return words.flatMap((w) => [w >> 8, w & 0xff]);
}
