/**
 * S1 on the Node versions people run (22 and 24), each against its own ceiling in the same run:
 *
 * - node:http, on this machine: Sluice (`sluice-echo.mjs`, 1 and 2 HTTP workers sharing the port
 *   through reusePort) ÷ the raw node:http JSON-RPC echo (`node-echo.mjs`, 1 and 2 threads), at both
 *   eras, from a sync and an async handler. Target: >= 0.80. Beside it, with no target, the adapter
 *   floor (`node-adapter-floor.mjs`: Sluice's node:http adapter with the raw echo as its handler) ÷
 *   the same raw echo: what the adapter costs, apart from the protocol path.
 * - uWS, inside the Debian 13 root of `.ci/current-distro` (glibc 2.41, where the btc-vision builds
 *   for ABI 127/137 load): Sluice (1 HTTP worker) ÷ the raw uWS echo (`uws-echo.mjs`) on that Node.
 *   Target: >= 0.75. Beside it, with no target, the hardened floor (`uws-floor.mjs`) ÷ the same raw
 *   echo: how far the reads any hardened server makes put it below the raw echo, in the same run.
 *
 * Every server is pinned to CPU 1 and wrk -t1 to CPU 0; the servers of one Node line start once and
 * stay up. Each Sluice run sits between two runs of its own ceiling, and its ratio is to their mean
 * (see `schedule`), so the machine drifting between runs favours neither. Ratios are per rep
 * (req/s, and server CPU per request), with min–max and median. Writes
 * bench/results/node-lines.{md,json,svg} (or `--out NAME`).
 *
 *   npm run build && node dist/bench/node-lines.js [--reps 3] [--seconds 4] [--connections 32] [--lines 22,24] [--no-uws]
 */
import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { send } from './lib/http-client.js';
import { benchArgs } from './lib/args.js';
import { machineLine } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import type { Running } from './lib/process.js';
import { kRoot, toJson, writeResults } from './lib/report.js';
import { median, range } from './lib/stats.js';
import { svgHead, xmlEscape } from './lib/svg.js';
import { asyncOf, checkEcho, legacyEcho, modernEcho } from './http/contenders.js';
import type { Endpoint } from './http/wrk.js';
import { cpuPerRequest, ensureTools, kServers, wrk } from './http/wrk.js';
import { bracketed } from './lib/bracket.js';
import type { Sample } from './lib/bracket.js';

const args = benchArgs('Usage: node dist/bench/node-lines.js [options]\nSluice against its own ceilings on Node 22/24: node:http on this host, uWS in the Debian 13 root.', {
  reps: { type: 'number', integer: true, default: 3, help: 'rounds of every run' },
  seconds: { type: 'number', default: 4, help: 'seconds per wrk run' },
  connections: { type: 'number', integer: true, default: 32, help: 'wrk connections' },
  lines: { type: 'string', default: '22,24', help: 'the Node lines to run, comma-separated (22, 24)', check: (v) => (v.split(',').every((l) => l === '22' || l === '24') ? undefined : 'takes 22 and 24') },
  'no-uws': { type: 'flag', help: 'skip the uWS rows (no Debian 13 root needed)' },
  out: { type: 'string', default: 'node-lines', help: 'results under bench/results/NAME.{md,json,svg}' },
});
const { reps, seconds, connections, out } = args;
const lines = args.lines.split(',').map(Number);
const withUws = !args['no-uws'];

const kNodeBin = (line: number): string => join(kRoot, '.ci', 'node-versions', 'node_modules', `node${line}`, 'bin', 'node');
const kCurrentDistro = join(kRoot, '.ci', 'current-distro');

type ServerKey = 'rawNode1' | 'rawNode2' | 'floorNode1' | 'sluiceNode1' | 'sluiceNode2' | 'rawUws' | 'floorUws' | 'sluiceUws';
interface ServerSpec { key: ServerKey; script: string; args: string[]; uws: boolean; label: string }
const kServerSpecs: readonly ServerSpec[] = [
  { key: 'rawNode1', script: 'node-echo.mjs', args: ['1'], uws: false, label: 'raw node:http echo, 1 thread' },
  { key: 'rawNode2', script: 'node-echo.mjs', args: ['2'], uws: false, label: 'raw node:http echo, 2 threads (reusePort)' },
  { key: 'floorNode1', script: 'node-adapter-floor.mjs', args: [], uws: false, label: "node:http adapter floor: Sluice's node:http adapter with the raw echo as its handler" },
  { key: 'sluiceNode1', script: 'sluice-echo.mjs', args: ['nosessions', '1'], uws: false, label: 'Sluice, node:http, 1 HTTP worker' },
  { key: 'sluiceNode2', script: 'sluice-echo.mjs', args: ['nosessions', '2'], uws: false, label: 'Sluice, node:http, 2 HTTP workers (reusePort)' },
  { key: 'rawUws', script: 'uws-echo.mjs', args: [], uws: true, label: 'raw uWS echo (btc-vision build, Debian 13 root)' },
  { key: 'floorUws', script: 'uws-floor.mjs', args: [], uws: true, label: 'hardened uWS floor (Debian 13 root)' },
  { key: 'sluiceUws', script: 'sluice-echo.mjs', args: ['nosessions', '1'], uws: true, label: 'Sluice, uWS, 1 HTTP worker (Debian 13 root)' },
];

const legacy = legacyEcho();
const modern = modernEcho();
/** The raw echoes need no MCP headers; the same bodies keep the work per request comparable. */
const raw = (e: Endpoint): Endpoint => ({ ...e, headers: { 'content-type': 'application/json' } });
interface RunSpec { key: string; server: ServerKey; endpoint: Endpoint; label: string }
const kRunSpecs: readonly RunSpec[] = [
  { key: 'rawNode1.legacy', server: 'rawNode1', endpoint: raw(legacy), label: 'raw node:http ×1, legacy body' },
  { key: 'rawNode1.modern', server: 'rawNode1', endpoint: raw(modern), label: 'raw node:http ×1, 2026-07-28 body' },
  { key: 'floorNode1.legacy', server: 'floorNode1', endpoint: raw(legacy), label: 'node:http adapter floor, legacy body' },
  { key: 'floorNode1.modern', server: 'floorNode1', endpoint: raw(modern), label: 'node:http adapter floor, 2026-07-28 body' },
  { key: 'sluiceNode1.legacy', server: 'sluiceNode1', endpoint: legacy, label: 'Sluice node:http ×1, legacy sync' },
  { key: 'sluiceNode1.legacyAsync', server: 'sluiceNode1', endpoint: asyncOf(legacy), label: 'Sluice node:http ×1, legacy async' },
  { key: 'sluiceNode1.modern', server: 'sluiceNode1', endpoint: modern, label: 'Sluice node:http ×1, 2026-07-28 sync' },
  { key: 'sluiceNode1.modernAsync', server: 'sluiceNode1', endpoint: asyncOf(modern), label: 'Sluice node:http ×1, 2026-07-28 async' },
  { key: 'rawNode2.legacy', server: 'rawNode2', endpoint: raw(legacy), label: 'raw node:http ×2, legacy body' },
  { key: 'rawNode2.modern', server: 'rawNode2', endpoint: raw(modern), label: 'raw node:http ×2, 2026-07-28 body' },
  { key: 'sluiceNode2.legacy', server: 'sluiceNode2', endpoint: legacy, label: 'Sluice node:http ×2, legacy sync' },
  { key: 'sluiceNode2.modern', server: 'sluiceNode2', endpoint: modern, label: 'Sluice node:http ×2, 2026-07-28 sync' },
  { key: 'rawUws.legacy', server: 'rawUws', endpoint: raw(legacy), label: 'raw uWS, legacy body' },
  { key: 'rawUws.modern', server: 'rawUws', endpoint: raw(modern), label: 'raw uWS, 2026-07-28 body' },
  { key: 'floorUws.legacy', server: 'floorUws', endpoint: raw(legacy), label: 'hardened uWS floor, legacy body' },
  { key: 'floorUws.modern', server: 'floorUws', endpoint: raw(modern), label: 'hardened uWS floor, 2026-07-28 body' },
  { key: 'sluiceUws.legacy', server: 'sluiceUws', endpoint: legacy, label: 'Sluice uWS ×1, legacy sync' },
  { key: 'sluiceUws.legacyAsync', server: 'sluiceUws', endpoint: asyncOf(legacy), label: 'Sluice uWS ×1, legacy async' },
  { key: 'sluiceUws.modern', server: 'sluiceUws', endpoint: modern, label: 'Sluice uWS ×1, 2026-07-28 sync' },
  { key: 'sluiceUws.modernAsync', server: 'sluiceUws', endpoint: asyncOf(modern), label: 'Sluice uWS ×1, 2026-07-28 async' },
];

/** `target` undefined: a floor, shown beside the targets it bounds (what the least a hardened server does reaches). */
interface RatioSpec { name: string; of: string; over: string; target: number | undefined }
const kRatioSpecs: readonly RatioSpec[] = [
  { name: 'node:http ×1: adapter floor, legacy ÷ raw', of: 'floorNode1.legacy', over: 'rawNode1.legacy', target: undefined },
  { name: 'node:http ×1: adapter floor, 2026-07-28 ÷ raw', of: 'floorNode1.modern', over: 'rawNode1.modern', target: undefined },
  { name: 'node:http ×1: legacy sync ÷ raw', of: 'sluiceNode1.legacy', over: 'rawNode1.legacy', target: 0.8 },
  { name: 'node:http ×1: legacy async ÷ raw', of: 'sluiceNode1.legacyAsync', over: 'rawNode1.legacy', target: 0.8 },
  { name: 'node:http ×1: 2026-07-28 sync ÷ raw', of: 'sluiceNode1.modern', over: 'rawNode1.modern', target: 0.8 },
  { name: 'node:http ×1: 2026-07-28 async ÷ raw', of: 'sluiceNode1.modernAsync', over: 'rawNode1.modern', target: 0.8 },
  { name: 'node:http ×2: legacy sync ÷ raw ×2', of: 'sluiceNode2.legacy', over: 'rawNode2.legacy', target: 0.8 },
  { name: 'node:http ×2: 2026-07-28 sync ÷ raw ×2', of: 'sluiceNode2.modern', over: 'rawNode2.modern', target: 0.8 },
  { name: 'uWS ×1: hardened floor, legacy ÷ raw uWS', of: 'floorUws.legacy', over: 'rawUws.legacy', target: undefined },
  { name: 'uWS ×1: legacy sync ÷ raw uWS', of: 'sluiceUws.legacy', over: 'rawUws.legacy', target: 0.75 },
  { name: 'uWS ×1: legacy async ÷ raw uWS', of: 'sluiceUws.legacyAsync', over: 'rawUws.legacy', target: 0.75 },
  { name: 'uWS ×1: hardened floor, 2026-07-28 ÷ raw uWS', of: 'floorUws.modern', over: 'rawUws.modern', target: undefined },
  { name: 'uWS ×1: 2026-07-28 sync ÷ raw uWS', of: 'sluiceUws.modern', over: 'rawUws.modern', target: 0.75 },
  { name: 'uWS ×1: 2026-07-28 async ÷ raw uWS', of: 'sluiceUws.modernAsync', over: 'rawUws.modern', target: 0.75 },
];

/** The process serving inside the chroot: the wrapper's only descendant that is not a shell. */
function servingPid(pid: number): number {
  for (let depth = 0; depth < 6; depth++) {
    const comm = readFileSync(`/proc/${pid}/comm`, 'utf8').trim();
    if (comm === 'node' || comm.startsWith('node')) return pid;
    const children = readFileSync(`/proc/${pid}/task/${pid}/children`, 'utf8').trim().split(/\s+/).filter((x) => x !== '').map(Number);
    if (children.length === 0) break;
    pid = children[children.length - 1]!;
  }
  return pid;
}

async function startOn(line: number, spec: ServerSpec): Promise<Running> {
  const script = join(kServers, spec.script);
  if (!spec.uws) return startServer([script, ...spec.args], 1, kNodeBin(line));
  // taskset pins the wrapper, and so everything it starts inside the root.
  const s = await startServer([String(line), 'node', script, ...spec.args], 1, kCurrentDistro);
  return { ...s, pid: servingPid(s.pid) };
}

/** Which HTTP stack answered: uWS marks every response with a `uWebSockets` header. */
function checkStack(spec: ServerSpec, headers: Record<string, string | string[] | undefined>): void {
  const uws = headers.uwebsockets !== undefined;
  if (uws !== spec.uws) throw new Error(`${spec.label}: answered by ${uws ? 'uWebSockets.js' : 'node:http'}, expected ${spec.uws ? 'uWS' : 'node:http'}`);
}

interface LineResult {
  line: number; version: string; rps: Record<string, number[]>; cpu: Record<string, number[]>;
  /** Per ratio (its `of` key), per rep: Sluice ÷ the mean of the raw runs just before and after it. */
  ratioRps: Record<string, number[]>; ratioCpu: Record<string, number[]>;
}

/**
 * One rep's schedule: the Sluice runs grouped by their ceiling, each group measured `bracketed`
 * (raw, Sluice, raw, Sluice, raw: this VM's speed drifts by up to 2× within a minute, a neighbour's
 * load that /proc/stat does not show as steal). The groups' order rotates per rep, and the Sluice
 * runs inside a group alternate, so no run is always first.
 */
function schedule(rep: number, ratios: readonly RatioSpec[]): { over: string; of: string[] }[] {
  const groups: { over: string; of: string[] }[] = [];
  for (const q of ratios) {
    const g = groups.find((x) => x.over === q.over);
    if (g === undefined) groups.push({ over: q.over, of: [q.of] });
    else g.of.push(q.of);
  }
  const rotated = groups.map((_, i) => groups[(i + rep) % groups.length]!);
  return rotated.map((g) => ({ over: g.over, of: rep % 2 === 0 ? g.of : [...g.of].reverse() }));
}

async function measureLine(line: number): Promise<LineResult> {
  const version = execFileSync(kNodeBin(line), ['--version'], { encoding: 'utf8' }).trim();
  const specs = kServerSpecs.filter((s) => withUws || !s.uws);
  const runs = kRunSpecs.filter((r) => specs.some((s) => s.key === r.server));
  const ratios = kRatioSpecs.filter((q) => runs.some((r) => r.key === q.of) && runs.some((r) => r.key === q.over));
  const servers = new Map<ServerKey, Running>();
  const rps: Record<string, number[]> = {};
  const cpu: Record<string, number[]> = {};
  const ratioRps: Record<string, number[]> = {};
  const ratioCpu: Record<string, number[]> = {};
  const measure = async (rep: number, key: string): Promise<Sample> => {
    const r = runs.find((x) => x.key === key)!;
    const s = servers.get(r.server)!;
    // wrk, not `sluice bench`: each adapter against its own raw ceiling, which needs the
    // strongest generator on the other core (wrk still costs less per request: about 13.5 µs of CPU against sluice bench's 14.6 at 53k req/s, bench/results/loadgen.md; near a ceiling every µs of the generator's core counts).
    const w = await wrk(s.port, r.endpoint, connections, seconds, s.pid);
    if (w.non2xx > 0) throw new Error(`Node ${line} ${r.label}: ${w.non2xx} non-2xx responses`);
    const perRequest = cpuPerRequest(w);
    rps[key]!.push(w.rps);
    cpu[key]!.push(perRequest);
    process.stderr.write(`Node ${line} rep ${rep + 1} ${r.label}: ${w.rps.toFixed(0)} req/s, ${perRequest.toFixed(1)} CPU µs/req\n`);
    return { rps: w.rps, cpu: perRequest };
  };
  try {
    for (const spec of specs) servers.set(spec.key, await startOn(line, spec));
    for (const r of runs) {
      const s = servers.get(r.server)!;
      const spec = specs.find((x) => x.key === r.server)!;
      const sample = await send(s.port, r.endpoint);
      checkEcho(r.label, sample);
      checkStack(spec, sample.headers);
      await wrk(s.port, r.endpoint, connections, 2, s.pid); // warm-up (JIT)
      rps[r.key] = [];
      cpu[r.key] = [];
    }
    for (const q of ratios) {
      ratioRps[q.of] = [];
      ratioCpu[q.of] = [];
    }
    for (let rep = 0; rep < reps; rep++) {
      for (const group of schedule(rep, ratios)) {
        for (const [of, ratio] of await bracketed(group.over, group.of, (key) => measure(rep, key))) {
          ratioRps[of]!.push(ratio.rps);
          ratioCpu[of]!.push(ratio.cpu);
        }
      }
    }
  } finally {
    for (const s of servers.values()) await stopServer(s);
  }
  return { line, version, rps, cpu, ratioRps, ratioCpu };
}

ensureTools();
const results: LineResult[] = [];
for (const line of lines) results.push(await measureLine(line));

const f = (x: number, d = 2): string => (Number.isFinite(x) ? x.toFixed(d) : '–');
interface RatioRow { line: number; name: string; target: number | undefined; rps: number[]; cpu: number[]; met: boolean }
/** A row's status: a floor has no target to meet. */
const statusOf = (q: RatioRow): 'met' | 'missed' | 'floor' => (q.target === undefined ? 'floor' : q.met ? 'met' : 'missed');
const kStatusFill = { met: '#4a8', missed: '#d64', floor: '#999' } as const;
const ratioRows: RatioRow[] = [];
for (const res of results) {
  for (const q of kRatioSpecs) {
    const r = res.ratioRps[q.of];
    const c = res.ratioCpu[q.of];
    if (r === undefined || c === undefined) continue;
    ratioRows.push({ line: res.line, name: q.name, target: q.target, rps: r, cpu: c, met: q.target !== undefined && median(r) >= q.target });
  }
}

const md = [
  '# S1 on Node 22 and 24: Sluice ÷ its own ceiling', '',
  `Servers pinned to CPU 1, wrk -t1 to CPU 0, c = ${connections}, ${seconds} s per run, ${reps} reps. Each Sluice run is measured between two runs of its own ceiling (raw, Sluice, raw, Sluice, raw per ceiling; groups rotated per rep), and its ratio is to the mean of those two: this VM's speed drifts by up to 2× within a minute. node:http rows on this machine; uWS rows inside the Debian 13 root of \`.ci/current-distro\` (the btc-vision build for that ABI). ${machineLine()}`, '',
  `Command: \`node dist/bench/node-lines.js --reps ${reps} --seconds ${seconds} --connections ${connections} --lines ${lines.join(',')}${withUws ? '' : ' --no-uws'}\``, '',
  '## Targets', '',
  '| Node | ratio | target | req/s ratio per rep (÷ the raw runs beside it) | min–max | median | CPU/req ratio median | status |', '|---|---|---:|---|---|---:|---:|---|',
  ...ratioRows.map((q) => {
    const r = range(q.rps);
    const target = q.target === undefined ? '—' : `≥ ${q.target}`;
    return `| ${q.line} | ${q.name} | ${target} | ${q.rps.map((x) => f(x, 3)).join(', ')} | ${f(r.min, 2)}–${f(r.max, 2)} | ${f(median(q.rps), 2)} | ${f(median(q.cpu), 2)} | ${statusOf(q)} |`;
  }), '',
  '(CPU/req ratio: the raw server\'s CPU per request ÷ Sluice\'s, so 1 = as cheap. A "floor" row is not a target: it shows, in the same run, how far below the raw echo a server is with only what it measures and no protocol logic. The node:http adapter floor, `node-adapter-floor.mjs`, is Sluice\'s own node:http adapter (header copy and repeat check, connection count, close listener, body read, flat response headers) with the raw echo as its handler: what is left between it and Sluice is the protocol path. The hardened uWS floor, `uws-floor.mjs`, is the raw uWS echo plus the reads every request of a server that keeps its hardening needs (method, URL, every header into a Map, the peer address as Sluice reads it, a UTF-8 check).)', '',
  '## Runs', '',
];
for (const res of results) {
  md.push(`### Node ${res.version}`, '', '| run | req/s per run, in order (a ceiling runs beside each Sluice run) | median | CPU µs/req median |', '|---|---|---:|---:|');
  for (const r of kRunSpecs) {
    const x = res.rps[r.key];
    if (x === undefined) continue;
    md.push(`| ${r.label} | ${x.map((v) => f(v, 0)).join(', ')} | ${f(median(x), 0)} | ${f(median(res.cpu[r.key]!), 1)} |`);
  }
  md.push('');
}

/** One bar per ratio and Node line (median), with the target drawn as a tick. */
function chart(): string {
  const rowH = 18;
  const width = 720;
  const left = 330;
  const scale = (x: number) => left + Math.min(1.2, x) / 1.2 * (width - left - 40);
  const parts = svgHead(width, 40 + ratioRows.length * rowH + 20, '#fff', 11);
  parts.push(`<text x="10" y="20" font-weight="bold">Sluice ÷ its own ceiling, median of ${reps} reps (req/s)</text>`);
  ratioRows.forEach((q, i) => {
    const y = 36 + i * rowH;
    const m = median(q.rps);
    parts.push(`<text x="10" y="${y + 12}">Node ${q.line}: ${xmlEscape(q.name)}</text>`);
    parts.push(`<rect x="${left}" y="${y + 2}" width="${scale(m) - left}" height="${rowH - 6}" fill="${kStatusFill[statusOf(q)]}"/>`);
    if (q.target !== undefined) parts.push(`<line x1="${scale(q.target)}" x2="${scale(q.target)}" y1="${y}" y2="${y + rowH - 2}" stroke="#000"/>`);
    parts.push(`<text x="${scale(m) + 4}" y="${y + 12}">${f(m, 2)}</text>`);
  });
  parts.push('</svg>');
  return parts.join('\n');
}

console.log(writeResults([[`${out}.md`, md.join('\n')], [`${out}.json`, toJson({ reps, seconds, connections, results, ratios: ratioRows })], [`${out}.svg`, chart()]]).join('\n'));
console.log(md.join('\n'));
