// Soak server: two HTTP workers, metrics on, the test fixture tools (echo, block, ...).
import { createServer } from '../../dist/src/index.js';
const server = createServer({ tools: new URL('../../test/fixtures/server-tools.mjs', import.meta.url), port: 0, workers: 2, metrics: true, streamCancelTimeoutMs: 1000 }, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
