// S1: Sluice with one HTTP worker serving an echo tool (argv[2]: 'sessions' to turn legacy sessions on).
import { createServer, defineTool } from '../../dist/src/index.js';
const server = createServer({
  tools: new URL('./sluice-tools.mjs', import.meta.url),
  port: 0, workers: 1, sessions: process.argv[2] === 'sessions', janitor: false,
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
void defineTool;
