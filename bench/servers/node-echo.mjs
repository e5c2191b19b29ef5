// S1 ceiling on node:http: a raw JSON-RPC echo (read the body, parse, build the result, stringify),
// no MCP rules; the node:http counterpart of uws-echo.mjs. argv[2]: HTTP threads (default 1); with 2
// or more, each worker thread listens on the same port through reusePort (Node >= 22.12), as
// Sluice's HTTP workers do.
// argv[3] (bench/otel-ab.ts's floor): a `tracing` module that registers an OpenTelemetry SDK; each
// request then gets the least a server following the MCP semantic conventions does: a SERVER span
// with Sluice's attributes for this request, the echo run with it active, and the span ended.
import { createServer } from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';
import { echoAnswer } from './echo-answer.mjs';

const traced = await tracedEcho(process.argv[3]);

/** `(message, run) => run()` inside a span, or undefined without a tracing module. */
async function tracedEcho(tracing) {
  if (tracing === undefined) return undefined;
  await import(tracing);
  const api = await import('@opentelemetry/api');
  const tracer = api.trace.getTracer('floor');
  return (m, run) => {
    const span = tracer.startSpan(`${m.method} ${m.params.name}`, {
      kind: api.SpanKind.SERVER,
      attributes: {
        'mcp.method.name': m.method, 'jsonrpc.request.id': String(m.id), 'mcp.protocol.version': '2025-11-25',
        'network.transport': 'tcp', 'network.protocol.name': 'http', 'gen_ai.tool.name': m.params.name, 'gen_ai.operation.name': 'execute_tool',
      },
    }, api.ROOT_CONTEXT);
    try {
      return api.context.with(api.trace.setSpan(api.ROOT_CONTEXT, span), run);
    } finally {
      span.end();
    }
  };
}

function serve(port, ready) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const m = JSON.parse(Buffer.concat(chunks).toString());
      const body = traced === undefined ? echoAnswer(m) : traced(m, () => echoAnswer(m));
      res.writeHead(200, ['content-type', 'application/json', 'content-length', String(Buffer.byteLength(body))]);
      res.end(body);
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen({ port, host: '127.0.0.1', reusePort: true }, () => ready(server.address().port));
}

const threads = Number(process.argv[2] ?? 1);
if (!isMainThread) {
  serve(workerData.port, (port) => parentPort.postMessage(port));
} else if (threads <= 1) {
  serve(0, (port) => process.stdout.write(`READY ${port}\n`));
} else {
  // The first thread picks the port; the others join it.
  const first = new Worker(new URL(import.meta.url), { workerData: { port: 0 }, argv: process.argv.slice(2) });
  const port = await new Promise((resolve) => first.once('message', resolve));
  await Promise.all(Array.from({ length: threads - 1 }, () => new Promise((resolve) => new Worker(new URL(import.meta.url), { workerData: { port }, argv: process.argv.slice(2) }).once('message', resolve))));
  process.stdout.write(`READY ${port}\n`);
}
process.on('SIGTERM', () => process.exit(0));
