/**
 * The protocol's refusal table: every JSON-RPC error a transport answers before (or instead of)
 * the engine, as a `ProtocolError` made once (a refused flood allocates nothing for its answer but
 * the body). Transports only write these: stdio the body, HTTP the body with `httpStatus`.
 *
 * Where the transports must differ, it is framing, not protocol: an over-long stdio line cannot be
 * parsed (-32700), an over-large HTTP body is refused before it is read (413, -32600).
 */
import { kBrokenJson, classify, parseJson } from './message.js';
import type { Classified } from './message.js';
import type { Era } from './contract.js';
import { ErrorCode, ProtocolError, errorBody, kMetaClientCapabilities } from './wire.js';
import type { JsonRpcId } from './wire.js';

function refusal(message: string, code: number, httpStatus: number): ProtocolError {
  return Object.freeze(new ProtocolError(code, message, undefined, httpStatus));
}

/** The body is not JSON (or not UTF-8). */
export const kParseError = refusal('Parse error', ErrorCode.ParseError, 400);
/** A JSON array: JSON-RPC batches were removed from MCP (2025-06-18) and are refused in every era. */
export const kBatch = refusal('Batches are not supported: send one message at a time', ErrorCode.InvalidRequest, 400);
/** The in-flight table is full (HTTP: 503 + Retry-After). */
export const kBusy = refusal('Server busy: too many requests in flight', ErrorCode.InternalError, 503);
/** HTTP framing: a body over the limit, refused by the adapter before it is read. */
export const kPayloadTooLarge = refusal('Payload Too Large', ErrorCode.InvalidRequest, 413);
/** HTTP framing: too many header lines or header bytes. */
export const kHeadersTooLarge = refusal('Request Header Fields Too Large', ErrorCode.InvalidRequest, 431);
/** HTTP framing: a length no one can be sure of (request smuggling), refused and the connection closed. */
export const kBadFraming = refusal('Bad Request: ambiguous message framing', ErrorCode.InvalidRequest, 400);
/** stdio framing: a line longer than the limit (discarded unread, so it cannot be parsed). */
export const kLineTooLong = refusal('Line too long', ErrorCode.ParseError, 400);

/** 2026-07-28: a server sends clients no requests, so a client's response answers nothing. */
export const kNoResponses = refusal('Clients must not send responses', ErrorCode.InvalidRequest, 400);
/** 2026-07-28 over HTTP: the MCP-Protocol-Version header must come with every request. */
export const kVersionRequired = refusal('MCP-Protocol-Version header is required', ErrorCode.HeaderMismatch, 400);
export const kVersionMismatch = refusal('MCP-Protocol-Version header does not match _meta', ErrorCode.HeaderMismatch, 400);
/** 2026-07-28: every request declares the client's capabilities in `_meta` (an object, maybe empty). */
export const kCapabilitiesRequired = refusal(`_meta["${kMetaClientCapabilities}"] is required`, ErrorCode.InvalidParams, 400);

/**
 * -32021 naming the capabilities a request needs and its client did not declare. HTTP 400 in
 * 2026-07-28, which asks for it; 200 in the legacy era, whose errors ride a 200 (the SDK v1 client
 * reads no JSON-RPC error from a 400).
 */
export function missingCapabilities(missing: Record<string, object>, era: Era): ProtocolError {
  return new ProtocolError(ErrorCode.MissingRequiredClientCapability, 'Missing required client capability', { requiredCapabilities: missing }, era === 'modern' ? 400 : 200);
}

/** A refusal's JSON-RPC response; its `data` is left out when it cannot be JSON (as from a pool thread). */
export function refusalBody(id: JsonRpcId | null, error: ProtocolError): string {
  try {
    return errorBody(id, error.rpcCode, error.message, error.data);
  } catch {
    return errorBody(id, error.rpcCode, error.message);
  }
}

/** A message refused before the engine saw it: the error, and the id to answer it with. */
export interface Refused {
  readonly kind: 'refused';
  readonly id: JsonRpcId | null;
  readonly error: ProtocolError;
}

const kRefusedParse: Refused = Object.freeze({ kind: 'refused', id: null, error: kParseError });
const kRefusedBatch: Refused = Object.freeze({ kind: 'refused', id: null, error: kBatch });

/**
 * One framed message (an HTTP body, a stdio line), read the same way for every transport: broken
 * UTF-8 and broken JSON are parse errors, an array is a refused batch, anything malformed is the
 * Invalid Request (or Invalid Params) `classify` names, answered with its own id when usable.
 */
export function readMessage(bytes: Uint8Array): Classified | Refused {
  const parsed = parseJson(bytes);
  if (parsed === kBrokenJson) return kRefusedParse;
  if (Array.isArray(parsed)) return kRefusedBatch;
  const message = classify(parsed);
  if (message.kind !== 'invalid') return message;
  return { kind: 'refused', id: message.id, error: new ProtocolError(message.code, message.message, undefined, 400) };
}
