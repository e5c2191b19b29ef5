// The `tracing` module of bench/otel-ab.ts's "SDK" server: what `new NodeSDK({ traceExporter })`
// sets up for traces (a NodeTracerProvider, so the AsyncLocalStorage context manager and the W3C
// propagators, and the exporter behind a BatchSpanProcessor), with an exporter that drops every
// batch: each request makes, ends and hands on a real span, and nothing leaves the process.
// `?processor=simple` puts a SimpleSpanProcessor there instead (a development setup: one export,
// and its promises, per span).
import { BatchSpanProcessor, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { NodeTracerProvider } from '@opentelemetry/sdk-trace-node';

const exporter = { export: (_spans, done) => done({ code: 0 }), shutdown: () => Promise.resolve(), forceFlush: () => Promise.resolve() };
const simple = new URL(import.meta.url).searchParams.get('processor') === 'simple';
new NodeTracerProvider({ spanProcessors: [simple ? new SimpleSpanProcessor(exporter) : new BatchSpanProcessor(exporter)] }).register();
