/**
 * Server spans for MCP requests, named and attributed as the OpenTelemetry semantic conventions
 * for MCP say (@opentelemetry/semantic-conventions 1.45.0; those attributes are still experimental
 * there, so the names may change). Made only when an SDK registered a tracer provider in the
 * serving thread: otherwise `ServerTracer.create` returns undefined and a request costs one
 * `undefined` check.
 */
import { threadId } from 'node:worker_threads';
import type * as Api from '@opentelemetry/api';
import { activeTracer, carriedOf, loadOtelApi, metaContext, parseTraceparent } from './otel.js';
import type { CarriedTrace, OtelApi } from './otel.js';

/** A request's span (the API's type, kept opaque to callers). */
export type RequestSpan = Api.Span;

/** How the requests of this engine arrive (`network.transport`). */
export type NetworkTransport = 'tcp' | 'pipe';

/** What a request ended as: `error.type` '' for success, a JSON-RPC code, 'tool_error', 'cancelled', 'killed'. */
export type SpanOutcome = string;

export class ServerTracer {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;
  readonly #transport: NetworkTransport;
  /**
   * The context the last span started in (its `_meta` parent, baggage included, or the root),
   * for `within`: the engine starts a request's span and runs its handler in the same turn, so
   * the handler's context is built from it, not from whatever is active, without storing a
   * context per request. Cleared by `within`.
   */
  #startedSpan: RequestSpan | undefined;
  #startedIn: Api.Context | undefined;

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

  /** How this engine's requests arrive. */
  get transport(): NetworkTransport {
    return this.#transport;
  }

  /**
   * A SERVER span `{mcp.method.name} {target}`, its parent the `traceparent` in `params._meta`; the
   * carrier's context (`headers`: HTTP's traceparent header) is linked, or is the parent when
   * `_meta` has none (else a new trace).
   */
  start(method: string, target: string, names: 'name' | 'uri' | undefined, id: string | number, params: Record<string, unknown> | undefined, version: string, scope: string, headers?: CarriedTrace): RequestSpan {
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
    this.#startedSpan = span;
    this.#startedIn = parent;
    return span;
  }

  /**
   * Runs `fn` with `span` as the active span, so spans a tool makes are its children, in the
   * context the span started in (the `_meta` baggage is the tool's too).
   */
  within<A, B, R>(span: RequestSpan, fn: (a: A, b: B) => R, a: A, b: B): R {
    const api = this.#api;
    const parent = span === this.#startedSpan ? this.#startedIn! : api.context.active();
    this.#startedSpan = this.#startedIn = undefined;
    return api.context.with(api.trace.setSpan(parent, span), fn, undefined, a, b);
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
