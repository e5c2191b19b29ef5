// S1 ceiling on node:http: a raw JSON-RPC echo (read the body, parse, build the result, stringify),
// no MCP rules; the node:http counterpart of uws-echo.mjs. argv[2]: HTTP threads (default 1); with 2
// or more, each worker thread listens on the same port through reusePort (Node >= 22.12), as
// Sluice's HTTP workers do.
import { createServer } from 'node:http';
import { isMainThread, parentPort, Worker, workerData } from 'node:worker_threads';

function serve(port, ready) {
  const server = createServer((req, res) => {
    const chunks = [];
    req.on('data', (c) => chunks.push(c));
    req.on('end', () => {
      const m = JSON.parse(Buffer.concat(chunks).toString());
      const body = JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: m.params.arguments.text }] } });
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
