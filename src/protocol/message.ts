import { isUtf8 } from 'node:buffer';
import { validRequestId } from '../registry/index.js';
import { ErrorCode } from './wire.js';
import type { JsonRpcId } from './wire.js';

/** One incoming JSON-RPC message, classified. */
export type Incoming =
  | { kind: 'request'; id: JsonRpcId; method: string; params: Record<string, unknown> | undefined }
  | { kind: 'notification'; method: string; params: unknown }
  | { kind: 'response'; id: unknown; result: unknown; error: unknown }
  | { kind: 'invalid'; id: JsonRpcId | null; code: number; message: string };

/** A message that classified as something (not `invalid`). */
export type Classified = Exclude<Incoming, { kind: 'invalid' }>;

const hasOwn = Object.prototype.hasOwnProperty;

/**
 * Classifies a parsed JSON value. Never throws: anything malformed becomes `invalid` with the code to
 * answer. A request id that the registry could not track (not a safe integer, or a string over 256 UTF-8 bytes) is refused, so every request
 * that runs can be cancelled.
 */
export function classify(value: unknown): Incoming {
  if (value === null || typeof value !== 'object' || Array.isArray(value)) {
    return { kind: 'invalid', id: null, code: ErrorCode.InvalidRequest, message: 'a JSON-RPC message must be an object' };
  }
  const m = value as Record<string, unknown>;
  if (m.jsonrpc !== '2.0') return { kind: 'invalid', id: echoId(m.id), code: ErrorCode.InvalidRequest, message: 'jsonrpc must be "2.0"' };
  if (!hasOwn.call(m, 'method')) {
    if (hasOwn.call(m, 'result') || hasOwn.call(m, 'error')) return { kind: 'response', id: m.id, result: m.result, error: m.error };
    return { kind: 'invalid', id: echoId(m.id), code: ErrorCode.InvalidRequest, message: 'method is missing' };
  }
  if (typeof m.method !== 'string' || m.method.length === 0 || m.method.length > 256) {
    return { kind: 'invalid', id: echoId(m.id), code: ErrorCode.InvalidRequest, message: 'method must be a non-empty string of at most 256 characters' };
  }
  if (!hasOwn.call(m, 'id')) return { kind: 'notification', method: m.method, params: m.params };
  if (!validRequestId(m.id)) {
    return { kind: 'invalid', id: null, code: ErrorCode.InvalidRequest, message: 'id must be an integer or a string of at most 256 UTF-8 bytes' };
  }
  const params = m.params;
  if (params !== undefined && (params === null || typeof params !== 'object' || Array.isArray(params))) {
    return { kind: 'invalid', id: m.id, code: ErrorCode.InvalidParams, message: 'params must be an object' };
  }
  return { kind: 'request', id: m.id, method: m.method, params: params as Record<string, unknown> | undefined };
}

/** The id to answer an invalid message with: its own, when that id is usable, else null. */
function echoId(id: unknown): JsonRpcId | null {
  return validRequestId(id) ? id : null;
}

/** What parseJson answers for broken JSON (including broken UTF-8): no JSON value is a symbol. */
export const kBrokenJson: unique symbol = Symbol('sluice.brokenJson');

/** Parses a body: the value, or kBrokenJson (no wrapper object per request). */
export function parseJson(body: Uint8Array): unknown {
  // Broken UTF-8 is refused, never silently replaced. The decoder turns every broken sequence into
  // U+FFFD, so only a text holding one needs the bytes checked (isUtf8): a text may carry U+FFFD
  // itself, encoded properly. The search costs nothing on the usual one-byte string, which cannot
  // hold U+FFFD, where checking every body first cost a native call per request.
  let bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  if (bytes[0] === 0xef && bytes[1] === 0xbb && bytes[2] === 0xbf) bytes = bytes.subarray(3); // a BOM (RFC 8259 allows ignoring it)
  const text = bytes.toString('utf8');
  if (text.includes('\ufffd') && !isUtf8(bytes)) return kBrokenJson;
  try {
    return JSON.parse(text);
  } catch {
    return kBrokenJson;
  }
}
