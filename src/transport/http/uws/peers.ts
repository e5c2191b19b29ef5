/**
 * The peer address of a uWS listener's requests, without a system call per request where the build
 * allows it.
 *
 * uWS.js answers `getRemoteAddress` with a getpeername(2) on every call, and Sluice needs the
 * address of nearly every request (the client's scope and its in-flight bound). Where system calls
 * are dear that call is the largest single cost of a request: on a paravirtualised VM (about
 * 1.2 µs a call) Sluice's echo on Node 24 went from 39.6 k to 46.6 k req/s without it, a raw uWS
 * echo serving 62–65 k.
 *
 * Builds that report HTTP connections opening and closing (`App.filter`; uWS ≥ v20.4x, as the
 * btc-vision build is) let a listener read each connection's address once, when it opens, and know
 * while every open connection comes from one address (a keep-alive client; every client behind one
 * balancer): a request is then answered that address with no call. Once connections from two
 * addresses are open together, each request asks uWS again, until all of them have closed (the
 * close report carries no address, so which one left is not known). Builds without `filter` (the
 * trufflesuite v20.30 build) ask on every request, as before.
 */
import type { UwsResponse } from './load.js';

const kDecoder = new TextDecoder();
/**
 * The last address asked of uWS on this thread, binary and as text: comparing ≤ 16 bytes is cheaper
 * than formatting them again when the next request comes from the same client.
 */
let lastAddress = new Uint8Array(0);
let lastAddressText = '';

/** The peer's address as text, asked of uWS (one getpeername). */
function askAddress(res: UwsResponse): string {
  const bytes = new Uint8Array(res.getRemoteAddress());
  if (bytes.length === lastAddress.length) {
    let i = 0;
    while (i < bytes.length && bytes[i] === lastAddress[i]) i++;
    if (i === bytes.length) return lastAddressText;
  }
  lastAddress = bytes;
  lastAddressText = kDecoder.decode(res.getRemoteAddressAsText());
  return lastAddressText;
}

/**
 * One listener's open connections and, while they all share one, their peer address. Fed by
 * `App.filter` where the build has it; without it nothing is ever shared and every request asks.
 */
export class ConnectionPeers {
  /** Connections open now (as reported by `filter`). */
  #open = 0;
  /** The address every open connection comes from; undefined when none is open, or they differ. */
  #shared: string | undefined;
  /** `App.filter`'s callback: +1 when a connection opens (its socket still has its peer), -1 when it closes. */
  readonly changed = (res: UwsResponse, count: number): void => {
    if (count > 0) this.#opened(askAddress(res));
    else this.#closed();
  };

  /** The address of a request's peer (`res` must be a response not yet ended). */
  address(res: UwsResponse): string {
    return this.#shared ?? askAddress(res);
  }

  #opened(address: string): void {
    // An unreadable address is never shared: each request then asks for its own.
    if (this.#open === 0 && address !== '') this.#shared = address;
    else if (this.#shared !== address) this.#shared = undefined;
    this.#open++;
  }

  #closed(): void {
    if (this.#open > 0) this.#open--;
    // All closed: the next connection to open decides again.
    if (this.#open === 0) this.#shared = undefined;
  }
}
