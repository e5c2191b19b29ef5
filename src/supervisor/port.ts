import { readFileSync } from 'node:fs';
import { createServer as createNetServer, isIPv4, isIPv6 } from 'node:net';
import { endianness } from 'node:os';
import { SluiceError } from '../errors.js';

/** A port that was free a moment ago on `host`. */
export function freePort(host: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', reject);
    probe.listen(0, host, () => {
      const address = probe.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      probe.close(() => resolve(port));
    });
  });
}

/**
 * Rejects with `port_in_use` when another process holds `host:port`. Our HTTP workers share one
 * port through SO_REUSEPORT, which would just as silently share it with any other SO_REUSEPORT
 * holder (another Sluice, any uWS server) and split the traffic. A plain bind without SO_REUSEPORT
 * fails on a port held by anyone, reuseport or not, so one brief exclusive listen before the
 * workers start tells us. Other probe errors are left to the real listen to report.
 */
export function checkPortFree(host: string, port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const probe = createNetServer();
    probe.once('error', (error: NodeJS.ErrnoException) => {
      if (error.code === 'EADDRINUSE') {
        reject(new SluiceError('port_in_use', `cannot listen on ${host}:${port}: the port is already in use by another process (EADDRINUSE)`, { cause: error }));
      } else {
        resolve();
      }
    });
    probe.listen({ port, host, exclusive: true }, () => { probe.close(() => resolve()); });
  });
}

/** The TCP socket state /proc/net/tcp{,6} writes for a listening socket. */
const kProcListen = '0A';

/**
 * The number of listening TCP sockets on exactly `host:port` in this network namespace, from
 * /proc/net/tcp (IPv4) or /proc/net/tcp6 (IPv6). Undefined where that cannot be known: `host` is
 * not an IP literal, or the file is not there (not Linux).
 *
 * Why: checkPortFree runs before our first HTTP worker binds, so a second SO_REUSEPORT server that
 * binds in between (two servers starting together, or both given the same picked port) shares the
 * port without any error. Counted right after the first worker listens, more than one listener on
 * its address means the port is shared. Whichever of two servers counts last sees both.
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
