/**
 * Who is asking, decided once for every transport: the era of a message, the 2026-07-28 version
 * rules, the log level, and the `RequestInfo` the engine gets, built from what the transport alone
 * knows (its edge facts: headers, the client's scope, legacy session state). HTTP and stdio call
 * `requestInfo` and only convert its answer; neither re-decides a protocol rule.
 */
import type { AuthInfo } from '../../auth/contract.js';
import type { RequestInfo } from '../engine.js';
import type { LevelStore } from '../contract.js';
import type { Classified } from '../message.js';
import { kNoResponses, kVersionMismatch, kVersionRequired } from '../refusals.js';
import { ErrorCode, ProtocolError, kDefaultLegacyVersion, kLegacyVersions, kMetaProtocolVersion, kModernVersion } from '../wire.js';
import { checkModernVersion, eraOf, metaOf, modernLogLevel } from './meta.js';

export type { Classified } from '../message.js';

/** A legacy message's session state, as the transport keeps it. */
export interface LegacySession {
  /** The session's registry scope (`session:<id>`); undefined: the client's own scope applies. */
  readonly sessionScope: string | undefined;
  /** Least severe log level the session asked for (index into kLogLevels); 0 until it asks. */
  readonly logLevel: number;
  /** Where logging/setLevel keeps the session's level. */
  readonly levelStore: LevelStore | undefined;
  /** The capabilities the client declared at initialize. */
  readonly clientCapabilities: Record<string, unknown> | undefined;
}

/** What the transport knows of a message beyond the message itself. */
export interface EdgeFacts {
  /** The transport carries MCP headers (HTTP): the MCP-Protocol-Version rules apply to `headerVersion`. */
  readonly hasHeaders: boolean;
  /** The MCP-Protocol-Version header, if any. */
  readonly headerVersion: string | undefined;
  /**
   * Modern requests get scopes of their own (`modern:` + the client's), out of reach of any
   * notifications/cancelled: over HTTP a modern request ends only when its own stream closes.
   */
  readonly isolateModern: boolean;
  /** The verified caller (HTTP with `auth`); undefined otherwise. */
  readonly auth?: AuthInfo | undefined;
  /** The client's scope when no session applies: principal or address (HTTP), the connection (stdio). */
  clientScope(): string;
  /**
   * Legacy era only: the message's session (found, or opened by initialize), or the refusal
   * (required and missing, unknown, too many). Never called for a modern message.
   */
  legacySession(message: Classified): LegacySession | ProtocolError;
}

/** The last client scope seen and its modern scope: a keep-alive client's requests build the string once. */
let lastClientScope = '';
let lastModernScope = 'modern:';
function modernScope(clientScope: string): string {
  if (clientScope !== lastClientScope) {
    lastClientScope = clientScope;
    lastModernScope = `modern:${clientScope}`;
  }
  return lastModernScope;
}

/**
 * The RequestInfo of one message, or the ProtocolError (with its HTTP status) to refuse it with.
 * The era: body first (`_meta` protocol version), then the header (see `eraOf`).
 *
 * Modern: a response is refused (2026-07-28 servers send clients no requests); a notification
 * passes unchecked; a request must ask for 2026-07-28 in `_meta` and, where there are headers,
 * carry a matching MCP-Protocol-Version. Legacy: a header must name a legacy revision; then the
 * transport's session decides scope, log level and capabilities.
 */
export function requestInfo(message: Classified, edge: EdgeFacts): RequestInfo | ProtocolError {
  const params = message.kind === 'response' ? undefined : message.params;
  const meta = metaOf(params);
  const headerVersion = edge.headerVersion;
  if (eraOf(meta, headerVersion) === 'modern') {
    if (message.kind === 'response') return kNoResponses;
    if (message.kind === 'request') {
      const metaVersion = meta?.[kMetaProtocolVersion];
      if (edge.hasHeaders) {
        if (headerVersion === undefined) return kVersionRequired;
        if (typeof metaVersion === 'string' && headerVersion !== metaVersion) return kVersionMismatch;
      }
      const problem = checkModernVersion(metaVersion);
      if (problem !== undefined) return problem;
    }
    const client = edge.clientScope();
    const scope = edge.isolateModern ? modernScope(client) : client;
    return { era: 'modern', version: kModernVersion, scope, client, logLevel: modernLogLevel(meta), auth: edge.auth, meta };
  }
  if (headerVersion !== undefined && !(kLegacyVersions as readonly string[]).includes(headerVersion)) {
    return new ProtocolError(ErrorCode.InvalidRequest, `Bad Request: unsupported MCP-Protocol-Version ${headerVersion}`, undefined, 400);
  }
  const session = edge.legacySession(message);
  if (session instanceof ProtocolError) return session;
  return {
    era: 'legacy',
    version: headerVersion ?? kDefaultLegacyVersion,
    scope: session.sessionScope ?? edge.clientScope(),
    client: edge.clientScope(),
    logLevel: session.logLevel,
    levelStore: session.levelStore,
    clientCapabilities: session.clientCapabilities,
    auth: edge.auth,
  };
}
