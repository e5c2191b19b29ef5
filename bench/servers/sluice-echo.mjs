// S1/S2/S7: Sluice serving an echo tool (argv[2]: 'sessions' to turn legacy sessions on; argv[3]: HTTP workers, default 1;
// argv[4]: a `tracing` module, for bench/otel-ab.ts).
// GET /metrics is on so S7 can read the requests each worker thread served (shared-memory counters).
import { createServer } from '../../dist/src/index.js';
const server = createServer({
  tools: new URL('./sluice-tools.mjs', import.meta.url),
  port: 0, workers: Number(process.argv[3] ?? 1), sessions: process.argv[2] === 'sessions', janitor: false, metrics: true,
  ...(process.argv[4] === undefined ? {} : { tracing: process.argv[4] }),
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
