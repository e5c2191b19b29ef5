/**
 * Server spans for MCP requests, named and attributed as the OpenTelemetry semantic conventions
 * for MCP say (@opentelemetry/semantic-conventions 1.45.0; those attributes are still experimental
 * there, so the names may change). Made only when an SDK registered a tracer provider in the
 * serving thread: otherwise `ServerTracer.create` returns undefined and a request costs one
 * `undefined` check.
 */
import { threadId } from 'node:worker_threads';
import type * as Api from '@opentelemetry/api';
import { loadOtelApi } from '../../otel-api.js';
import type { OtelApi } from '../../otel-api.js';
import { activeTracer, carriedOf, metaContext, parseTraceparent } from './otel.js';
import type { CarriedTrace } from './otel.js';

/** A request's span (the API's type, kept opaque to callers). */
export type RequestSpan = Api.Span;

/** The context a request's handler runs in: the span's parent context (baggage included) with the span active. */
export type RequestContext = Api.Context;

/** What became of a cancel: `sluice.cancel.outcome`. */
export type CancelOutcome = 'applied' | 'forwarded' | 'ignored' | 'not_in_flight' | 'refused';

/** How the requests of this engine arrive (`network.transport`). */
export type NetworkTransport = 'tcp' | 'pipe';

/** What a request ended as: `error.type` '' for success, a JSON-RPC code, 'tool_error', 'cancelled', 'killed'. */
export type SpanOutcome = string;

export class ServerTracer {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;
  readonly #transport: NetworkTransport;

  /** A tracer if `@opentelemetry/api` is installed and an SDK registered a provider in this thread. */
  static create(transport: NetworkTransport, api: OtelApi | undefined = loadOtelApi()): ServerTracer | undefined {
    const tracer = activeTracer(api, 'sluice');
    return tracer === undefined ? undefined : new ServerTracer(api!, tracer, transport);
  }

  constructor(api: OtelApi, tracer: Api.Tracer, transport: NetworkTransport) {
    this.#api = api;
    this.#tracer = tracer;
    this.#transport = transport;
  }

  /**
   * Starts a SERVER span `{mcp.method.name} {target}`, its parent the `traceparent` in
   * `params._meta`; the carrier's context (`headers`: HTTP's traceparent header) is linked, or is
   * the parent when `_meta` has none (else a new trace). Returns the context the handler runs in
   * (`within`): the parent's, so the `_meta` baggage is the tool's too, with the span active.
   */
  start(method: string, target: string, names: 'name' | 'uri' | undefined, id: string | number, params: Record<string, unknown> | undefined, version: string, scope: string, headers?: CarriedTrace): RequestContext {
    const api = this.#api;
    const attributes: Api.Attributes = {
      'mcp.method.name': method,
      'jsonrpc.request.id': String(id),
      'mcp.protocol.version': version,
      'network.transport': this.#transport,
    };
    if (this.#transport === 'tcp') attributes['network.protocol.name'] = 'http';
    if (scope.startsWith('session:')) attributes['mcp.session.id'] = scope.slice(8);
    if (target !== '') {
      if (method === 'tools/call') {
        attributes['gen_ai.tool.name'] = target;
        attributes['gen_ai.operation.name'] = 'execute_tool';
      } else if (method === 'prompts/get') {
        attributes['gen_ai.prompt.name'] = target;
      } else if (names === 'uri') {
        attributes['mcp.resource.uri'] = target;
      }
    }
    const meta = metaContext(api, params?._meta as Record<string, unknown> | undefined);
    const carrier = headers === undefined ? undefined : metaContext(api, headers as unknown as Record<string, unknown>);
    const parent = meta ?? carrier ?? api.ROOT_CONTEXT;
    let links: Api.Link[] | undefined;
    if (meta !== undefined && carrier !== undefined) {
      const linked = api.trace.getSpanContext(carrier)!;
      if (linked.spanId !== api.trace.getSpanContext(meta)!.spanId) links = [{ context: linked }];
    }
    const span = this.#tracer.startSpan(target === '' ? method : `${method} ${target}`, { kind: api.SpanKind.SERVER, attributes, links }, parent);
    return api.trace.setSpan(parent, span);
  }

  /** The span a `start` context holds. */
  spanOf(context: RequestContext): RequestSpan {
    return this.#api.trace.getSpan(context)!;
  }

  /** Runs `fn` in a request's context (`start`): spans a tool makes are children of the request's. */
  within<A, B, R>(context: RequestContext, fn: (a: A, b: B) => R, a: A, b: B): R {
    return this.#api.context.with(context, fn, undefined, a, b);
  }


  /**
   * An INTERNAL span, a child of `parent`, for work that outlives the request (a task: it runs on
   * after the request that created it has answered, so its status changes need a span of their own).
   */
  child(parent: RequestSpan, name: string, attributes: Api.Attributes): RequestSpan {
    const api = this.#api;
    return this.#tracer.startSpan(name, { kind: api.SpanKind.INTERNAL, attributes }, api.trace.setSpan(api.ROOT_CONTEXT, parent));
  }

  /** The span's context as plain strings (for the `_meta` of a request the server sends the client). */
  carried(span: RequestSpan): CarriedTrace | undefined {
    return carriedOf(this.#api, span);
  }

  /** A link from the span to another span by its traceparent (a task's creating request); ignored when malformed. */
  link(span: RequestSpan, traceparent: string, attributes: Api.Attributes): void {
    const context = parseTraceparent(traceparent);
    if (context !== undefined) span.addLink({ context: { ...context, isRemote: true }, attributes });
  }

  /** An event on the span (cancel received, client gone, killed...). */
  event(span: RequestSpan, name: string, attributes: Api.Attributes): void {
    span.addEvent(name, { 'thread.id': threadId, ...attributes });
  }

  /**
   * A client's `notifications/cancelled`, received here: a SERVER span, its parent the context in
   * the notification's `_meta` (the Sluice client puts its request span's there).
   */
  cancelReceived(params: unknown, scope: string, version: string): RequestSpan {
    const api = this.#api;
    const p = params !== null && typeof params === 'object' ? params as Record<string, unknown> : undefined;
    const meta = p?._meta !== null && typeof p?._meta === 'object' ? p._meta as Record<string, unknown> : undefined;
    const attributes: Api.Attributes = { 'mcp.method.name': 'notifications/cancelled', 'mcp.protocol.version': version, 'network.transport': this.#transport };
    if (scope.startsWith('session:')) attributes['mcp.session.id'] = scope.slice(8);
    const id = p?.requestId;
    if (typeof id === 'string' || typeof id === 'number') attributes['sluice.cancel.request_id'] = String(id);
    return this.#tracer.startSpan('notifications/cancelled', { kind: api.SpanKind.SERVER, attributes }, metaContext(api, meta) ?? api.ROOT_CONTEXT);
  }

  /** Another node's cancel, from the bus: a CONSUMER span, its parent the sending node's span (`carried`). */
  cancelRelayed(carried: CarriedTrace | undefined, requestId: string | number, fromNode: string, nodeId: string): RequestSpan {
    const api = this.#api;
    return this.#tracer.startSpan('notifications/cancelled', {
      kind: api.SpanKind.CONSUMER,
      attributes: { 'mcp.method.name': 'notifications/cancelled', 'sluice.cancel.request_id': String(requestId), 'sluice.cluster.from_node': fromNode, 'sluice.cluster.node_id': nodeId },
    }, metaContext(api, carried as Record<string, unknown> | undefined) ?? api.ROOT_CONTEXT);
  }

  /** Ends a cancel's span: what became of it, or a refusal's JSON-RPC code (then it is an error, as `end` makes it). */
  endCancel(span: RequestSpan, outcome: CancelOutcome | number): void {
    span.setAttribute('sluice.cancel.outcome', typeof outcome === 'number' ? 'refused' : outcome);
    this.end(span, typeof outcome === 'number' ? String(outcome) : '');
  }

  /** Ends the span with the request's outcome. */
  end(span: RequestSpan, outcome: SpanOutcome): void {
    if (outcome !== '') {
      span.setAttribute('error.type', outcome);
      if (/^-?\d+$/.test(outcome)) span.setAttribute('rpc.response.status_code', outcome);
      span.setStatus({ code: this.#api.SpanStatusCode.ERROR });
    }
    span.end();
  }
}
