/**
 * What starting costs, against Node's own floor in the same run:
 *
 * - `sluice serve` (the demo tools: one pool thread per HTTP worker) with `--workers 1` and `2`,
 *   from spawn to its "serving MCP" line: wall time, and the process's CPU time (every thread, from
 *   /proc) at that moment. Its floor: a Node process that starts as many worker threads (2 per
 *   HTTP worker), each importing nothing, and prints a line once all are running.
 * - `sluice call <url> echo` against a running server (bench/servers/sluice-echo.mjs, on CPU 0),
 *   spawn to exit. Its floor: `node -e ''`.
 *
 * The measured process runs on CPU 1, so wall time is
 * close to CPU time; each rep runs every case once, in turn, so a drifting machine affects all alike.
 * Writes bench/results/startup.{md,json,svg}.
 *
 *   npm run bench:startup [-- --reps 5]
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { cpuSeconds, machineLine, pinned } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import { kRoot, mdTable, toJson, writeResults } from './lib/report.js';
import { kServers } from './http/wrk.js';
import { median, range } from './lib/stats.js';
import { svgBars } from './lib/svg.js';

const { reps } = benchArgs('Usage: node dist/bench/startup.js [options]\nWhat starting costs: sluice serve and sluice call, against Node\'s own floor.', {
  reps: { type: 'number', integer: true, default: 5, help: 'rounds of every case' },
});
const kSluice = join(kRoot, 'bin', 'sluice.js');

/** A process on CPU 1 that prints `marker` once ready: its wall time and CPU seconds then. */
async function untilReady(args: readonly string[], marker: string): Promise<{ ms: number; cpuMs: number }> {
  const [command, argv] = pinned(1, process.execPath, args);
  const started = performance.now();
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
  try {
    await new Promise<void>((resolve, reject) => {
      let seen = '';
      const onData = (chunk: Buffer): void => {
        seen += chunk.toString();
        if (seen.includes(marker)) resolve();
      };
      child.stdout!.on('data', onData);
      child.stderr!.on('data', onData);
      child.once('exit', (code) => reject(new Error(`${args.join(' ')} exited (${code}) before "${marker}": ${seen.slice(-500)}`)));
    });
    const ms = performance.now() - started;
    return { ms, cpuMs: cpuSeconds(child.pid!) * 1000 };
  } finally {
    await stopServer({ child });
  }
}

/** A process on `cpu` run to its exit: wall ms. */
async function toExit(args: readonly string[], cpu: number): Promise<number> {
  const [command, argv] = pinned(cpu, process.execPath, args);
  const started = performance.now();
  const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  let out = '';
  child.stdout!.on('data', (chunk: Buffer) => { out += chunk.toString(); });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0) throw new Error(`${args.join(' ')} exited ${code}: ${out.slice(-500)}`);
  return performance.now() - started;
}

/** Node's floor for a server of `workers` HTTP workers: as many empty worker threads (one pool thread each), all running. */
function floorArgs(threads: number): string[] {
  const script = `const { Worker } = require('node:worker_threads');
let online = 0;
for (let i = 0; i < ${threads}; i++) {
  const w = new Worker('require("node:worker_threads").parentPort.postMessage(1)', { eval: true });
  w.once('message', () => { if (++online === ${threads}) console.log('floor ready'); });
}
setInterval(() => {}, 1000);`;
  return ['-e', script];
}

interface Case {
  readonly name: string;
  readonly wall: number[];
  readonly cpu: number[];
}
const cases = new Map<string, Case>();
function record(name: string, wall: number, cpu = NaN): void {
  let c = cases.get(name);
  if (c === undefined) cases.set(name, c = { name, wall: [], cpu: [] });
  c.wall.push(wall);
  if (!Number.isNaN(cpu)) c.cpu.push(cpu);
}

// A server for `sluice call` to talk to (bench/servers/sluice-echo.mjs: one worker, echo), on CPU 0.
const server = await startServer([join(kServers, 'sluice-echo.mjs'), 'nosessions', '1'], 0);
try {
  const url = `http://127.0.0.1:${server.port}/mcp`;
  for (let rep = 0; rep < reps; rep++) {
    for (const workers of [1, 2]) {
      const floor = await untilReady(floorArgs(2 * workers), 'floor ready');
      record(`node: ${2 * workers} empty worker threads`, floor.ms, floor.cpuMs);
      const serve = await untilReady([kSluice, 'serve', '--port', '0', '--workers', String(workers)], 'serving MCP');
      record(`sluice serve --workers ${workers}`, serve.ms, serve.cpuMs);
    }
    record("node -e ''", await toExit(['-e', ''], 1));
    record('sluice call <url> echo', await toExit([kSluice, 'call', url, 'echo', '{"text":"hi"}'], 1));
  }
} finally {
  await stopServer(server);
}

const med = (name: string, pick: 'wall' | 'cpu'): number => median(cases.get(name)![pick]);
const span = (xs: number[]): string => {
  const r = range(xs);
  return `${r.min.toFixed(0)}–${r.max.toFixed(0)}`;
};
const ratios: [string, string, string][] = [
  ['sluice serve --workers 1', 'node: 2 empty worker threads', 'ready'],
  ['sluice serve --workers 2', 'node: 4 empty worker threads', 'ready'],
  ['sluice call <url> echo', "node -e ''", 'exit'],
];
const rows = [...cases.values()].map((c) => [
  c.name, span(c.wall), median(c.wall).toFixed(0), c.cpu.length === 0 ? '–' : span(c.cpu), c.cpu.length === 0 ? '–' : median(c.cpu).toFixed(0),
]);
const ratioRows = ratios.map(([a, b, what]) => [`${a} ÷ ${b}`, what, (med(a, 'wall') / med(b, 'wall')).toFixed(2), cases.get(a)!.cpu.length === 0 ? '–' : (med(a, 'cpu') / med(b, 'cpu')).toFixed(2)]);
const md = [
  '# What starting costs',
  '',
  `Each measured process on CPU 1 (\`taskset\`), ${reps} reps, every case once per rep in turn; \`sluice call\` talks to bench/servers/sluice-echo.mjs (one worker) on CPU 0. ${machineLine()}.`,
  '',
  'Command: `npm run bench:startup' + (reps === 5 ? '' : ` -- --reps ${reps}`) + '`',
  '',
  ...mdTable(['case', 'wall ms, min–max', 'median', 'CPU ms at ready, min–max', 'median'], 'lrrrr', rows),
  '',
  ...mdTable(['ratio (medians)', 'until', 'wall', 'CPU'], 'llrr', ratioRows),
  '',
].join('\n');
const svg = svgBars(`What starting costs (median wall ms, one CPU, node ${process.version})`, [...cases.values()].map((c) => ({ label: c.name, value: median(c.wall) })), 'ms');
const json = toJson({ node: process.version, reps, cases: [...cases.values()] });
for (const file of writeResults([['startup.md', md], ['startup.json', json], ['startup.svg', svg]])) console.log(`wrote ${file}`);
console.log(md);
