// S3: Sluice with one HTTP worker and one pool thread serving the CPU tools.
import { createServer } from '../../dist/src/index.js';
const server = createServer({ tools: new URL('./sluice-cpu-tools.mjs', import.meta.url), port: 0, workers: 1, sessions: false, janitor: false, poolThreads: 1 }, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
