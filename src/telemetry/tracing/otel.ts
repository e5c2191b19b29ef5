/**
 * `@opentelemetry/api`, loaded only if it is there and something registered with it. It is an
 * optional peer dependency: without it (or with it and no SDK registered, when Sluice does not load
 * it) Sluice makes no span and pays one check per thread.
 *
 * The API keeps its registered providers on `globalThis` under a versioned symbol, so the copy
 * loaded here (CommonJS, through `require`) sees a provider that an ES module registered.
 */
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

/** The API module, as this file uses it. */
export type OtelApi = typeof Api;

/** A `require` (injectable: tests make the package missing). */
export type Loader = (id: string) => unknown;

let cached: OtelApi | null | undefined;

/**
 * Where API 1.x keeps what was registered with it in this thread (tracer, meter and context
 * providers, propagators, diag): created by the first registration. Any copy of the API, CommonJS or
 * ES module, uses this key, and only a 1.x registration is one our 1.x copy would use.
 */
const kRegistered = Symbol.for('opentelemetry.js.api.1');

/**
 * The API, or undefined when `@opentelemetry/api` is not installed, or when nothing is registered
 * with it in this thread yet: then it is not loaded at all (a CommonJS graph of ~40 ms of CPU per
 * thread), since with no provider it could only answer no-ops. Asked again later (a provider
 * registered meanwhile), it loads then. Other load errors are thrown. `load` (tests): loads now,
 * whatever is registered, and caches nothing.
 */
export function loadOtelApi(load?: Loader): OtelApi | undefined {
  if (load === undefined) {
    if (cached !== undefined) return cached ?? undefined;
    if ((globalThis as Record<symbol, unknown>)[kRegistered] === undefined) return undefined;
  }
  let api: OtelApi | undefined;
  try {
    api = (load ?? createRequire(import.meta.url))('@opentelemetry/api') as OtelApi;
  } catch (error) {
    if ((error as NodeJS.ErrnoException | undefined)?.code !== 'MODULE_NOT_FOUND') throw error;
    api = undefined;
  }
  if (load === undefined) cached = api ?? null;
  return api;
}

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
