/**
 * CLIENT spans for the requests a `Client` sends, and the W3C trace context of each in the
 * request's `params._meta` (`traceparent`, `tracestate`), so the server's span continues the
 * caller's trace. Only when `@opentelemetry/api` is installed and an SDK registered a tracer
 * provider in this thread when the client was made; otherwise nothing is loaded or made.
 * Names follow the OpenTelemetry semantic conventions for MCP (@opentelemetry/semantic-conventions
 * 1.45.0, experimental there).
 */
import type * as Api from '@opentelemetry/api';
import { loadOtelApi } from '../otel-api.js';
import type { OtelApi } from '../otel-api.js';

export class ClientTracer {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;

  /** A tracer if the API is installed and a provider is registered in this thread, else undefined. */
  static create(): ClientTracer | undefined {
    const api = loadOtelApi();
    if (api === undefined) return undefined;
    const provider = api.trace.getTracerProvider();
    const tracer = provider instanceof api.ProxyTracerProvider ? provider.getDelegateTracer('sluice-client') : provider.getTracer('sluice-client');
    return tracer === undefined ? undefined : new ClientTracer(api, tracer);
  }

  constructor(api: OtelApi, tracer: Api.Tracer) {
    this.#api = api;
    this.#tracer = tracer;
  }

  /**
   * Starts the CLIENT span of one request (a child of the active span) and writes its context
   * into `meta`; `result` settles it.
   */
  start(method: string, params: Record<string, unknown>, id: number, version: string | undefined, meta: Record<string, unknown>): Api.Span {
    const api = this.#api;
    const target = targetOf(method, params);
    const attributes = targetAttributes(method, target);
    attributes['jsonrpc.request.id'] = String(id);
    if (version !== undefined) attributes['mcp.protocol.version'] = version;
    if (target !== undefined && method === 'tools/call') attributes['gen_ai.operation.name'] = 'execute_tool';
    const span = this.#tracer.startSpan(target !== undefined ? `${method} ${target}` : method, { kind: api.SpanKind.CLIENT, attributes }, api.context.active());
    const context = span.spanContext();
    meta.traceparent = `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 1) === 1 ? '01' : '00'}`;
    const state = context.traceState?.serialize();
    if (state !== undefined && state !== '') meta.tracestate = state;
    return span;
  }

  /** Ends `span` when `result` settles, with its outcome; returns `result`. */
  settle<T>(span: Api.Span, result: Promise<T>): Promise<T> {
    result.then((value) => {
      const type = valueOutcome(value);
      if (type !== '') this.#failed(span, type);
      span.end();
    }, (error: unknown) => {
      this.#failed(span, errorOutcome(error));
      span.end();
    });
    return result;
  }

  #failed(span: Api.Span, type: string): void {
    span.setAttribute('error.type', type);
    if (/^-?\d+$/.test(type)) span.setAttribute('rpc.response.status_code', type);
    span.setStatus({ code: this.#api.SpanStatusCode.ERROR });
  }
}

/** The request's target: the tool or prompt name, the resource URI; undefined for other methods. */
function targetOf(method: string, params: Record<string, unknown>): string | undefined {
  const target = method === 'tools/call' || method === 'prompts/get' ? params.name : method === 'resources/read' ? params.uri : undefined;
  return typeof target === 'string' ? target : undefined;
}

/** `mcp.method.name` and the target's attribute, named as the conventions say. */
function targetAttributes(method: string, target: string | undefined): Api.Attributes {
  const attributes: Api.Attributes = { 'mcp.method.name': method };
  if (target !== undefined) attributes[method === 'tools/call' ? 'gen_ai.tool.name' : method === 'prompts/get' ? 'gen_ai.prompt.name' : 'mcp.resource.uri'] = target;
  return attributes;
}

/** `error.type` of a result: 'tool_error' for `isError`, '' for success. */
function valueOutcome(value: unknown): string {
  return (value as { isError?: unknown } | undefined)?.isError === true ? 'tool_error' : '';
}

/** `error.type` of a failed request: its JSON-RPC code, else the error's name. */
function errorOutcome(error: unknown): string {
  const code = (error as { rpcCode?: unknown } | undefined)?.rpcCode;
  return typeof code === 'number' ? String(code) : error instanceof Error ? error.name : 'error';
}

/**
 * `mcp.client.operation.duration` through the OpenTelemetry metrics API: each request's duration,
 * from its sending to its settling, when a meter provider is registered in this thread when the
 * client was made (otherwise nothing is made).
 */
export class ClientMeter {
  readonly #histogram: Api.Histogram;

  /** A meter if the API is installed and a (non-no-op) meter provider is registered, else undefined. */
  static create(): ClientMeter | undefined {
    const api = loadOtelApi();
    if (api === undefined) return undefined;
    const meter = api.metrics.getMeter('sluice-client');
    if (meter instanceof (api.createNoopMeter().constructor as new () => Api.Meter)) return undefined;
    return new ClientMeter(meter);
  }

  constructor(meter: Api.Meter) {
    this.#histogram = meter.createHistogram('mcp.client.operation.duration', {
      description: 'MCP request duration as observed by the client',
      unit: 's',
      advice: { explicitBucketBoundaries: [0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 30, 60, 120, 300] },
    });
  }

  /** Records `result`'s duration from `startedAt` (performance.now()) when it settles. */
  observe(method: string, params: Record<string, unknown>, startedAt: number, result: Promise<unknown>): void {
    const record = (type: string) => {
      const attributes = targetAttributes(method, targetOf(method, params));
      if (type !== '') attributes['error.type'] = type;
      this.#histogram.record((performance.now() - startedAt) / 1000, attributes);
    };
    result.then((value) => record(valueOutcome(value)), (error: unknown) => record(errorOutcome(error)));
  }
}
