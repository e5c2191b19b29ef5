// The tasks bench: Sluice with two HTTP workers (a cancel can land on the other one), legacy
// sessions on, and a 1 ms poll interval so the poll pacing never limits the throughput measured.
import { createServer } from '../../dist/src/index.js';
const server = createServer({
  tools: new URL('./sluice-tasks-tools.mjs', import.meta.url), port: 0, workers: 2, janitor: false, exposeWorker: true,
  tasks: { limits: { pollIntervalMs: 1, maxTasksPerOwner: 1000 } },
}, { log: () => {} });
const { port } = await server.listen();
process.stdout.write(`READY ${port}\n`);
process.on('SIGTERM', async () => { await server.close(); process.exit(0); });
