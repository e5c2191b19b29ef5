/**
 * 2026-07-28 HTTP header rules beyond the version (which `requestInfo` checks): the Mcp-Method and
 * Mcp-Name headers must repeat the body, a tools/call's Mcp-Param-* headers its annotated
 * arguments. In the order the conformance suite checks them; the era's own rules (`_meta`
 * capabilities, method not found) come after these, in the engine, for every transport.
 */
import { ErrorCode, ProtocolError } from '../../protocol/wire.js';
import type { Exchange } from './exchange.js';
import { decodeHeaderValue, trimOws } from './param-headers.js';
import type { ParamHeaders } from './param-headers.js';

/** The body field Mcp-Name repeats, by method (tasks/*: the tasks extension, SEP-2663). */
const kNamedBy: ReadonlyMap<string, string> = new Map([
  ['tools/call', 'name'], ['prompts/get', 'name'], ['resources/read', 'uri'],
  ['tasks/get', 'taskId'], ['tasks/update', 'taskId'], ['tasks/cancel', 'taskId'],
]);

function mismatch(message: string): ProtocolError {
  return Object.freeze(new ProtocolError(ErrorCode.HeaderMismatch, message, undefined, 400));
}

const kMethodRequired = mismatch('Mcp-Method header is required');
const kMethodMismatch = mismatch('Mcp-Method header does not match the body');
const kNameRequired = mismatch('Mcp-Name header is required');
const kNameMismatch = mismatch('Mcp-Name header does not match the body');
const kNameEncoding = mismatch('Mcp-Name header is not valid =?base64?…?= (canonical base64 of UTF-8)');

/** The header refusal of a modern request, if any. */
export function checkModernRequest(ex: Exchange, method: string, params: Record<string, unknown> | undefined, paramHeaders: ParamHeaders): ProtocolError | undefined {
  const methodHeader = ex.header('mcp-method');
  if (methodHeader === undefined) return kMethodRequired;
  // OWS around a field value is not part of it (RFC 9110 §5.5); most clients send none.
  if (methodHeader !== method && trimOws(methodHeader) !== method) return kMethodMismatch;
  const field = kNamedBy.get(method);
  if (field !== undefined) {
    const rawName = ex.header('mcp-name');
    if (rawName === undefined) return kNameRequired;
    const nameHeader = decodeHeaderValue(rawName);
    if (nameHeader === undefined) return kNameEncoding;
    if (nameHeader !== params?.[field]) return kNameMismatch;
    if (method === 'tools/call') {
      const refused = paramHeaders.check(ex, params);
      if (refused !== undefined) return refused;
    }
  }
  return undefined;
}
