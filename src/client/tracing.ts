/**
 * CLIENT spans for the requests a `Client` sends, and the W3C trace context of each in the
 * request's `params._meta` (`traceparent`, `tracestate`), so the server's span continues the
 * caller's trace. Only when `@opentelemetry/api` is installed and an SDK registered a tracer
 * provider in this thread when the client was made; otherwise nothing is loaded or made.
 * Names follow the OpenTelemetry semantic conventions for MCP (@opentelemetry/semantic-conventions
 * 1.45.0, experimental there).
 */
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

type OtelApi = typeof Api;
let cached: OtelApi | null | undefined;

function otelApi(): OtelApi | undefined {
  if (cached === undefined) {
    try {
      cached = createRequire(import.meta.url)('@opentelemetry/api') as OtelApi;
    } catch (error) {
      if ((error as NodeJS.ErrnoException | undefined)?.code !== 'MODULE_NOT_FOUND') throw error;
      cached = null; // an optional peer dependency: absent, no spans
    }
  }
  return cached ?? undefined;
}

export class ClientTracer {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;

  /** A tracer if the API is installed and a provider is registered in this thread, else undefined. */
  static create(): ClientTracer | undefined {
    const api = otelApi();
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
    const target = method === 'tools/call' || method === 'prompts/get' ? params.name : method === 'resources/read' ? params.uri : undefined;
    const attributes: Api.Attributes = { 'mcp.method.name': method, 'jsonrpc.request.id': String(id) };
    if (version !== undefined) attributes['mcp.protocol.version'] = version;
    if (typeof target === 'string') {
      if (method === 'tools/call') {
        attributes['gen_ai.tool.name'] = target;
        attributes['gen_ai.operation.name'] = 'execute_tool';
      } else if (method === 'prompts/get') {
        attributes['gen_ai.prompt.name'] = target;
      } else {
        attributes['mcp.resource.uri'] = target;
      }
    }
    const span = this.#tracer.startSpan(typeof target === 'string' ? `${method} ${target}` : method, { kind: api.SpanKind.CLIENT, attributes }, api.context.active());
    const context = span.spanContext();
    meta.traceparent = `00-${context.traceId}-${context.spanId}-${(context.traceFlags & 1) === 1 ? '01' : '00'}`;
    const state = context.traceState?.serialize();
    if (state !== undefined && state !== '') meta.tracestate = state;
    return span;
  }

  /** Ends `span` when `result` settles, with its outcome; returns `result`. */
  settle<T>(span: Api.Span, result: Promise<T>): Promise<T> {
    result.then((value) => {
      if ((value as { isError?: unknown } | undefined)?.isError === true) this.#failed(span, 'tool_error');
      span.end();
    }, (error: unknown) => {
      const code = (error as { rpcCode?: unknown } | undefined)?.rpcCode;
      this.#failed(span, typeof code === 'number' ? String(code) : error instanceof Error ? error.name : 'error');
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
