import type { RequestInput } from '../../tools/context.js';
import type { Era, RequestInfo } from '../contract.js';
import type { ProtocolError } from '../wire.js';

/**
 * What an era's rules see of a run: what the request is about and who asks (a `Run` is one). A
 * shape of its own, so these rules need nothing of run.ts, which needs them.
 */
export interface RunFacts {
  readonly method: string;
  readonly target: string;
  readonly info: RequestInfo;
}

/**
 * What differs between protocol eras, decided once per request: the engine picks the era object
 * from `RequestInfo.era` at dispatch and every later step asks it, instead of testing the era.
 * (Each era's method table is on its class: only the engine dispatches.)
 */
export interface EraRules {
  readonly name: Era;
  /** Whether a handler may send the client requests on the request's stream (legacy only). */
  readonly clientRequests: boolean;
  /** The refusal of a method this era does not serve. */
  methodNotFound(method: string): ProtocolError;
  /** The refusal of a resources/read for a URI nothing serves. */
  resourceNotFound(uri: string): ProtocolError;
  /** A complete list or read result as this era sends it (2026-07-28: with caching hints). */
  cacheable(result: Record<string, unknown>): Record<string, unknown>;
  /** What the request carried for a multi-round exchange; refuses a tampered requestState. */
  input(run: RunFacts, params: Record<string, unknown> | undefined): RequestInput;
  /** The JSON text of a request's result, as this era wants it. */
  encode(result: Record<string, unknown>, method: string, target: string): string;
}

/** How long a 2026-07-28 client may cache a list, read or discover result. */
export const kCacheTtlMs = 60_000;
