/**
 * A pool tool's span, made in the pool thread that runs it: `execute_tool {name}` (INTERNAL, as
 * the gen-ai conventions name a tool's execution), a child of the request's SERVER span in the
 * HTTP worker through the trace context the task carried across. Made only when the `tracing`
 * module registered a tracer provider in the pool thread too.
 */
import { threadId } from 'node:worker_threads';
import type * as Api from '@opentelemetry/api';
import { loadOtelApi } from '../../otel-api.js';
import type { OtelApi } from '../../otel-api.js';
import { activeTracer, metaContext } from './otel.js';
import type { CarriedTrace } from './otel.js';

export class ToolSpans {
  readonly #api: OtelApi;
  readonly #tracer: Api.Tracer;

  /** Spans if `@opentelemetry/api` is installed and an SDK registered a provider in this thread. */
  static create(api: OtelApi | undefined = loadOtelApi()): ToolSpans | undefined {
    const tracer = activeTracer(api, 'sluice');
    return tracer === undefined ? undefined : new ToolSpans(api!, tracer);
  }

  constructor(api: OtelApi, tracer: Api.Tracer) {
    this.#api = api;
    this.#tracer = tracer;
  }

  /**
   * Runs `fn` inside the tool's span (the tool's own spans become its children), ending it with
   * the outcome `fn`'s result reports ('' for success, 'tool_error', or a JSON-RPC code).
   */
  async run<R>(name: string, carried: CarriedTrace | undefined, fn: () => Promise<R>, outcome: (result: R) => string): Promise<R> {
    const api = this.#api;
    const parent = metaContext(api, carried as Record<string, unknown> | undefined) ?? api.ROOT_CONTEXT;
    const span = this.#tracer.startSpan(`execute_tool ${name}`, {
      kind: api.SpanKind.INTERNAL,
      attributes: { 'gen_ai.operation.name': 'execute_tool', 'gen_ai.tool.name': name, 'thread.id': threadId },
    }, parent);
    let failed = '';
    try {
      const result = await api.context.with(api.trace.setSpan(parent, span), fn);
      failed = outcome(result);
      return result;
    } catch (error) {
      failed = error instanceof Error ? error.name : 'error';
      throw error;
    } finally {
      if (failed !== '') {
        span.setAttribute('error.type', failed);
        span.setStatus({ code: api.SpanStatusCode.ERROR });
      }
      span.end();
    }
  }
}
