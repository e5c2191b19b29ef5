import { ProtocolError, SluiceError, kindOf } from '../errors.js';

/** A JSON-RPC message as the client sends and receives it. */
export type JsonRpcMessage = Record<string, unknown> & { jsonrpc: '2.0' };

/**
 * Parses one message a server sent (an SSE event's data, a stdio line); undefined when the text
 * is not a JSON object (not JSON, or a number, null, an array: a server's stray output).
 */
export function parseMessage(text: string): JsonRpcMessage | undefined {
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    return undefined;
  }
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? (value as JsonRpcMessage) : undefined;
}

/**
 * A message as the JSON text a transport writes. What JSON cannot carry (a BigInt, a cycle, a
 * toJSON that throws) is the caller's mistake, told as `invalid_params` before anything is sent,
 * not as the TypeError JSON.stringify throws.
 */
export function encodeMessage(message: JsonRpcMessage): string {
  try {
    return JSON.stringify(message);
  } catch (error) {
    const why = error instanceof Error ? error.message.split('\n', 1)[0] : String(error);
    const what = typeof message.method === 'string' ? `the ${message.method} params` : 'the message';
    throw new SluiceError('invalid_params', `${what} cannot be sent as JSON: ${why}`, { cause: error });
  }
}

/** The most a server may send for one answer unless the transport is told otherwise (`maxResponseBytes`). */
const kDefaultMaxResponseBytes = 64 * 1024 * 1024;

/** A transport's `maxResponseBytes` option, checked: a positive integer, 64 MiB when not given. */
export function responseBound(value: number | undefined): number {
  const max = value ?? kDefaultMaxResponseBytes;
  if (!Number.isSafeInteger(max) || max < 1) throw new SluiceError('invalid_option', `maxResponseBytes must be a positive integer, got ${String(max)}`);
  return max;
}

/** What a transport tells the client about one request as it goes. */
export interface SendOptions {
  /** Call once the request's bytes have been handed to the wire (the cancel waits for it). */
  onSent(): void;
  /** Messages the server sends about this request before its response (progress, logs). */
  onMessage(message: JsonRpcMessage): void;
  /** Aborted when the caller gives up; a transport whose cancel is the abort ends the exchange. */
  signal: AbortSignal;
  /**
   * Answers server requests that belong to this request (a 2025-11-25 task's input on its
   * tasks/result stream): resolves to the response message to send back. Without it, a transport
   * declines server requests (-32601). On stdio, requests are matched by their `related-task` _meta.
   */
  onRequest?(message: JsonRpcMessage): Promise<JsonRpcMessage>;
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

/** The reply to a server request: the handler's, or -32601 without one (or -32603 when it fails). */
export async function answerServerRequest(message: JsonRpcMessage, options: Pick<SendOptions, 'onRequest'> | undefined): Promise<JsonRpcMessage> {
  if (options?.onRequest === undefined) {
    return message.method === 'ping'
      ? { jsonrpc: '2.0', id: message.id, result: {} }
      : { jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'Method not found' } };
  }
  try {
    const reply = await options.onRequest(message);
    encodeMessage(reply); // an answer JSON cannot carry is answered as the handler's failure
    return reply;
  } catch (error) {
    return { jsonrpc: '2.0', id: message.id, error: { code: -32603, message: error instanceof Error ? error.message : String(error) } };
  }
}

/**
 * A response's result, or the error to reject with. A JSON-RPC error object becomes a
 * ProtocolError (a code that is not a number is -32603); an error or a result that is not an
 * object (null, a string, an array), or neither of them, is `invalid_response`: handed on, a
 * `null` error threw a TypeError past the caller, and a `null` result reached code that reads
 * `result.content`.
 */
export function responseOutcome(method: string, response: JsonRpcMessage): Record<string, unknown> | Error {
  const { error, result } = response as { error?: unknown; result?: unknown };
  if (error !== undefined) {
    if (error === null || typeof error !== 'object' || Array.isArray(error)) {
      return new SluiceError('invalid_response', `the server answered ${method} with an error that is ${kindOf(error)}, not a JSON-RPC error object`);
    }
    const e = error as { code?: unknown; message?: unknown; data?: unknown };
    return new ProtocolError(typeof e.code === 'number' ? e.code : -32603, String(e.message ?? 'error'), e.data);
  }
  if (result === null || typeof result !== 'object' || Array.isArray(result)) {
    return new SluiceError('invalid_response', `the server answered ${method} with a result that is ${kindOf(result)}, not an object`);
  }
  return result as Record<string, unknown>;
}
