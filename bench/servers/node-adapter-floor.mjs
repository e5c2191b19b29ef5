// The node:http adapter floor: Sluice's own node:http adapter (`listenNode` and its NodeExchange, as
// built: the header copy and repeat check, the connection count, the close listener, the body read,
// the flat response headers) with the raw echo (echo-answer.mjs) as its handler, and no protocol
// logic. Beside node-echo.mjs it shows what the adapter costs; beside Sluice on node:http, what the
// protocol path above it costs (bench/node-lines.ts).
import { listenNode } from '../../dist/src/transport/http/node/adapter.js';
import { echoAnswer } from './echo-answer.mjs';

const kHeaders = [['content-type', 'application/json']];
const listening = await listenNode({
  host: '127.0.0.1', port: 0, maxBodyBytes: 4 * 1024 * 1024, bodyTimeoutMs: 30_000, allHeaders: false,
  handler: (exchange) => exchange.readBody(4 * 1024 * 1024, (body) => {
    if (body === undefined || body === 'too_large') return;
    exchange.respond(200, kHeaders, echoAnswer(JSON.parse(body.toString())));
  }),
});
process.stdout.write(`READY ${listening.port}\n`);
process.on('SIGTERM', () => { listening.abort(); process.exit(0); });
