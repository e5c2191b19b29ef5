/**
 * 2026-07-28 HTTP rules beyond the version (which `requestInfo` checks): the Mcp-Method and
 * Mcp-Name headers must repeat the body, `_meta` must declare the client's capabilities, and a
 * method the era does not implement is 404. In the order the conformance suite checks them.
 */
import type { Engine } from '../../protocol/engine.js';
import { metaOf } from '../../protocol/era.js';
import { ErrorCode, ProtocolError, kMetaClientCapabilities } from '../../protocol/wire.js';
import type { Exchange } from './exchange.js';

const kNamedMethods = new Set(['tools/call', 'resources/read', 'prompts/get']);

function mismatch(message: string): ProtocolError {
  return Object.freeze(new ProtocolError(ErrorCode.HeaderMismatch, message, undefined, 400));
}

const kMethodRequired = mismatch('Mcp-Method header is required');
const kMethodMismatch = mismatch('Mcp-Method header does not match the body');
const kNameRequired = mismatch('Mcp-Name header is required');
const kNameMismatch = mismatch('Mcp-Name header does not match the body');
const kCapabilitiesRequired = Object.freeze(new ProtocolError(ErrorCode.InvalidParams, `_meta["${kMetaClientCapabilities}"] is required`, undefined, 400));

/** The header and _meta refusal of a modern request, if any. */
export function checkModernRequest(ex: Exchange, method: string, params: Record<string, unknown> | undefined, engine: Engine): ProtocolError | undefined {
  const methodHeader = ex.header('mcp-method');
  if (methodHeader !== method) return methodHeader === undefined ? kMethodRequired : kMethodMismatch;
  if (kNamedMethods.has(method)) {
    const named = params?.name ?? params?.uri;
    const nameHeader = decodeHeaderValue(ex.header('mcp-name'));
    if (nameHeader === undefined) return kNameRequired;
    if (nameHeader !== named) return kNameMismatch;
  }
  const capabilities = metaOf(params)?.[kMetaClientCapabilities];
  if (capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities)) return kCapabilitiesRequired;
  if (!engine.implements('modern', method)) return new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${method}`, undefined, 404);
  return undefined;
}

/** `=?base64?…?=` values (2026-07-28 header encoding for unsafe characters) decoded; others as is. */
export function decodeHeaderValue(value: string | undefined): string | undefined {
  if (value === undefined) return undefined;
  const m = /^=\?base64\?([A-Za-z0-9+/=]*)\?=$/.exec(value);
  if (m === null) return value;
  try {
    return new TextDecoder('utf-8', { fatal: true }).decode(Buffer.from(m[1], 'base64'));
  } catch {
    return undefined;
  }
}
