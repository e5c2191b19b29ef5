/**
 * Pure header rules of every request, before any body is read: repeated security headers, Host
 * (DNS rebinding), Origin, and content negotiation. Each answers a `ProtocolError` (with its HTTP
 * status) or nothing. The last value seen of Host and Accept is remembered: a keep-alive client
 * sends the same ones request after request.
 */
import type { ProtocolError } from '../../protocol/wire.js';
import type { Exchange } from './exchange.js';
import { duplicateHeader, kHostRefused, kNotAcceptable, kOriginRefused, kUnsupportedMediaType } from './refusals.js';

/** Host names of the loopback interface (Origin checks; the Host allow-list of a loopback server). */
export const kLoopbackHosts: ReadonlySet<string> = new Set(['localhost', '127.0.0.1', '[::1]']);

export interface HeaderRulesOptions {
  /** Origins allowed besides loopback ones (exact match). */
  readonly allowedOrigins: readonly string[];
  /** CORS origins (allowed too). */
  readonly corsOrigins: ReadonlySet<string>;
  /** When set, a Host naming none of these (any port) is refused with 403. */
  readonly allowedHostNames: ReadonlySet<string> | undefined;
}

/**
 * What a POST's reply may be, by its Accept: JSON only (it cannot stream), JSON or an SSE stream
 * (JSON unless something is streamed first), or an SSE stream only (a client that does not take
 * JSON gets even a plain answer as one event).
 */
export type ReplyForm = 'json' | 'either' | 'stream';

export class HeaderRules {
  readonly #o: HeaderRulesOptions;
  #lastHost: string | undefined;
  #lastHostOk = false;
  #lastAccept: string | undefined;
  #lastAccepted: Set<string> = new Set();

  constructor(options: HeaderRulesOptions) {
    this.#o = options;
  }

  /** Every request, whatever its path: a repeated security header, then Host, then Origin. */
  check(ex: Exchange): ProtocolError | undefined {
    const repeated = ex.duplicateHeader;
    if (repeated !== undefined) return duplicateHeader(repeated);
    const hosts = this.#o.allowedHostNames;
    if (hosts !== undefined) {
      const host = ex.header('host');
      if (host === undefined || !this.#hostAllowed(hosts, host)) return kHostRefused;
    }
    const origin = ex.header('origin');
    if (origin !== undefined && !this.#originAllowed(origin)) return kOriginRefused;
    return undefined;
  }

  /**
   * A POST's Content-Type (must be application/json, 415) and Accept (406 unless JSON or SSE is
   * acceptable): what the reply may be, or the refusal.
   */
  negotiate(ex: Exchange): ReplyForm | ProtocolError {
    const type = ex.header('content-type');
    // The common exact value skips the parameter split (no string is made).
    if (type !== 'application/json' && (type === undefined || mediaType(type) !== 'application/json')) return kUnsupportedMediaType;
    const accept = ex.header('accept');
    if (accept === undefined) return 'either';
    const accepted = this.#acceptedTypes(accept);
    const streams = accepted.has('text/event-stream') || accepted.has('text/*') || accepted.has('*/*');
    const json = accepted.has('application/json') || accepted.has('application/*') || accepted.has('*/*');
    if (!json) return streams ? 'stream' : kNotAcceptable;
    return streams ? 'either' : 'json';
  }

  #acceptedTypes(accept: string): Set<string> {
    if (accept !== this.#lastAccept) {
      this.#lastAccept = accept;
      this.#lastAccepted = acceptedTypes(accept);
    }
    return this.#lastAccepted;
  }

  #hostAllowed(hosts: ReadonlySet<string>, host: string): boolean {
    if (host !== this.#lastHost) {
      this.#lastHost = host;
      const name = hostName(host);
      this.#lastHostOk = name !== undefined && hosts.has(name);
    }
    return this.#lastHostOk;
  }

  #originAllowed(origin: string): boolean {
    if (this.#o.allowedOrigins.includes(origin) || this.#o.corsOrigins.has(origin)) return true;
    try {
      const url = new URL(origin);
      return (url.protocol === 'http:' || url.protocol === 'https:') && kLoopbackHosts.has(url.hostname);
    } catch {
      return false;
    }
  }
}

/**
 * The name part of a Host header value (`[::1]:3000` → `[::1]`), lower-case; undefined unless the
 * value is exactly `name` or `name:port` with a decimal port (so `localhost:evil.example` is refused).
 */
export function hostName(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  let name: string;
  let rest: string;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    if (end === -1) return undefined;
    name = h.slice(0, end + 1);
    rest = h.slice(end + 1);
  } else {
    const colon = h.indexOf(':');
    name = colon === -1 ? h : h.slice(0, colon);
    rest = colon === -1 ? '' : h.slice(colon);
  }
  if (rest !== '' && !/^:[0-9]{1,5}$/.test(rest)) return undefined;
  return name === '' ? undefined : name;
}

/** The media type of a Content-Type value, lower-case, without parameters. */
export function mediaType(value: string): string {
  const semi = value.indexOf(';');
  return (semi === -1 ? value : value.slice(0, semi)).trim().toLowerCase();
}

/** Media ranges of an Accept header that are acceptable (q > 0). */
export function acceptedTypes(value: string): Set<string> {
  const out = new Set<string>();
  for (const range of value.split(',')) {
    const [type, ...params] = range.split(';');
    const q = params.map((p) => p.trim().toLowerCase()).find((p) => p.startsWith('q='));
    if (q !== undefined && !(Number(q.slice(2)) > 0)) continue;
    out.add(type.trim().toLowerCase());
  }
  return out;
}
