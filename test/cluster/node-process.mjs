// One Sluice node as its own process, for the cluster tests that SIGKILL a node (it loads dist/:
// build first). argv: redis URL, key prefix, node id, and a JSON object of further createServer
// options. Prints `READY <port>` once it listens; logs go to stderr; SIGTERM closes it cleanly.
import { createServer } from '../../dist/src/index.js';

const [redis, keyPrefix, nodeId, extra] = process.argv.slice(2);
const server = createServer({
  tools: new URL('./cluster-task-tools.mjs', import.meta.url),
  port: 0, workers: 1, poolThreads: 1, janitor: false, metrics: true,
  cluster: { redis, keyPrefix, nodeId },
  ...JSON.parse(extra ?? '{}'),
}, { log: (level, message) => { process.stderr.write(`${level} ${message}\n`); } });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
