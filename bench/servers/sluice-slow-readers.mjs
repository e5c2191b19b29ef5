// Slow-reader soak server: Sluice with two HTTP workers (SO_REUSEPORT; the bench pins the whole
// process to CPU 1), legacy sessions on (the default), GET /metrics on, serving echo and flood.
import { createServer } from '../../dist/src/index.js';
const server = createServer({
  tools: new URL('./sluice-slow-readers-tools.mjs', import.meta.url),
  port: 0, workers: 2, metrics: true, janitor: false, streamCancelTimeoutMs: 1000,
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
