/** A JSON-RPC message as the client sends and receives it. */
export type JsonRpcMessage = Record<string, unknown> & { jsonrpc: '2.0' };

/** What a transport tells the client about one request as it goes. */
export interface SendOptions {
  /** Call once the request's bytes have been handed to the wire (the cancel waits for it). */
  onSent(): void;
  /** Messages the server sends about this request before its response (progress, logs). */
  onMessage(message: JsonRpcMessage): void;
  /** Aborted when the caller gives up; a transport whose cancel is the abort ends the exchange. */
  signal: AbortSignal;
}

/**
 * The contract a client transport fills. `send` resolves with the request's response message (or
 * rejects when the exchange failed); `notify` sends a notification; `close` frees everything,
 * also when the server stopped answering.
 */
export interface ClientTransport {
  send(message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage>;
  notify(message: JsonRpcMessage): Promise<void>;
  close(): Promise<void>;
  /**
   * True when aborting `send` is itself the cancel (2026-07-28 over HTTP: closing the stream);
   * otherwise the client sends `notifications/cancelled` after `onSent`.
   */
  readonly cancelsByAbort: boolean;
  /** Per-request headers or `_meta` depend on the era; the client tells the transport which. */
  setEra?(era: 'legacy' | 'modern', version: string): void;
}
