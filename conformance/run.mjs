// npm run conformance: starts the fixture server with Sluice, then runs the official conformance suite
// under its own Node 22 (conformance/node_modules, never on the project's PATH) at both wires.
// The fixture server runs on the Node that runs this script (.ci/run runs it under Node 20, 22
// and 24), with whatever HTTP adapter that Node gets; the suite itself always runs on node22.
// Stricter than the suite's exit code: every check of every scenario must pass, scored or not
// (the suite does not score extension and pending scenarios); only checks the suite itself marks
// SKIPPED (today tasks-status-notifications) are exempt.
import { spawnSync, spawn } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, rmSync } from 'node:fs';
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
// Both wires at once against the one fixture (each scenario makes its own sessions and tasks): a
// run mostly waits on the suite's own steps (16 s one after the other, 13 s side by side here).
// Each run's output is held and printed whole, in order, so the two never interleave.
const runs = await Promise.all((only.length > 0 ? only : ['2025-11-25', '2026-07-28']).map(async (requirements) => {
  const out = `${here}results/${requirements}`;
  rmSync(out, { recursive: true, force: true }); // this run's results only
  const output = [];
  const code = await new Promise((resolve) => {
    const child = spawn(node22, [suite, 'server', '--url', url, '--requirements', requirements, '-o', out], { stdio: ['ignore', 'pipe', 'pipe'] });
    child.stdout.on('data', (chunk) => output.push(chunk));
    child.stderr.on('data', (chunk) => output.push(chunk));
    child.on('close', (c) => resolve(c ?? 1));
  });
  return { requirements, out, code, output: Buffer.concat(output) };
}));
let failed = false;
for (const { requirements, out, code, output } of runs) {
  process.stdout.write(output);
  const { scenarios, checks, failures, skipped } = readChecks(out);
  for (const f of failures) process.stderr.write(`conformance: ${requirements} FAILED check ${f}\n`);
  const ok = code === 0 && failures.length === 0 && scenarios > 0;
  process.stderr.write(`conformance: ${requirements} ${ok ? 'passed' : `FAILED (exit ${code})`}: ${scenarios} scenarios, ${checks} checks, ${failures.length} failed, ${skipped.length} skipped by the suite${skipped.length > 0 ? ` (${skipped.join(', ')})` : ''}\n`);
  if (!ok) failed = true;
}
await server.close();

/** Every check the suite wrote for one run: how many, and which failed or were skipped by the suite. */
function readChecks(dir) {
  let scenarios = 0;
  let checks = 0;
  const failures = [];
  const skipped = [];
  for (const entry of existsSync(dir) ? readdirSync(dir) : []) {
    const file = `${dir}/${entry}/checks.json`;
    if (!existsSync(file)) continue;
    scenarios++;
    const scenario = entry.replace(/^server-/, '').replace(/-\d{4}-\d\d-\d\dT.*$/, '');
    for (const check of JSON.parse(readFileSync(file, 'utf8'))) {
      checks++;
      if (check.status === 'FAILURE') failures.push(`${scenario}/${check.id}: ${check.errorMessage ?? ''}`);
      else if (check.status === 'SKIPPED') skipped.push(`${scenario}/${check.id}`);
    }
  }
  return { scenarios, checks, failures, skipped };
}
process.exit(failed ? 1 : 0);
