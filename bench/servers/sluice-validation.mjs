// S8: Sluice (1 HTTP worker) serving the validation tools of sluice-validation-tools.mjs.
import { createServer } from '../../dist/src/index.js';
const server = createServer({
  tools: new URL('./sluice-validation-tools.mjs', import.meta.url),
  port: 0, workers: 1, sessions: false, janitor: false,
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
