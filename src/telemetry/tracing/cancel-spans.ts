/**
 * Spans of cancels, so one trace shows where a cancel went: a SERVER span for each
 * `notifications/cancelled` a client sends (a child of the context in its `_meta`, which the Sluice
 * client sets to its request's span), and in cluster mode a CONSUMER span on the node that applies a
 * cancel another node relayed over the bus (a child of the sender's span, whose context travels in
 * the bus message). Made only when an SDK registered a tracer provider in the thread.
 */
import type * as Api from '@opentelemetry/api';
import { activeTracer, carriedOf, loadOtelApi, metaContext } from './otel.js';
import type { CarriedTrace, OtelApi } from './otel.js';
import type { NetworkTransport } from './server.js';

/** What became of a cancel: `sluice.cancel.outcome`. */
export type CancelOutcome = 'applied' | 'forwarded' | 'ignored' | 'not_in_flight' | 'refused';

/** The span of one cancel (the API's type, opaque to callers). */
export type CancelSpan = Api.Span;

export class CancelSpans {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;

  /** Spans if `@opentelemetry/api` is installed and an SDK registered a provider in this thread. */
  static create(api: OtelApi | undefined = loadOtelApi()): CancelSpans | undefined {
    const tracer = activeTracer(api, 'sluice');
    return tracer === undefined ? undefined : new CancelSpans(api!, tracer);
  }

  constructor(api: OtelApi, tracer: Api.Tracer) {
    this.#api = api;
    this.#tracer = tracer;
  }

  /** A client's `notifications/cancelled`, received here: its parent the `_meta` context. */
  received(params: unknown, scope: string, version: string, transport: NetworkTransport): CancelSpan {
    const api = this.#api;
    const p = params !== null && typeof params === 'object' ? params as Record<string, unknown> : undefined;
    const meta = p?._meta !== null && typeof p?._meta === 'object' ? p._meta as Record<string, unknown> : undefined;
    const attributes: Api.Attributes = {
      'mcp.method.name': 'notifications/cancelled',
      'mcp.protocol.version': version,
      'network.transport': transport,
    };
    if (scope.startsWith('session:')) attributes['mcp.session.id'] = scope.slice(8);
    const id = p?.requestId;
    if (typeof id === 'string' || typeof id === 'number') attributes['sluice.cancel.request_id'] = String(id);
    const parent = metaContext(api, meta) ?? api.ROOT_CONTEXT;
    return this.#tracer.startSpan('notifications/cancelled', { kind: api.SpanKind.SERVER, attributes }, parent);
  }

  /** Another node's cancel, from the bus: its parent the sending node's span. */
  relayed(carried: CarriedTrace | undefined, requestId: string | number, fromNode: string, nodeId: string): CancelSpan {
    const api = this.#api;
    const parent = metaContext(api, carried as Record<string, unknown> | undefined) ?? api.ROOT_CONTEXT;
    return this.#tracer.startSpan('notifications/cancelled', {
      kind: api.SpanKind.CONSUMER,
      attributes: {
        'mcp.method.name': 'notifications/cancelled',
        'sluice.cancel.request_id': String(requestId),
        'sluice.cluster.from_node': fromNode,
        'sluice.cluster.node_id': nodeId,
      },
    }, parent);
  }

  /** The span's context, for the message that carries the cancel on. */
  carried(span: CancelSpan): CarriedTrace | undefined {
    return carriedOf(this.#api, span);
  }

  /** Ends the span: `outcome`, or a refusal's JSON-RPC code (then the span is an error). */
  end(span: CancelSpan, outcome: CancelOutcome | number): void {
    if (typeof outcome === 'number') {
      span.setAttributes({ 'sluice.cancel.outcome': 'refused', 'error.type': String(outcome), 'rpc.response.status_code': String(outcome) });
      span.setStatus({ code: this.#api.SpanStatusCode.ERROR });
    } else {
      span.setAttribute('sluice.cancel.outcome', outcome);
    }
    span.end();
  }
}
