/**
 * `npm run bench:profile`: CPU profiles (`node --cpu-prof`) of the paths behind the performance targets (docs/benchmarks.md)
 * that are missed or close, summarised as their top frames in bench/results/profiles.md.
 *
 * - table lookups and insert+delete: `bench/registry.js --phase lookups|insert-delete`;
 * - cancel → observed, polling: `bench/registry.js --phase latency`;
 * - tools/call echo over HTTP at 2025-11-25 and 2026-07-28: the HTTP worker thread of
 *   bench/servers/sluice-echo.mjs under wrk (server on CPU 1, wrk on CPU 0), beside the profile
 *   kept in bench/results/profiles-before.md (issue 17's starting point) and beside the raw uWS
 *   echo (bench/servers/uws-echo.mjs: the floor any server on uWS pays for HTTP, JSON.parse and
 *   JSON.stringify).
 *
 * `--http-only` profiles only the HTTP worker and keeps the registry sections already in the
 * output file; `--out NAME` writes bench/results/NAME instead of profiles.md.
 *
 * Self time is where the samples landed; inclusive time counts a frame once per sample it is on
 * the stack of. "(idle)" in the HTTP worker is time spent outside JavaScript: in uWS's event loop,
 * the kernel's socket calls and waiting for the next request.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readdirSync, readFileSync, statSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { machineLine, pinned } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import { kRoot as root, mdTable, writeResults } from './lib/report.js';
import { scratchDir } from './lib/scratch.js';
const kTop = 12;
const args = benchArgs('Usage: node dist/bench/profile.js [options]\nCPU profiles (node --cpu-prof) of the paths behind the performance targets.', {
  'http-only': { type: 'flag', help: 'profile only the HTTP worker; keep the registry sections already in the output file' },
  node: { type: 'string', choices: ['22', '24'], help: 'the node:http path under that Node of .ci/node-versions instead (writes profiles-node<line>.md)' },
  out: { type: 'string', help: 'write bench/results/NAME instead of profiles.md' },
});
/**
 * `--node 22|24`: the node:http path instead: Sluice (`sluice-echo.mjs`, which serves on node:http
 * under that Node on this machine) and the raw node:http echo (`node-echo.mjs`) under the Node of
 * .ci/node-versions, written to bench/results/profiles-node<line>.md (registry phases skipped).
 */
const nodeLine = args.node;
const nodeBin = nodeLine === undefined ? undefined : join(root, '.ci', 'node-versions', 'node_modules', `node${nodeLine}`, 'bin', 'node');
const httpOnly = args['http-only'] || nodeLine !== undefined;
const outName = args.out ?? (nodeLine === undefined ? 'profiles.md' : `profiles-node${nodeLine}.md`);

interface CpuProfile {
  nodes: { id: number; callFrame: { functionName: string; url: string; lineNumber: number }; children?: number[] }[];
  samples: number[];
  timeDeltas: number[];
}

interface Frame { name: string; selfPct: number; totalPct: number }

/** Self and inclusive shares of the top frames of one profile. */
function topFrames(file: string): { frames: Frame[]; totalMs: number } {
  const p = JSON.parse(readFileSync(file, 'utf8')) as CpuProfile;
  const byId = new Map(p.nodes.map((n) => [n.id, n]));
  const parent = new Map<number, number>();
  for (const n of p.nodes) for (const c of n.children ?? []) parent.set(c, n.id);
  const label = (id: number): string => {
    const f = byId.get(id)!.callFrame;
    const file = f.url === '' ? '' : ` ${f.url.slice(f.url.lastIndexOf('/') + 1)}:${f.lineNumber + 1}`;
    return `${f.functionName === '' ? '(anonymous)' : f.functionName}${file}`;
  };
  const self = new Map<string, number>();
  const total = new Map<string, number>();
  let all = 0;
  p.samples.forEach((id, i) => {
    const dt = p.timeDeltas[i] ?? 0;
    all += dt;
    const own = label(id);
    self.set(own, (self.get(own) ?? 0) + dt);
    const seen = new Set<string>();
    for (let at: number | undefined = id; at !== undefined; at = parent.get(at)) {
      const name = label(at);
      if (name.startsWith('(root)') || seen.has(name)) continue;
      seen.add(name);
      total.set(name, (total.get(name) ?? 0) + dt);
    }
  });
  const frames = [...self.entries()].sort((a, b) => b[1] - a[1]).slice(0, kTop)
    .map(([name, t]) => ({ name, selfPct: (t / all) * 100, totalPct: ((total.get(name) ?? t) / all) * 100 }));
  return { frames, totalMs: all / 1000 };
}

function newestProfile(dir: string, pickLargest = false): string {
  const files = readdirSync(dir).filter((f) => f.endsWith('.cpuprofile')).map((f) => join(dir, f));
  if (files.length === 0) throw new Error(`no profile written in ${dir}`);
  // The HTTP worker thread's profile is the largest: it ran every request.
  return files.sort((a, b) => (pickLargest ? statSync(b).size - statSync(a).size : statSync(b).mtimeMs - statSync(a).mtimeMs))[0];
}

function profilePhase(phase: string): { file: string; output: string } {
  const dir = scratchDir(`sluice-prof-${phase}-`);
  const args = ['--cpu-prof', `--cpu-prof-dir=${dir}`, '--cpu-prof-interval', '100', join(root, 'dist', 'bench', 'registry.js'), '--phase', phase];
  const output = execFileSync(...pinned(1, process.execPath, args), { encoding: 'utf8' });
  return { file: newestProfile(dir), output };
}

type Era = 'legacy' | 'modern';

function echoRequest(era: Era): { body: string; headers: Record<string, string> } {
  const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } };
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' }, ...(era === 'modern' ? { _meta: meta } : {}) } });
  const headers: Record<string, string> = era === 'modern'
    ? { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' }
    : { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2025-11-25' };
  return { body, headers };
}

/** One server script under --cpu-prof while wrk -c32 loads it for 10 s: its busiest thread's profile. */
async function profileServer(script: string, era: Era): Promise<{ file: string; rps: number }> {
  const dir = scratchDir(`sluice-prof-http-${era}-`);
  // The raw uWS scripts have no SIGTERM handler, and a process killed by a signal writes no profile.
  const exitOnTerm = script.startsWith('uws-') ? ['--import', 'data:text/javascript,process.on("SIGTERM",()=>process.exit(0))'] : [];
  const args = ['--cpu-prof', `--cpu-prof-dir=${dir}`, ...exitOnTerm, join(root, 'bench', 'servers', script)];
  const server = await startServer(args, 1, nodeBin);
  const port = server.port;
  const { body, headers } = echoRequest(era);
  const lua = join(dir, 'req.lua');
  writeFileSync(lua, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\n${Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n')}\n`);
  // wrk, not `sluice bench`: the profile is of a saturated server (beside the raw uWS echo's at its
  // ceiling), which `sluice bench` cannot keep saturated from one core (wrk still costs less per request: about 13.5 µs of CPU against sluice bench's 14.6 at 53k req/s, bench/results/loadgen.md; near a ceiling every µs of the generator's core counts).
  const wrkArgs = ['-t1', '-c32', '-d10s', '-s', lua, `http://127.0.0.1:${port}/mcp`];
  const out = execFileSync(...pinned(0, 'wrk', wrkArgs), { encoding: 'utf8' });
  await stopServer(server); // the server closes cleanly, so every thread writes its profile
  return { file: newestProfile(dir, true), rps: Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN) };
}

interface Section { title: string; rps: string; rows: string[] }

/** The HTTP sections of an earlier profiles file (its `## tools/call echo` sections), by title. */
function earlierHttp(file: string): Map<string, Section> {
  const sections = new Map<string, Section>();
  if (!existsSync(file)) return sections;
  for (const part of readFileSync(file, 'utf8').split('\n## ').slice(1)) {
    const title = part.slice(0, part.indexOf('\n'));
    if (!title.startsWith('tools/call echo')) continue;
    const rps = /([\d]+) req\/s while profiled/.exec(part)?.[1] ?? '?';
    const rows = part.split('\n').filter((l) => l.startsWith('| `'));
    sections.set(title, { title, rps, rows });
  }
  return sections;
}

/** Before and after, top self frames side by side. */
function sideBySide(before: Section | undefined, afterRps: number, after: { frames: Frame[] }): string[] {
  if (before === undefined) return [];
  const n = Math.max(before.rows.length, after.frames.length);
  const lines = [
    `Before (bench/results/profiles-before.md): ${before.rps} req/s while profiled; now: ${afterRps.toFixed(0)} req/s.`, '',
    '| # | before: frame | self % | now: frame | self % |', '|---:|---|---:|---|---:|',
  ];
  for (let i = 0; i < n; i++) {
    const b = before.rows[i]?.split('|').map((c) => c.trim()) ?? [];
    const a = after.frames[i];
    lines.push(`| ${i + 1} | ${b[1] ?? ''} | ${b[2] ?? ''} | ${a === undefined ? '' : `\`${a.name}\``} | ${a === undefined ? '' : a.selfPct.toFixed(1)} |`);
  }
  return [...lines, ''];
}

function table(title: string, note: string, profile: { frames: Frame[]; totalMs: number }): string[] {
  return [
    `## ${title}`, '', note, '',
    ...mdTable(['frame', 'self %', 'inclusive %'], 'lrr', profile.frames.map((f) => [`\`${f.name}\``, f.selfPct.toFixed(1), f.totalPct.toFixed(1)])),
    '', `(${profile.totalMs.toFixed(0)} ms of samples)`, '',
  ];
}

async function main(): Promise<void> {
  const outFile = join(root, 'bench', 'results', outName);
  const lines = [
    '# CPU profiles of the paths behind the performance targets (docs/benchmarks.md)', '',
    `- Date: ${new Date().toISOString()}; ${machineLine()}`,
    '- Command: `npm run bench:profile` (`node --cpu-prof`, 100 µs sampling for the registry phases, 1 ms for the HTTP worker)',
    '- Issue 17 (HTTP hot path): the HTTP sections show each worker profile beside the one taken before the work',
    '  (bench/results/profiles-before.md, 2fcf0b4) and the raw uWS echo profiled the same way; targets, ratios',
    '  and what the remaining time is: bench/results/hot-path.md. These HTTP sections: `node dist/bench/profile.js --http-only`.', '',
  ];
  if (httpOnly) {
    // Keep the registry sections already there (another run's): only the HTTP sections are redone.
    const kept = existsSync(outFile) ? readFileSync(outFile, 'utf8').split('\n## ').slice(1).filter((p) => !p.startsWith('tools/call echo') && !p.startsWith('raw uWS echo')) : [];
    for (const part of kept) lines.push(`## ${part.trimEnd()}`, '');
  } else {
    // Issue 17's registry targets, one profile each (the memory one is a formula, not a profile).
    const phases = [
      ['registry', 'Registry track + untrack + clear (issue 17: ≤ 100 ns)'],
      ['lookups', 'Table lookups, 32 k keys (issue 17: ≥ 1.0× a Map)'],
      ['insert-delete', 'Table insert + delete (issue 17: ≥ 1.5× a Map)'],
      ['latency', 'Cancel → observed, polling (issue 17: ≤ 1 µs p50)'],
    ] as const;
    for (const [phase, title] of phases) {
      process.stderr.write(`profiling --phase ${phase}...\n`);
      const { file, output } = profilePhase(phase);
      const figures = output.split('\n').filter((l) => /M\/s|µs|ns/.test(l) && !l.startsWith('-') && !l.startsWith('phase')).slice(0, 6).map((l) => `    ${l.trim()}`);
      lines.push(...table(title, `\`node --cpu-prof dist/bench/registry.js --phase ${phase}\`; the phase printed:\n\n${figures.join('\n')}`, topFrames(file)));
    }
  }
  if (nodeLine !== undefined) {
    lines.length = 0;
    lines.push(`# CPU profiles of the node:http path on Node ${nodeLine} (issue 26)`, '', `- Date: ${new Date().toISOString()}; ${machineLine()}`,
      `- Command: \`node dist/bench/profile.js --node ${nodeLine}\` (\`node --cpu-prof\`, 1 ms sampling); server on CPU 1, wrk on CPU 0`,
      '- "(idle)" is time outside JavaScript: the event loop, socket syscalls and waiting for the next request.', '');
    for (const era of ['legacy', 'modern'] as const) {
      for (const [script, what] of [['sluice-echo.mjs', 'Sluice on node:http: the HTTP worker thread'], ['node-echo.mjs', 'raw node:http echo (the ceiling)']] as const) {
        process.stderr.write(`profiling ${script} on Node ${nodeLine}, ${era}...\n`);
        const { file, rps } = await profileServer(script, era);
        lines.push(...table(`${what}, ${era === 'modern' ? '2026-07-28' : '2025-11-25'} request`, `wrk -t1 -c32 -d10s against bench/servers/${script} under \`--cpu-prof\` on Node ${nodeLine}: ${rps.toFixed(0)} req/s while profiled.`, topFrames(file)));
      }
    }
  } else {
    const before = earlierHttp(join(root, 'bench', 'results', 'profiles-before.md'));
    for (const era of ['legacy', 'modern'] as const) {
      process.stderr.write(`profiling the HTTP worker, ${era}...\n`);
      const { file, rps } = await profileServer('sluice-echo.mjs', era);
      const title = `tools/call echo, ${era === 'modern' ? '2026-07-28' : '2025-11-25'}: the HTTP worker thread`;
      const profile = topFrames(file);
      lines.push(...table(title, `wrk -t1 -c32 -d10s against bench/servers/sluice-echo.mjs under \`--cpu-prof\`: ${rps.toFixed(0)} req/s while profiled.`, profile));
      lines.push(...sideBySide(before.get(title), rps, profile));
    }
    for (const era of ['legacy', 'modern'] as const) {
      process.stderr.write(`profiling the raw uWS echo, ${era} request...\n`);
      const { file, rps } = await profileServer('uws-echo.mjs', era);
      lines.push(...table(`raw uWS echo (the ceiling), ${era === 'modern' ? '2026-07-28' : '2025-11-25'} request`,
        `wrk -t1 -c32 -d10s against bench/servers/uws-echo.mjs under \`--cpu-prof\` (the same request as above): ${rps.toFixed(0)} req/s while profiled. What any server on uWS pays: HTTP, JSON.parse, JSON.stringify.`, topFrames(file)));
    }
  }
  writeResults([[outName, `${lines.join('\n')}\n`]]);
  process.stdout.write(`${lines.join('\n')}\n`);
}

await main();
