import type { Era } from '../contract.js';
import { kLogLevels } from '../../tools/context.js';
import { kCapabilitiesRequired } from '../refusals.js';
import { ErrorCode, ProtocolError, kMetaClientCapabilities, kMetaLogLevel, kMetaProtocolVersion, kModernVersion } from '../wire.js';

/**
 * A message's `_meta`: the era it selects, and the 2026-07-28 fields read from it (version,
 * capabilities, log level). `requestInfo` extracts it once per message and keeps it in the
 * `RequestInfo`; every later rule reads it from there.
 */

/**
 * The era of one message, decided once for every transport (HTTP and stdio must not disagree).
 * Body first, as the official TS SDK classifies: a `_meta` protocol version makes a message modern
 * whatever its method (a modern `initialize` is then "method not found"); otherwise the
 * 2026-07-28 `MCP-Protocol-Version` header does (HTTP only); else it is legacy.
 */
export function eraOf(meta: Record<string, unknown> | undefined, headerVersion: string | undefined): Era {
  return (meta !== undefined && meta[kMetaProtocolVersion] !== undefined) || headerVersion === kModernVersion ? 'modern' : 'legacy';
}

/** The `_meta` object of a message's params, if it has one. */
export function metaOf(params: unknown): Record<string, unknown> | undefined {
  if (params === null || typeof params !== 'object') return undefined;
  const meta = (params as Record<string, unknown>)._meta;
  return meta !== null && typeof meta === 'object' && !Array.isArray(meta) ? (meta as Record<string, unknown>) : undefined;
}

/**
 * A modern message's `_meta` protocol version: only 2026-07-28 can be asked for per request (older
 * revisions negotiate with initialize). Undefined when it is acceptable.
 */
export function checkModernVersion(metaVersion: unknown): ProtocolError | undefined {
  if (typeof metaVersion !== 'string') return new ProtocolError(ErrorCode.InvalidParams, `_meta["${kMetaProtocolVersion}"] is required`, undefined, 400);
  if (metaVersion !== kModernVersion) {
    return new ProtocolError(ErrorCode.UnsupportedProtocolVersion, 'Unsupported protocol version', { supported: [kModernVersion], requested: metaVersion }, 400);
  }
  return undefined;
}

/** A modern request's `_meta` capabilities: an object (maybe empty), or the refusal. */
export function checkModernCapabilities(meta: Record<string, unknown> | undefined): ProtocolError | undefined {
  const capabilities = meta?.[kMetaClientCapabilities];
  return capabilities === null || typeof capabilities !== 'object' || Array.isArray(capabilities) ? kCapabilitiesRequired : undefined;
}

/** A modern request's `_meta` log level as an index into kLogLevels; undefined for none or unknown. */
export function modernLogLevel(meta: Record<string, unknown> | undefined): number | undefined {
  return logLevelIndex(meta?.[kMetaLogLevel]);
}

/** A log level name's index into kLogLevels, or undefined when it names none. */
export function logLevelIndex(value: unknown): number | undefined {
  const i = kLogLevels.indexOf(value as (typeof kLogLevels)[number]);
  return i < 0 ? undefined : i;
}
