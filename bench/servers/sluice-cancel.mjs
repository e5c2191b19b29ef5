// S4: Sluice with one HTTP worker serving the wait_cancel tool, legacy sessions on.
import { createServer } from '../../dist/src/index.js';
const server = createServer({ tools: new URL('./sluice-cancel-tools.mjs', import.meta.url), port: 0, workers: 1, janitor: false }, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
