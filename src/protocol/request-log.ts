/**
 * The per-request log line (`logLevel: 'debug'`): one structured line per request as it is
 * released, for an operator following traffic without a tracing backend. Decided once per engine
 * (EngineConfig.requestLog): at any other level a request pays one `undefined` check.
 */
import { parseTraceparent } from '../telemetry/tracing/otel.js';
import type { RequestSpan } from '../telemetry/tracing/server.js';
import type { JsonRpcId } from './wire.js';

/** Longest target (tool name, URI) written: the client chose it. */
const kMaxTarget = 256;

export interface RequestLogFacts {
  readonly id: JsonRpcId;
  readonly method: string;
  readonly target: string;
  readonly scope: string;
  /** How the request ended. */
  readonly status: 'ok' | 'error' | 'cancelled' | 'killed';
  /** `error.type`: '' for success, 'tool_error', a JSON-RPC code, 'cancelled', 'killed'. */
  readonly outcome: string;
  readonly durationMs: number;
  readonly span: RequestSpan | undefined;
  /** The request's `_meta` (2026-07-28), for its traceparent when there is no span. */
  readonly meta: Record<string, unknown> | undefined;
}

/** `sluice: request {...}`: method, target, id, scope, status, error type, duration (ms), trace id. */
export function requestLogLine(facts: RequestLogFacts): string {
  const traceparent = facts.meta?.traceparent;
  const traceId = facts.span?.spanContext().traceId ?? (typeof traceparent === 'string' ? parseTraceparent(traceparent)?.traceId : undefined);
  return `sluice: request ${JSON.stringify({
    method: facts.method,
    target: facts.target === '' ? undefined : facts.target.slice(0, kMaxTarget),
    id: facts.id,
    scope: facts.scope,
    status: facts.status,
    error: facts.outcome === '' ? undefined : facts.outcome,
    durationMs: Math.round(facts.durationMs * 1000) / 1000,
    traceId,
  })}`;
}
