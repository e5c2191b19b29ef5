// The cluster bench's node: echo and wait_cancel (S4's spinning tool), legacy sessions on, one HTTP
// worker. argv[2]: a redis:// URL for cluster mode, or '-' for a node on its own; argv[3]: node id.
import { createServer } from '../../dist/src/index.js';

const redis = process.argv[2];
const server = createServer({
  tools: new URL('./sluice-cluster-tools.mjs', import.meta.url),
  port: 0, workers: 1, sessions: true, janitor: false,
  ...(redis !== undefined && redis !== '-' ? { cluster: { redis, nodeId: process.argv[3] ?? undefined } } : {}),
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
