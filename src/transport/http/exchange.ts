import { kBadFraming, kHeadersTooLarge, kPayloadTooLarge, refusalBody } from '../../protocol/refusals.js';
import type { ProtocolError } from '../../protocol/wire.js';

/** What `Exchange.readBody` calls back with. */
export type BodyCallback = (body: Uint8Array | 'too_large' | undefined) => void;

/**
 * The contract an HTTP adapter fills (hono's idea, smaller). The protocol side sees only this;
 * only `uws/` imports uWebSockets.js and only `node/` imports node:http.
 */
export interface Exchange {
  /** Upper-case HTTP method. */
  readonly method: string;
  /** Path without the query string. */
  readonly path: string;
  /** The socket peer's address (text form). */
  readonly remoteAddress: string;
  /**
   * A request header by lower-case name, copied when the request arrived: those in
   * `kRequestHeaders` and any `mcp-param-*` (`wantedHeader`), or every header when the adapter was
   * started with `allHeaders`. Repeats of a
   * header are joined with ', ' (cookie: '; '), except those in `kSingleHeaders`: the first value
   * is kept and `duplicateHeader` names the header.
   */
  header(name: string): string | undefined;
  /**
   * The lower-case name of the first header of `kSingleHeaders` seen more than once in this request
   * (in the order the repeats arrived), else undefined. Both adapters see every repeat, so the
   * endpoint can refuse such a request instead of each adapter resolving it its own way.
   */
  readonly duplicateHeader: string | undefined;
  /**
   * Reads the whole body, at most `limit` bytes, and calls `done` once with it: `undefined` if the
   * client went away, `'too_large'` past the limit (the adapter has then already answered 413 and
   * closed). A body that arrived before this call (e.g. while an authenticate hook was waiting) is
   * given whole, at once (`done` may run before readBody returns). A callback, not a promise: the
   * request then runs in the adapter's own data callback, without a microtask hop.
   */
  readBody(limit: number, done: BodyCallback): void;
  /** Called once if the client goes away (or `destroy()` is called) before the exchange ended. */
  onAbort(listener: () => void): void;
  /** True once the client is gone. */
  readonly aborted: boolean;
  /** Sends a whole response. */
  respond(status: number, headers: readonly (readonly [string, string])[], body: string): void;
  /** Starts a streamed response (SSE). */
  startStream(status: number, headers: readonly (readonly [string, string])[]): void;
  /**
   * Writes a chunk of a started stream; false only if the client is gone. The adapter never drops
   * what it accepted: a client that reads slowly shows in `bufferedBytes`, and the caller decides
   * what to do about it (coalesce, skip, `destroy()`).
   */
  write(chunk: string): boolean;
  /** Ends a started stream. */
  end(): void;
  /**
   * Bytes accepted by write()/startStream()/respond() that the socket has not taken yet (the
   * adapter's queue plus the transport's own buffer). 0 while the client keeps up. node:http: exact
   * (`res.writableLength`, socket included). uWS, which reports progress only through write
   * results: exact for what the adapter queues, plus at most the unsent part of the writes that met
   * backpressure (counted whole until a later write shows they went out).
   */
  readonly bufferedBytes: number;
  /**
   * Sets the one drain listener: called each time the buffered bytes fall back to 0 after a write
   * met backpressure (the socket could not take it at once: uWS `write()` false, node:http above
   * the response's 16 KiB high-water mark). Not called after the exchange ended or aborted.
   */
  onDrain(listener: () => void): void;
  /**
   * Closes the connection at once, dropping anything buffered (a reader too slow to keep within
   * its bound). The exchange then counts as aborted and the onAbort listener fires once.
   */
  destroy(): void;
}

/**
 * Most header lines a request may carry, on either adapter; past it 431 and the connection closes.
 * (node:http would otherwise drop the lines past its count without a word.)
 */
export const kMaxHeaderCount = 100;
/**
 * Most bytes of header lines (names, values, separators) a request may carry: node:http's own
 * default. Some uWS builds stop at 4 KiB already (UWS_HTTP_MAX_HEADERS_SIZE); both answer 431.
 */
export const kMaxHeaderBytes = 16 * 1024;

/** A refusal an adapter answers itself: the protocol's error, serialised once (id null). */
export interface AdapterRefusal {
  readonly status: number;
  readonly body: string;
}

function adapterRefusal(error: ProtocolError): AdapterRefusal {
  return Object.freeze({ status: error.httpStatus, body: refusalBody(null, error) });
}

/**
 * What an adapter refuses before the endpoint sees the request, from the protocol's refusal table:
 * the same bytes whichever HTTP library serves.
 */
export const kAdapterRefusal = {
  payloadTooLarge: adapterRefusal(kPayloadTooLarge),
  headersTooLarge: adapterRefusal(kHeadersTooLarge),
  badFraming: adapterRefusal(kBadFraming),
} as const;

/** Headers every adapter copies up front (uWS only allows reading them synchronously). */
export const kRequestHeaders = [
  'access-control-request-headers', 'access-control-request-method', 'accept', 'authorization', 'content-length', 'content-type', 'cookie', 'host', 'last-event-id', 'mcp-method',
  'mcp-name', 'mcp-protocol-version', 'mcp-session-id', 'origin', 'traceparent', 'tracestate', 'x-forwarded-for',
] as const;

const kWanted: ReadonlySet<string> = new Set(kRequestHeaders);

/**
 * Whether an adapter copies this (lower-case) header without `allHeaders`: the fixed list, and the
 * 2026-07-28 `Mcp-Param-{Name}` headers a tools/call mirrors its annotated arguments in (their names
 * come from the tools, so no fixed list can hold them). A prefix test: nothing is allocated, and a
 * client sends such headers only for tools that have annotations.
 */
export function wantedHeader(name: string): boolean {
  return kWanted.has(name) || (name.length > 10 && name.startsWith('mcp-param-'));
}

/**
 * The constant of `kRequestHeaders` equal to this (lower-case) name, else undefined. Adapters key
 * their header Map by it: a Map lookup then uses the constant's precomputed hash, where each
 * request's own name string (new every time) would be hashed first; the length switch makes most
 * names one comparison.
 */
export function knownHeader(name: string): string | undefined {
  switch (name.length) {
    case 4: return name === 'host' ? 'host' : undefined;
    case 6: return name === 'accept' ? 'accept' : name === 'origin' ? 'origin' : name === 'cookie' ? 'cookie' : undefined;
    case 8: return name === 'mcp-name' ? 'mcp-name' : undefined;
    case 10: return name === 'mcp-method' ? 'mcp-method' : name === 'tracestate' ? 'tracestate' : undefined;
    case 11: return name === 'traceparent' ? 'traceparent' : undefined;
    case 12: return name === 'content-type' ? 'content-type' : undefined;
    case 13: return name === 'authorization' ? 'authorization' : name === 'last-event-id' ? 'last-event-id' : undefined;
    case 14: return name === 'content-length' ? 'content-length' : name === 'mcp-session-id' ? 'mcp-session-id' : undefined;
    case 15: return name === 'x-forwarded-for' ? 'x-forwarded-for' : undefined;
    case 20: return name === 'mcp-protocol-version' ? 'mcp-protocol-version' : undefined;
    case 29: return name === 'access-control-request-method' ? 'access-control-request-method' : undefined;
    case 30: return name === 'access-control-request-headers' ? 'access-control-request-headers' : undefined;
    default: return undefined;
  }
}

/**
 * Copies one request header by the rules of `Exchange.header` (every header with `all`, else the
 * wanted ones); returns `name` when it repeats a `kSingleHeaders` header. Shared by the adapters.
 */
export function collectHeader(headers: Map<string, string>, name: string, value: string, all: boolean): string | undefined {
  const known = knownHeader(name);
  if (known !== undefined) return addHeader(headers, known, value);
  if (all || (name.length > 10 && name.startsWith('mcp-param-'))) return addHeader(headers, name, value);
  return undefined;
}

/**
 * Security-relevant headers a request may carry only once: a repeat makes `duplicateHeader` name it
 * (two values for one of these let a proxy and the server see different requests). Each is also in
 * `kRequestHeaders`, so the check needs no extra header copies.
 */
export const kSingleHeaders = [
  'host', 'origin', 'authorization', 'content-type', 'content-length', 'mcp-session-id', 'mcp-protocol-version',
  'mcp-method', 'mcp-name', 'x-forwarded-for',
] as const;

const kSingle: ReadonlySet<string> = new Set(kSingleHeaders);

/**
 * Stores one request header into `headers` (lower-case `name`) by the rules of `Exchange.header`;
 * returns `name` when it is a repeat of a `kSingleHeaders` header, else undefined. Shared by the
 * adapters so both resolve repeats alike.
 */
export function addHeader(headers: Map<string, string>, name: string, value: string): string | undefined {
  const previous = headers.get(name);
  if (previous === undefined) {
    headers.set(name, value);
    return undefined;
  }
  if (kSingle.has(name)) return name;
  headers.set(name, `${previous}${name === 'cookie' ? '; ' : ', '}${value}`);
  return undefined;
}

export const kStatusText: Record<number, string> = {
  200: 'OK', 202: 'Accepted', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 408: 'Request Timeout', 413: 'Payload Too Large', 431: 'Request Header Fields Too Large',
  415: 'Unsupported Media Type', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
};
