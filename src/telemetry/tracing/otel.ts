/**
 * The server's side of `@opentelemetry/api` (loaded by src/otel-api.ts): the active tracer, the
 * `tracing` module, the W3C trace context in `_meta` and across threads and nodes. Without the API
 * (or with it and nothing registered, when it is not loaded) Sluice makes no span and pays one check
 * per thread.
 */
import type * as Api from '@opentelemetry/api';
import { loadOtelApi } from '../../otel-api.js';
import type { OtelApi } from '../../otel-api.js';


/**
 * A tracer when an SDK has registered a tracer provider (in this thread: providers are per
 * thread), else undefined. Checked once per engine, after the `tracing` module has run.
 */
export function activeTracer(api: OtelApi | undefined, name: string, version?: string): Api.Tracer | undefined {
  if (api === undefined) return undefined;
  const provider = api.trace.getTracerProvider();
  if (provider instanceof api.ProxyTracerProvider) return provider.getDelegateTracer(name, version);
  return provider.getTracer(name, version);
}

/**
 * Imports the `tracing` option's module (an SDK setup registering a tracer provider) in this
 * thread, once. A thread serving requests calls it before it makes its engine.
 */
const imported = new Map<string, Promise<unknown>>();
export function importTracingModule(url: string | undefined): Promise<unknown> {
  if (url === undefined) return Promise.resolve();
  let done = imported.get(url);
  if (done === undefined) imported.set(url, done = import(url));
  return done;
}

/** The W3C trace context carried in `_meta` (traceparent, tracestate, baggage), as a context. */
export function metaContext(api: OtelApi, meta: Record<string, unknown> | undefined): Api.Context | undefined {
  if (meta === undefined) return undefined;
  const parent = meta.traceparent;
  if (typeof parent !== 'string') return undefined;
  const span = parseTraceparent(parent);
  if (span === undefined) return undefined;
  const state = meta.tracestate;
  if (typeof state === 'string' && state.length <= 512) {
    try {
      span.traceState = api.createTraceState(state);
    } catch {
      // a malformed tracestate is dropped, the parent kept (as the W3C propagator does)
    }
  }
  let ctx = api.trace.setSpanContext(api.ROOT_CONTEXT, { ...span, isRemote: true });
  const baggage = meta.baggage;
  if (typeof baggage === 'string' && baggage.length <= 8192) {
    const entries: Record<string, Api.BaggageEntry> = {};
    for (const member of baggage.split(',').slice(0, 180)) {
      const pair = member.split(';')[0]!;
      const eq = pair.indexOf('=');
      if (eq <= 0) continue;
      try {
        entries[decodeURIComponent(pair.slice(0, eq).trim())] = { value: decodeURIComponent(pair.slice(eq + 1).trim()) };
      } catch {
        // undecodable member: skipped
      }
    }
    ctx = api.propagation.setBaggage(ctx, api.propagation.createBaggage(entries));
  }
  return ctx;
}

const kTraceparent = /^([0-9a-f]{2})-([0-9a-f]{32})-([0-9a-f]{16})-([0-9a-f]{2})(-.*)?$/;

/** A version-00 (or later, read as 00) traceparent, or undefined when malformed or all zeros. */
export function parseTraceparent(text: string): { traceId: string; spanId: string; traceFlags: number; traceState?: Api.TraceState } | undefined {
  if (text.length > 256) return undefined;
  const m = kTraceparent.exec(text.trim());
  if (m === null || m[1] === 'ff' || (m[1] === '00' && m[5] !== undefined)) return undefined;
  const traceId = m[2]!;
  const spanId = m[3]!;
  if (/^0+$/.test(traceId) || /^0+$/.test(spanId)) return undefined;
  return { traceId, spanId, traceFlags: Number.parseInt(m[4]!, 16) & 1 };
}

/** The traceparent of a span context (for `_meta` and messages between nodes). */
export function formatTraceparent(span: Api.SpanContext): string {
  return `00-${span.traceId}-${span.spanId}-${(span.traceFlags & 1) === 1 ? '01' : '00'}`;
}

/** The W3C trace context of a span, as plain strings (what crosses to another thread or node). */
export interface CarriedTrace {
  readonly traceparent: string;
  readonly tracestate?: string | undefined;
}

/**
 * The active span's trace context in this thread, to carry into a message (a pool task, a bus
 * message); undefined without the API, without an SDK's span, or with an invalid context.
 */
export function activeTrace(api: OtelApi | undefined = loadOtelApi()): CarriedTrace | undefined {
  if (api === undefined) return undefined;
  const span = api.trace.getSpan(api.context.active());
  return span === undefined ? undefined : carriedOf(api, span);
}

/** A span's trace context as plain strings; undefined for an invalid context (a non-recording SDK's). */
export function carriedOf(api: OtelApi, span: Api.Span): CarriedTrace | undefined {
  const context = span.spanContext();
  if (!api.trace.isSpanContextValid(context)) return undefined;
  const state = context.traceState?.serialize();
  return { traceparent: formatTraceparent(context), tracestate: state === '' ? undefined : state };
}
