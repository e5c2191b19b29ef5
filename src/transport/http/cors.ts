/**
 * Headers every response carries beyond its own (the worker id, CORS), and CORS preflights.
 * Requests whose Origin is listed (exactly) are allowed; preflights get 204; responses expose the
 * MCP headers. The header list of each origin is built once.
 */
import type { Exchange } from './exchange.js';

type Headers = readonly (readonly [string, string])[];

/** Response headers a browser client may read (CORS). */
const kCorsExposed = 'mcp-session-id, mcp-protocol-version, www-authenticate';
/** Request headers a preflight allows when the browser asks for none we can echo. */
const kCorsAllowed = 'content-type, accept, authorization, mcp-session-id, mcp-protocol-version, mcp-method, mcp-name, last-event-id';
/** A list of plain header-name tokens (what browsers send in Access-Control-Request-Headers). */
const kTokenList = /^[A-Za-z0-9!#$%&'*+.^_`|~-]+(\s*,\s*[A-Za-z0-9!#$%&'*+.^_`|~-]+)*$/;

export class ResponseHeaders {
  readonly origins: ReadonlySet<string>;
  readonly #base: Headers;
  readonly #byOrigin = new Map<string, Headers>();

  /** `base`: what every response carries (the worker id, or nothing). */
  constructor(base: Headers, corsOrigins: readonly string[]) {
    this.#base = base;
    this.origins = new Set(corsOrigins);
  }

  /** Headers every response to this exchange carries beyond its own. */
  extra(ex: Exchange): Headers {
    if (this.origins.size === 0) return this.#base;
    const origin = ex.header('origin');
    if (origin === undefined || !this.origins.has(origin)) return this.#base;
    let headers = this.#byOrigin.get(origin);
    if (headers === undefined) {
      headers = [
        ...this.#base,
        ['access-control-allow-origin', origin],
        ['access-control-expose-headers', kCorsExposed],
        ['vary', 'Origin'],
      ];
      this.#byOrigin.set(origin, headers);
    }
    return headers;
  }

  /** The headers of a 204 answering a CORS preflight from a listed origin; undefined when it is not one. */
  preflight(ex: Exchange): Headers | undefined {
    const origin = ex.header('origin');
    const method = ex.header('access-control-request-method');
    if (origin === undefined || method === undefined || !this.origins.has(origin)) return undefined;
    const requested = ex.header('access-control-request-headers');
    // Echo the requested headers when each is a plain token (what browsers send), else the MCP set.
    // Echoing is what lets a browser send a tool's Mcp-Param-{Name} headers (x-mcp-header): their
    // names come from the tools, so no fixed list holds them, and `*` is no wildcard for requests
    // with credentials. Allowing a header lets the browser send it, nothing more: the checks
    // after it (Mcp-Param-* against the body included) are the same as for any client.
    const allowHeaders = requested !== undefined && kTokenList.test(requested.trim()) ? requested.trim() : kCorsAllowed;
    return [
      ...this.extra(ex),
      ['access-control-allow-methods', 'POST, DELETE'],
      ['access-control-allow-headers', allowHeaders],
      ['access-control-max-age', '600'],
    ];
  }
}
