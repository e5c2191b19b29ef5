/**
 * JSON-RPC 2.0 and MCP wire constants: error codes in one table, protocol versions, and envelope
 * pieces that the hot path concatenates instead of re-serialising (pino's habit).
 */

/** Wire error codes. Spec codes only, plus one application code outside the reserved range. */
export const ErrorCode = {
  ParseError: -32700,
  InvalidRequest: -32600,
  MethodNotFound: -32601,
  InvalidParams: -32602,
  InternalError: -32603,
  /** 2026-07-28: a header disagrees with the body, or a required header is missing or malformed. */
  HeaderMismatch: -32020,
  /** 2026-07-28: the request needs a client capability it did not declare. */
  MissingRequiredClientCapability: -32021,
  /** 2026-07-28: the requested protocol version is not implemented. */
  UnsupportedProtocolVersion: -32022,
  /** Legacy eras: resource not found (2026-07-28 uses -32602 instead). */
  ResourceNotFound: -32002,
  /**
   * Sluice: a notifications/cancelled refused by the per-scope quota. Application-defined, outside
   * the JSON-RPC reserved range (-32768..-32000), as 2026-07-28 asks of new codes.
   */
  CancellationLimitReached: -31001,
  /** Sluice: the client did not answer a request the server sent it (ctx.request, a legacy input round) within clientRequestTimeoutMs. */
  ClientAnswerTimeout: -31002,
} as const;
export type ErrorCode = (typeof ErrorCode)[keyof typeof ErrorCode];

export const kModernVersion = '2026-07-28';
/** Legacy (initialize/session) revisions, newest first. */
export const kLegacyVersions = ['2025-11-25', '2025-06-18', '2025-03-26'] as const;
/** What a legacy request without MCP-Protocol-Version is taken to speak (spec: SHOULD assume). */
export const kDefaultLegacyVersion = '2025-03-26';

export const kMetaProtocolVersion = 'io.modelcontextprotocol/protocolVersion';
export const kMetaClientCapabilities = 'io.modelcontextprotocol/clientCapabilities';
export const kMetaClientInfo = 'io.modelcontextprotocol/clientInfo';
export const kMetaServerInfo = 'io.modelcontextprotocol/serverInfo';
export const kMetaLogLevel = 'io.modelcontextprotocol/logLevel';
export const kMetaSubscriptionId = 'io.modelcontextprotocol/subscriptionId';

export type JsonRpcId = string | number;

/** Serialises a JSON-RPC error response. `id` null when the request's id is unknown or unusable. */
export function errorBody(id: JsonRpcId | null, code: number, message: string, data?: unknown): string {
  const error = data === undefined ? { code, message } : { code, message, data };
  return `{"jsonrpc":"2.0","id":${id === null ? 'null' : JSON.stringify(id)},"error":${JSON.stringify(error)}}`;
}

/** Wraps an already-serialised result (`resultJson`) in a JSON-RPC response. */
export function resultBody(id: JsonRpcId, resultJson: string): string {
  return `{"jsonrpc":"2.0","id":${typeof id === 'number' ? id : JSON.stringify(id)},"result":${resultJson}}`;
}

export function notificationBody(method: string, params: unknown): string {
  return `{"jsonrpc":"2.0","method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`;
}

// ProtocolError lives with the other errors (tools, the client and the protocol all use it).
export { ProtocolError } from '../errors.js';
export type { ProtocolErrorWire } from '../errors.js';
