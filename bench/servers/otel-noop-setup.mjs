// The `tracing` module of bench/otel-ab.ts's "SDK" server: the OpenTelemetry trace SDK registered
// with a span processor whose exporter drops every batch, so each request makes, ends and hands on
// a real span, and nothing leaves the process.
import { SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const exporter = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve(), forceFlush: () => Promise.resolve() };
new NodeTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] }).register();
