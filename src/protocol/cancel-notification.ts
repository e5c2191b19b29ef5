import type { Registry } from '../registry/index.js';
import type { CancelOutcome } from '../telemetry/tracing/server.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';
import { validRequestId } from '../registry/index.js';
import type { EngineConfig } from './contract.js';
import { ErrorCode, ProtocolError } from './wire.js';

/** Refusals are constants: a flood of bad notifications builds no errors (and captures no stacks). */
const kNotAnObject = Object.freeze(new ProtocolError(ErrorCode.InvalidParams, 'notifications/cancelled requires a params object', undefined, 400));
const kBadRequestId = Object.freeze(new ProtocolError(ErrorCode.InvalidParams, 'notifications/cancelled needs a string or integer requestId of at most 256 bytes', undefined, 400));
/** Quota refusals by the registry's reason (a handful of codes): made on first use. */
const kLimited = new Map<string, ProtocolError>();

/**
 * `notifications/cancelled`: honoured only for a request in flight in the sender's own scope;
 * anything else (unknown, finished, someone else's) is ignored here (in cluster mode it is handed to
 * the other nodes, which apply the same rule, with `trace`: the context of this cancel's span). What
 * became of it when accepted, else the refusal (400 for malformed params, 429 when the scope's
 * cancellation quota is spent).
 */
export function cancelNotification(registry: Registry, log: EngineConfig['log'], params: unknown, scope: string, forward?: EngineConfig['forwardCancel'], trace?: CarriedTrace): ProtocolError | Exclude<CancelOutcome, 'not_in_flight' | 'refused'> {
  if (params === undefined) return 'ignored';
  if (params === null || typeof params !== 'object' || Array.isArray(params)) return kNotAnObject;
  const { requestId, reason } = params as { requestId?: unknown; reason?: unknown };
  if (requestId === null || requestId === undefined) return 'ignored';
  if (!validRequestId(requestId)) return kBadRequestId;
  if (!registry.inFlight(requestId, scope)) {
    // Cluster mode: the request may run on another node. Only scopes that mean the same client on
    // every node travel (a session, an authenticated principal); an address bucket does not, since
    // behind a balancer every node sees the balancer's address.
    if (forward !== undefined && (scope.startsWith('session:') || scope.startsWith('principal:'))) {
      forward(requestId, typeof reason === 'string' ? reason : undefined, scope, trace);
      return 'forwarded';
    }
    return 'ignored';
  }
  const result = registry.cancel(requestId, reason, scope);
  if (result.ok) return 'applied';
  log('warn', `sluice: cancellation refused for scope ${JSON.stringify(scope)}: ${result.error}`);
  let refusal = kLimited.get(result.error);
  if (refusal === undefined) {
    refusal = Object.freeze(new ProtocolError(ErrorCode.CancellationLimitReached, 'Too many outstanding cancellations', Object.freeze({ reason: result.error }), 429));
    kLimited.set(result.error, refusal);
  }
  return refusal;
}
