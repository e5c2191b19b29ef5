// npm run conformance: starts the fixture server with Sluice, then runs the official conformance suite
// under its own Node 22 (conformance/node_modules, never on the project's PATH) at both wires.
// The fixture server runs on the Node that runs this script (.ci/run runs it under Node 20, 22
// and 24), with whatever HTTP adapter that Node gets; the suite itself always runs on node22.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { createServer } from '../dist/src/index.js';

const here = fileURLToPath(new URL('.', import.meta.url));
const node22 = `${here}node_modules/.bin/node`;
const suite = `${here}node_modules/@modelcontextprotocol/conformance/dist/index.js`;
if (!existsSync(node22) || !existsSync(suite)) {
  const install = spawnSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: here, stdio: 'inherit' });
  if (install.status !== 0) process.exit(install.status ?? 1);
}
const only = process.argv.slice(2);
const server = createServer({ tools: new URL('../dist/conformance/fixture/everything.js', import.meta.url), port: 0, workers: 2 });
const { url } = await server.listen();
process.stderr.write(`conformance: fixture at ${url} on Node ${process.versions.node}: ${server.adapterDetail} (${server.workerThreadIds.length} HTTP worker threads)\n`);
let failed = false;
for (const requirements of only.length > 0 ? only : ['2025-11-25', '2026-07-28']) {
  const code = await new Promise((resolve) => {
    const child = spawn(node22, [suite, 'server', '--url', url, '--requirements', requirements, '-o', `${here}results/${requirements}`], { stdio: 'inherit' });
    child.on('exit', (c) => resolve(c ?? 1));
  });
  process.stderr.write(`conformance: ${requirements} ${code === 0 ? 'passed' : `FAILED (exit ${code})`}\n`);
  if (code !== 0) failed = true;
}
await server.close();
process.exit(failed ? 1 : 0);
