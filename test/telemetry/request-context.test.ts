/**
 * The context a traced request's handler runs in (ServerTracer.within), in this thread with the
 * SDK's BasicTracerProvider and the AsyncLocalStorage context manager: the request span active
 * (across an await too), the `_meta` baggage visible, and contexts derived from it (a tool's own
 * active span, a deleted span) behaving as the API's.
 */
import { afterAll, describe, expect, it } from 'vitest';
import * as api from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { BasicTracerProvider } from '@opentelemetry/sdk-trace-base';
import { ServerTracer } from '../../src/telemetry/tracing/server.js';

const manager = new AsyncLocalStorageContextManager().enable();
api.context.setGlobalContextManager(manager);
const provider = new BasicTracerProvider();
api.trace.setGlobalTracerProvider(provider);
afterAll(async () => {
  await provider.shutdown();
  api.trace.disable();
  api.context.disable();
});

const traceId = 'a'.repeat(32);
const meta = { traceparent: `00-${traceId}-${'b'.repeat(16)}-01`, baggage: 'tenant=acme' };

describe('ServerTracer.within', () => {
  it('runs the handler with the request span active and the _meta baggage, and derived contexts work', async () => {
    const tracer = ServerTracer.create('tcp', api)!;
    expect(tracer).toBeDefined();
    const context = tracer.start('tools/call', 'echo', 'name', 1, { name: 'echo', _meta: meta }, '2025-11-25', 'client:x');
    const span = tracer.spanOf(context);
    const seen = await tracer.within(context, async (a: number, b: number) => {
      const before = api.trace.getActiveSpan();
      await new Promise((resolve) => setTimeout(resolve, 2));
      const afterAwait = api.trace.getActiveSpan();
      const baggage = api.propagation.getActiveBaggage()?.getEntry('tenant')?.value;
      const child = api.trace.getTracer('tool').startSpan('tool work') as unknown as { parentSpanContext?: api.SpanContext } & api.Span;
      child.end();
      const nested = api.trace.getTracer('tool').startActiveSpan('nested', (s) => {
        s.end();
        return { active: api.trace.getActiveSpan() === s, baggage: api.propagation.getActiveBaggage()?.getEntry('tenant')?.value };
      });
      const deleted = api.trace.getSpan(api.trace.deleteSpan(api.context.active()));
      const key = api.createContextKey('a tool key');
      const withValue = api.context.active().setValue(key, 42);
      return { sum: a + b, before, afterAwait, baggage, childParent: child.parentSpanContext?.spanId, nested, deleted, value: withValue.getValue(key), spanThere: api.trace.getSpan(withValue) };
    }, 1, 2);
    tracer.end(span, '');
    expect(seen.sum).toBe(3);
    expect(seen.before).toBe(span);
    expect(seen.afterAwait).toBe(span);
    expect(seen.baggage).toBe('acme');
    expect(seen.childParent).toBe(span.spanContext().spanId);
    expect(span.spanContext().traceId).toBe(traceId);
    expect(seen.nested).toEqual({ active: true, baggage: 'acme' });
    expect(seen.deleted).toBeUndefined();
    expect(seen.value).toBe(42);
    expect(seen.spanThere).toBe(span);
    expect(api.trace.getActiveSpan()).toBeUndefined(); // nothing leaks out of the handler
  });

  it('a span started without _meta: the handler gets the span over the root context', () => {
    const tracer = ServerTracer.create('tcp', api)!;
    const context = tracer.start('ping', '', undefined, 'p', undefined, '2025-11-25', 'client:x');
    const span = tracer.spanOf(context);
    const seen = tracer.within(context, (_a: number, _b: number) => ({ active: api.trace.getActiveSpan(), baggage: api.propagation.getActiveBaggage() }), 0, 0);
    tracer.end(span, '');
    expect(seen.active).toBe(span);
    expect(seen.baggage).toBeUndefined();
  });
});
