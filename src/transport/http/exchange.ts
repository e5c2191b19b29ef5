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
  /** A request header by lower-case name, copied when the request arrived. */
  header(name: string): string | undefined;
  /**
   * Reads the whole body, at most `limit` bytes. Resolves `undefined` if the client went away, and
   * `'too_large'` past the limit (the adapter has then already answered 413 and closed).
   */
  readBody(limit: number): Promise<Uint8Array | 'too_large' | undefined>;
  /** Called once if the client goes away before the exchange ended. */
  onAbort(listener: () => void): void;
  /** True once the client is gone. */
  readonly aborted: boolean;
  /** Sends a whole response. */
  respond(status: number, headers: readonly (readonly [string, string])[], body: string): void;
  /** Starts a streamed response (SSE). */
  startStream(status: number, headers: readonly (readonly [string, string])[]): void;
  /** Writes a chunk of a started stream; false if the client is gone. */
  write(chunk: string): boolean;
  /** Ends a started stream. */
  end(): void;
}

/** Headers every adapter copies up front (uWS only allows reading them synchronously). */
export const kRequestHeaders = [
  'accept', 'authorization', 'content-length', 'content-type', 'cookie', 'host', 'last-event-id', 'mcp-method',
  'mcp-name', 'mcp-protocol-version', 'mcp-session-id', 'origin', 'x-forwarded-for',
] as const;

export const kStatusText: Record<number, string> = {
  200: 'OK', 202: 'Accepted', 204: 'No Content', 400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden',
  404: 'Not Found', 405: 'Method Not Allowed', 406: 'Not Acceptable', 408: 'Request Timeout', 413: 'Payload Too Large',
  415: 'Unsupported Media Type', 429: 'Too Many Requests', 500: 'Internal Server Error', 503: 'Service Unavailable',
};
