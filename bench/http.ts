/**
 * `npm run bench` (full) and `npm run bench:smoke` (short, for CI): HTTP scenarios of issue 6.
 *
 * Each server runs in its own process pinned to CPU 1, the load generator (wrk) to CPU 0, as
 * perf-anchors §4 recommends for a 2-core box; servers are interleaved within each repeat, and
 * every ratio compares figures from the same run. Sample responses are checked for a correct
 * JSON-RPC result before a server is measured. Results go to bench/results/.
 *
 * Scenarios: S0 calibration, S1 tools/call echo, S2 session per call, S3 CPU tools inline vs pool,
 * S4 cancel → observed over HTTP, S6 open-loop soak (h2load), S7 two HTTP workers on both cores;
 * S5 (the table) is `npm run bench:registry`, whose latest results are folded into the report.
 *
 * `--only S1` (or `--only S1,S4`…) runs only those scenarios; its report is written apart
 * (bench/results/only-<scenarios>-*), never over latest.md. S1 has a row for Sluice on Node 22 over
 * node:http with 2 HTTP workers sharing the port through reusePort (the Node that people on 22/24
 * get, where uWS has no binding here); that Node comes from .ci/node-versions (installed if missing).
 */
import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pin, pinned, startServer, stopServer } from './process.js';
import type { Running } from './process.js';

const smoke = process.argv.includes('--smoke');
/** `--only S1[,S4…]`: just these scenarios (figures for one part without the 15-minute full run). */
const onlyArg = process.argv.indexOf('--only');
const only = onlyArg === -1 ? undefined : new Set((process.argv[onlyArg + 1] ?? '').split(',').map((x) => x.trim().toUpperCase()).filter((x) => x !== ''));
const runs = (scenario: string) => only === undefined || only.has(scenario);
/** A short full run to check the harness itself (not for figures). */
const quick = process.argv.includes('--quick');
const root = fileURLToPath(new URL('../../', import.meta.url));
const servers = join(root, 'bench', 'servers');
const results = join(root, 'bench', 'results');
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-'));

function ensureTools(): void {
  const packages: Record<string, string> = { wrk: 'wrk', h2load: 'nghttp2-client' };
  const missing = Object.keys(packages).filter((t) => { try { execFileSync('which', [t]); return false; } catch { return true; } });
  if (missing.length === 0) return;
  process.stderr.write(`bench: installing ${missing.map((t) => packages[t]).join(', ')} (Debian packages)\n`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing.map((t) => packages[t])], { stdio: 'ignore' });
}

/** A bench server script from bench/servers, pinned to CPU 1 unless `pinnedServer` is false. */
function start(script: string, args: string[] = [], pinnedServer = true): Promise<Running> {
  return startServer([join(servers, script), ...args], pinnedServer ? 1 : undefined);
}

/** The Node 22 of .ci/node-versions (npm ci there when it is missing). */
function node22(): string {
  const dir = join(root, '.ci', 'node-versions');
  const bin = join(dir, 'node_modules', 'node22', 'bin', 'node');
  if (!existsSync(bin)) {
    process.stderr.write('bench: installing Node 22 into .ci/node-versions (npm ci)\n');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  return bin;
}

/** `start`, under another Node binary (same READY protocol, same pinning as bench/process.ts). */
async function startOn(nodeBin: string, script: string, args: string[] = []): Promise<Running> {
  const child = spawn(...pinned(1, nodeBin, [join(servers, script), ...args]), { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${nodeBin} ${script} exited (${code}) before it was ready`)));
  });
  return { child, port, pid: child.pid! };
}

const stop = stopServer;

/** utime + stime of a process (and its threads), in seconds. */
function cpuSeconds(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  return (Number(fields[11]) + Number(fields[12])) / 100;
}

/** Busy fraction of one CPU between two readings of /proc/stat. */
function cpuTimes(cpu: number): [number, number] {
  const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith(`cpu${cpu} `))!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + v[4];
  const total = v.reduce((a, b) => a + b, 0);
  return [total - idle, total];
}

interface Endpoint { path: string; method: 'GET' | 'POST'; body?: string; headers: Record<string, string> }

function post(port: number, e: Endpoint, agent?: Agent): Promise<{ status: number; body: string; headers: Record<string, string | string[] | undefined> }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: e.path, method: e.method, headers: e.headers, agent: agent ?? false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
    });
    req.on('error', reject);
    req.end(e.body);
  });
}

interface WrkResult { rps: number; p50ms: number; p99ms: number; non2xx: number; serverCpu: number; generatorBusy: number; requests: number }

function parseMs(text: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(text);
  if (m === null) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

async function wrk(port: number, e: Endpoint, connections: number, seconds: number, serverPid: number, generatorPinned = true, threads = 1): Promise<WrkResult> {
  const script = join(work, `req-${port}.lua`);
  const headers = Object.entries(e.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n');
  writeFileSync(script, `wrk.method = ${JSON.stringify(e.method)}\n${e.body === undefined ? '' : `wrk.body = ${JSON.stringify(e.body)}\n`}${headers}\n`);
  const url = `http://127.0.0.1:${port}${e.path}`;
  const args = [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const cpu0 = pin ? cpuTimes(0) : [0, 1];
  const serverBefore = cpuSeconds(serverPid);
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(...pinned(generatorPinned ? 0 : undefined, 'wrk', args));
    let text = '';
    child.stdout.on('data', (c: Buffer) => { text += c.toString(); });
    child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`wrk exited ${code}: ${text}`))));
  });
  const serverCpu = cpuSeconds(serverPid) - serverBefore;
  const cpu1 = pin ? cpuTimes(0) : [1, 1];
  const rps = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1] ?? NaN);
  const requests = Number(/(\d+) requests in/.exec(out)?.[1] ?? 0);
  return {
    rps,
    p50ms: parseMs(/\s50%\s+(\S+)/.exec(out)?.[1] ?? ''),
    p99ms: parseMs(/\s99%\s+(\S+)/.exec(out)?.[1] ?? ''),
    non2xx: Number(/Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? 0),
    serverCpu,
    generatorBusy: (cpu1[0] - cpu0[0]) / Math.max(1, cpu1[1] - cpu0[1]),
    requests,
  };
}

const echoBody = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });
const kAccept = 'application/json, text/event-stream';

/** Checks that a server answers the benchmark request with the right JSON-RPC result. */
function checkEcho(label: string, res: { status: number; body: string }): void {
  // (wrk counts any 2xx: the result itself is checked once per server.)
  const parsed = JSON.parse(res.body.startsWith('event:') ? res.body.slice(res.body.indexOf('data: ') + 6) : res.body) as { result?: { content?: { text?: string }[] } };
  if (res.status !== 200 || parsed.result?.content?.[0]?.text !== 'bench') throw new Error(`${label}: wrong sample response ${res.status} ${res.body.slice(0, 200)}`);
}

interface Contender {
  label: string; script: string; args?: string[]; endpoint: (port: number) => Promise<Endpoint>;
  /** Run the server under this Node binary instead of the bench's own. */
  node?: () => string;
  /** Extra check of the sample response (e.g. which HTTP stack answered). */
  check?: (res: { headers: Record<string, string | string[] | undefined> }) => void;
}

const kNode22Label = 'Sluice on Node 22, node:http, 2 HTTP workers (reusePort)';

/** A 2026-07-28 tools/call echo: per-request _meta and headers. */
function modernEcho(): Endpoint {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } } } });
  return { path: '/mcp', method: 'POST', body, headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' } };
}

const legacyInit = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

const contenders: Contender[] = [
  {
    label: 'raw uWS JSON-RPC echo (ceiling)', script: 'uws-echo.mjs',
    endpoint: async () => ({ path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json' } }),
  },
  {
    label: 'Sluice (1 HTTP worker)', script: 'sluice-echo.mjs',
    endpoint: async () => ({ path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } }),
  },
  {
    label: 'official SDK v1, stateless', script: 'sdk-v1.mjs', args: ['stateless'],
    endpoint: async () => ({ path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } }),
  },
  {
    label: 'Sluice, 2026-07-28 (1 HTTP worker)', script: 'sluice-echo.mjs',
    endpoint: async () => modernEcho(),
  },
  {
    label: 'official SDK v2 handler, 2026-07-28', script: 'sdk-v2.mjs',
    endpoint: async () => modernEcho(),
  },
  {
    label: 'official SDK v1, stateful', script: 'sdk-v1.mjs', args: ['stateful'],
    endpoint: async (port) => {
      const init = await post(port, { path: '/mcp', method: 'POST', body: legacyInit, headers: { 'content-type': 'application/json', accept: kAccept } });
      const session = String(init.headers['mcp-session-id']);
      await post(port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
      return { path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session } };
    },
  },
  {
    // Where uWS has no native binding (Node 22/24 on this glibc 2.36 machine) Sluice serves on
    // node:http, its HTTP workers sharing the port through reusePort. Pinned to CPU 1 like every S1
    // row: the 2 workers share one core, so this is the adapter's cost, not a 2-core figure (S7 is).
    label: kNode22Label, script: 'sluice-echo.mjs', args: ['nosessions', '2'], node: node22,
    endpoint: async () => ({ path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } }),
    check: (res) => {
      // uWS marks every response with a `uWebSockets` header; this row must be node:http.
      if (res.headers.uwebsockets !== undefined) throw new Error(`${kNode22Label}: answered by uWebSockets.js, not node:http`);
    },
  },
];

function median(xs: number[]): number {
  const s = [...xs].sort((a, b) => a - b);
  return s.length === 0 ? NaN : s.length % 2 === 1 ? s[(s.length - 1) >> 1] : (s[s.length / 2 - 1] + s[s.length / 2]) / 2;
}

interface Row { scenario: string; label: string; connections: number; runs: WrkResult[] }

async function s0(rows: Row[], seconds: number, reps: number): Promise<void> {
  for (let rep = 0; rep < reps; rep++) {
    for (const [label, script] of [['uWS hello', 'uws-hello.mjs'], ['node:http hello', 'node-hello.mjs']] as const) {
      const s = await start(script);
      try {
        await wrk(s.port, { path: '/', method: 'GET', headers: {} }, 50, 1, s.pid); // warm-up
        const r = await wrk(s.port, { path: '/', method: 'GET', headers: {} }, 50, seconds, s.pid);
        let row = rows.find((x) => x.scenario === 'S0' && x.label === label);
        if (row === undefined) rows.push(row = { scenario: 'S0', label, connections: 50, runs: [] });
        row.runs.push(r);
      } finally {
        await stop(s);
      }
    }
  }
}

async function s1(rows: Row[], seconds: number, reps: number, connectionSets: number[], who: Contender[]): Promise<void> {
  for (let rep = 0; rep < reps; rep++) {
    for (const c of who) {
      const s = c.node === undefined ? await start(c.script, c.args) : await startOn(c.node(), c.script, c.args);
      try {
        const e = await c.endpoint(s.port);
        const sample = await post(s.port, e);
        checkEcho(c.label, sample);
        c.check?.(sample);
        await wrk(s.port, e, 32, 1, s.pid); // warm-up (JIT)
        for (const connections of connectionSets) {
          const r = await wrk(s.port, e, connections, seconds, s.pid);
          if (r.non2xx > 0) throw new Error(`${c.label}: ${r.non2xx} non-2xx responses`);
          let row = rows.find((x) => x.scenario === 'S1' && x.label === c.label && x.connections === connections);
          if (row === undefined) rows.push(row = { scenario: 'S1', label: c.label, connections, runs: [] });
          row.runs.push(r);
        }
      } finally {
        await stop(s);
      }
    }
  }
}

interface Latency { mode: string; samples: number[]; rounds: number[][] }

/**
 * S4 over HTTP: a cancel POST (legacy) or a closed stream (2026-07-28) → the tool saw it, in ms.
 * The two modes alternate; the samples are also split into `reps` consecutive rounds for a p50 range.
 */
async function s4(samples: number, reps: number): Promise<Latency[]> {
  const s = await start('sluice-cancel.mjs');
  const rounds = () => Array.from({ length: reps }, () => [] as number[]);
  const out: Latency[] = [{ mode: 'legacy cancel POST → tool observed', samples: [], rounds: rounds() }, { mode: '2026-07-28 disconnect → tool observed', samples: [], rounds: rounds() }];
  try {
    const init = await post(s.port, { path: '/mcp', method: 'POST', body: legacyInit, headers: { 'content-type': 'application/json', accept: kAccept } });
    const session = String(init.headers['mcp-session-id']);
    const legacy = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session };
    const canceller = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < samples * 2; i++) {
      const modern = i % 2 === 1;
      const record = join(work, `cancel-${i}.txt`);
      const params = { name: 'wait_cancel', arguments: { record }, ...(modern ? { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } : {}) };
      const headers = modern
        ? { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'wait_cancel' }
        : legacy;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1000 + i, method: 'tools/call', params });
      const req = request({ host: '127.0.0.1', port: s.port, path: '/mcp', method: 'POST', headers, agent: false });
      req.on('error', () => {});
      req.on('response', (res) => res.resume());
      req.end(body);
      while (!existsSync(record) || !readFileSync(record, 'utf8').includes('started')) await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setTimeout(r, 2));
      const t0 = process.hrtime.bigint();
      if (modern) req.destroy();
      else await post(s.port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1000 + i } }), headers: legacy }, canceller);
      let seen: bigint | undefined;
      for (let wait = 0; seen === undefined && wait < 5000; wait++) {
        const m = /seen (\d+)/.exec(readFileSync(record, 'utf8'));
        if (m !== null) seen = BigInt(m[1]);
        else await new Promise((r) => setTimeout(r, 1));
      }
      if (seen !== undefined && i >= 4) {
        const l = out[modern ? 1 : 0];
        l.samples.push(Number(seen - t0) / 1e6); // first few: warm-up
        l.rounds[Math.min(reps - 1, Math.floor((i / (samples * 2)) * reps))].push(Number(seen - t0) / 1e6);
      }
    }
    canceller.destroy();
  } finally {
    await stop(s);
  }
  return out;
}

/** S2: initialize → initialized → tools/call → DELETE, from a Node generator pinned to CPU 0. */
async function s2(seconds: number, reps: number): Promise<{ label: string; lifecyclesPerSecond: number[]; p50ms: number[]; p99ms: number[]; errors: number }[]> {
  const out = [
    { label: 'Sluice (1 HTTP worker, sessions)', script: 'sluice-echo.mjs', args: ['sessions', '1'], lifecyclesPerSecond: [] as number[], p50ms: [] as number[], p99ms: [] as number[], errors: 0 },
    { label: 'official SDK v1, stateful', script: 'sdk-v1.mjs', args: ['stateful'], lifecyclesPerSecond: [] as number[], p50ms: [] as number[], p99ms: [] as number[], errors: 0 },
  ];
  for (let rep = 0; rep < reps; rep++) {
    for (const c of out) {
      const s = await start(c.script, c.args);
      try {
        const driver = join(servers, 'lifecycle-driver.mjs');
        const text = await new Promise<string>((resolve, reject) => {
          const child = spawn(...pinned(0, process.execPath, [driver, String(s.port), '16', String(seconds)]));
          let t = '';
          child.stdout.on('data', (b: Buffer) => { t += b.toString(); });
          child.once('exit', (code) => (code === 0 ? resolve(t) : reject(new Error(`lifecycle driver exited ${code}`))));
        });
        const r = JSON.parse(text) as { lifecycles: number; errors: number; p50ms: number; p99ms: number };
        c.lifecyclesPerSecond.push(r.lifecycles / seconds);
        c.p50ms.push(r.p50ms);
        c.p99ms.push(r.p99ms);
        c.errors += r.errors;
      } finally {
        await stop(s);
      }
    }
  }
  return out;
}

interface CpuRow { us: number; mode: string; p50ms: number[]; p99ms: number[]; rps: number[]; loopP50ms: number[]; loopP99ms: number[]; loopMaxMs: number[] }

/**
 * S3: a CPU tool of 50 µs / 1 ms / 10 ms, inline vs pool: latency at c=1, throughput at c=8, and
 * the HTTP worker's event-loop delay during the c=8 run (what every other request on that worker
 * waits), read from a `monitorEventLoopDelay` histogram inside the worker.
 */
async function s3(seconds: number, reps: number): Promise<CpuRow[]> {
  const s = await start('sluice-cpu.mjs');
  const out: CpuRow[] = [];
  const call = (name: string, args: Record<string, unknown>): Endpoint => ({ path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } });
  const loopDelay = async (start: boolean): Promise<{ p50: number; p99: number; max: number }> => {
    const res = await post(s.port, call('loop_delay', { start }));
    return JSON.parse((JSON.parse(res.body) as { result: { content: { text: string }[] } }).result.content[0].text) as { p50: number; p99: number; max: number };
  };
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const us of [50, 1000, 10_000]) {
        for (const mode of ['inline', 'pool']) {
          const e = call(`cpu_${mode}`, { us });
          const sample = await post(s.port, e);
          if (sample.status !== 200 || !sample.body.includes('"result"')) throw new Error(`S3 ${mode}: wrong sample ${sample.body.slice(0, 120)}`);
          await wrk(s.port, e, 1, 1, s.pid);
          const one = await wrk(s.port, e, 1, seconds, s.pid);
          await loopDelay(true);
          const many = await wrk(s.port, e, 8, seconds, s.pid);
          const loop = await loopDelay(false);
          let row = out.find((r) => r.us === us && r.mode === mode);
          if (row === undefined) out.push(row = { us, mode, p50ms: [], p99ms: [], rps: [], loopP50ms: [], loopP99ms: [], loopMaxMs: [] });
          row.p50ms.push(one.p50ms);
          row.p99ms.push(one.p99ms);
          row.rps.push(many.rps);
          row.loopP50ms.push(loop.p50);
          row.loopP99ms.push(loop.p99);
          row.loopMaxMs.push(loop.max);
        }
      }
    }
  } finally {
    await stop(s);
  }
  return out;
}

/** S6: open-loop load (h2load --rps) at a share of the S1 peak; latency, errors and RSS slope. */
async function s6(peak: number, seconds: number): Promise<{ share: number; rate: number; meanMs: number; maxMs: number; failed: number; rssSlopeMbPerMin: number; rssStartMb: number; rssEndMb: number }[]> {
  const out = [];
  for (const share of [0.5, 0.8]) {
    const s = await start('sluice-echo.mjs');
    try {
      const body = join(work, 'soak.json');
      writeFileSync(body, echoBody(1));
      const clients = 32;
      const rate = Math.max(1, Math.floor((peak * share) / clients));
      const rss: [number, number][] = [];
      const t0 = Date.now();
      const sampler = setInterval(() => {
        const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${s.pid}/status`, 'utf8'));
        if (m !== null) rss.push([(Date.now() - t0) / 60_000, Number(m[1]) / 1024]);
      }, 1000);
      const args = ['--h1', '-c', String(clients), '--rps', String(rate), '-D', String(seconds), '-d', body, '-H', 'content-type: application/json', '-H', `accept: ${kAccept}`, '-H', 'mcp-protocol-version: 2025-11-25', `http://127.0.0.1:${s.port}/mcp`];
      const text = await new Promise<string>((resolve, reject) => {
        const child = spawn(...pinned(0, 'h2load', args));
        let t = '';
        child.stdout.on('data', (b: Buffer) => { t += b.toString(); });
        child.once('exit', (code) => (code === 0 ? resolve(t) : reject(new Error(`h2load exited ${code}: ${t}`))));
      });
      clearInterval(sampler);
      const req = /requests: (\d+) total, \d+ started, \d+ done, (\d+) succeeded, (\d+) failed, (\d+) errored/.exec(text);
      const lat = /time for request:\s+(\S+)\s+(\S+)\s+(\S+)/.exec(text);
      const n = rss.length;
      const mx = rss.reduce((a, p) => a + p[0], 0) / Math.max(1, n);
      const my = rss.reduce((a, p) => a + p[1], 0) / Math.max(1, n);
      const slope = rss.reduce((a, p) => a + (p[0] - mx) * (p[1] - my), 0) / Math.max(1e-9, rss.reduce((a, p) => a + (p[0] - mx) ** 2, 0));
      out.push({
        share, rate: rate * clients,
        meanMs: parseMs(lat?.[3] ?? ''), maxMs: parseMs(lat?.[2] ?? ''),
        failed: Number(req?.[3] ?? 0) + Number(req?.[4] ?? 0),
        rssSlopeMbPerMin: slope, rssStartMb: rss[0]?.[1] ?? NaN, rssEndMb: rss[n - 1]?.[1] ?? NaN,
      });
    } finally {
      await stop(s);
    }
  }
  return out;
}

/** Requests per worker thread block, from the server's /metrics (shared-memory counters). */
async function perThreadRequests(port: number): Promise<Map<string, number>> {
  const res = await post(port, { path: '/metrics', method: 'GET', headers: {} });
  return new Map([...res.body.matchAll(/^sluice_thread_requests_total\{block="(\d+)"\} (\d+)$/gm)].map((m) => [m[1], Number(m[2])]));
}

/** S7: two HTTP workers sharing both cores with an unpinned wrk -t2: throughput, tail, requests per thread. */
async function s7(seconds: number, reps: number): Promise<{ run: WrkResult; perThread: number[] }[]> {
  const runs: { run: WrkResult; perThread: number[] }[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const s = await start('sluice-echo.mjs', ['nosessions', '2'], false);
    try {
      const e: Endpoint = { path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } };
      await wrk(s.port, e, 64, 1, s.pid, false, 2);
      const before = await perThreadRequests(s.port);
      const run = await wrk(s.port, e, 64, seconds, s.pid, false, 2);
      const after = await perThreadRequests(s.port);
      const perThread = [...after].map(([block, n]) => n - (before.get(block) ?? 0)).filter((n) => n > 0).sort((a, b) => b - a);
      runs.push({ run, perThread });
    } finally {
      await stop(s);
    }
  }
  return runs;
}

function pct(xs: number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

function svgBars(title: string, bars: { label: string; value: number }[], unit: string): string {
  const w = 720;
  const h = 60 + bars.length * 34;
  const max = Math.max(...bars.map((b) => b.value), 1);
  const rows = bars.map((b, i) => {
    const y = 40 + i * 34;
    const len = Math.max(1, (b.value / max) * 280); // leaves room for the value's label
    return `<text x="10" y="${y + 16}" font-size="12">${b.label.replace(/&/g, '&amp;').replace(/</g, '&lt;')}</text>`
      + `<rect x="300" y="${y + 4}" width="${len.toFixed(1)}" height="18" fill="#2f6db5"/>`
      + `<text x="${(306 + len).toFixed(1)}" y="${y + 17}" font-size="12">${b.value.toFixed(b.value < 10 ? 2 : 0)} ${unit}</text>`;
  }).join('\n');
  return `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif">\n<rect width="${w}" height="${h}" fill="#fff"/>\n<text x="10" y="22" font-size="14" font-weight="bold">${title}</text>\n${rows}\n</svg>\n`;
}

async function main(): Promise<void> {
  ensureTools();
  const seconds = smoke || quick ? 2 : 8;
  const reps = smoke || quick ? 1 : 3;
  const rows: Row[] = [];
  const started = Date.now();
  if (!smoke && runs('S0')) await s0(rows, seconds, reps);
  if (runs('S1')) await s1(rows, seconds, reps, smoke ? [32] : [1, 32, 64], smoke ? contenders.slice(0, 2) : contenders);
  const latency = runs('S4') ? await s4(smoke ? 30 : 200, reps) : [];
  const lifecycle = smoke || !runs('S2') ? [] : await s2(seconds, reps);
  const cpu = smoke || !runs('S3') ? [] : await s3(quick ? 1 : 3, reps);
  const peak = median(rows.find((r) => r.scenario === 'S1' && r.label === contenders[1].label && r.connections === (smoke ? 32 : 64))?.runs.map((r) => r.rps) ?? []);
  const soak = smoke || !runs('S6') || !Number.isFinite(peak) ? [] : await s6(peak, quick ? 5 : 60);
  const twoWorkers = smoke || !runs('S7') ? [] : await s7(seconds, reps);

  const byName = (label: string) => contenders.find((x) => x.label === label)!.label;
  const ceiling = contenders[0].label;
  const sluice = contenders[1].label;
  const ratios: Record<string, { median: number; min: number; max: number }> = {};
  const ratio = (name: string, num: string, den: string, c: number) => {
    const a = rows.find((r) => r.scenario === 'S1' && r.label === num && r.connections === c);
    const b = rows.find((r) => r.scenario === 'S1' && r.label === den && r.connections === c);
    if (a === undefined || b === undefined) return;
    const each = a.runs.map((r, i) => r.rps / (b.runs[i]?.rps ?? NaN));
    ratios[name] = { median: median(each), min: Math.min(...each), max: Math.max(...each) };
  };
  for (const c of smoke ? [32] : [1, 32, 64]) {
    ratio(`Sluice / raw uWS ceiling, c=${c}`, sluice, ceiling, c);
    ratio(`Sluice / SDK v1 stateful, c=${c}`, sluice, byName('official SDK v1, stateful'), c);
    ratio(`Sluice / SDK v1 stateless, c=${c}`, sluice, byName('official SDK v1, stateless'), c);
    ratio(`Sluice 2026-07-28 / SDK v2 handler 2026-07-28, c=${c}`, byName('Sluice, 2026-07-28 (1 HTTP worker)'), byName('official SDK v2 handler, 2026-07-28'), c);
    ratio(`Sluice 2026-07-28 / Sluice 2025-11-25, c=${c}`, byName('Sluice, 2026-07-28 (1 HTTP worker)'), sluice, c);
    // Node 22 over node:http (2 workers, one core) against the Node 20 raw uWS ceiling and SDK v1, same run.
    ratio(`Sluice Node 22 node:http ×2 / raw uWS ceiling (Node 20), c=${c}`, kNode22Label, ceiling, c);
    ratio(`Sluice Node 22 node:http ×2 / SDK v1 stateful, c=${c}`, kNode22Label, byName('official SDK v1, stateful'), c);
    ratio(`Sluice Node 22 node:http ×2 / Sluice Node 20 uWS ×1, c=${c}`, kNode22Label, sluice, c);
  }
  const range = (xs: number[]) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
  const date = new Date().toISOString().slice(0, 10);
  const registry = existsSync(join(results, 'registry-latest.json'))
    ? JSON.parse(readFileSync(join(results, 'registry-latest.json'), 'utf8')) as { timestamp: string; targets: { name: string; target: string; actual: string; met: boolean }[] }
    : undefined;
  const cancel = latency.map((l) => ({ mode: l.mode, n: l.samples.length, p50ms: pct(l.samples, 50), p99ms: pct(l.samples, 99), p999ms: pct(l.samples, 99.9), roundP50ms: range(l.rounds.filter((r) => r.length > 0).map((r) => pct(r, 50))) }));
  const cpuTools = cpu.map((c) => ({ us: c.us, mode: c.mode, p50ms: median(c.p50ms), p99ms: median(c.p99ms), rps: range(c.rps), loopDelayP50ms: median(c.loopP50ms), loopDelayP99ms: median(c.loopP99ms), loopDelayMaxMs: Math.max(...c.loopMaxMs) }));
  const dispatch = range(cpu.find((c) => c.us === 50 && c.mode === 'pool')?.p50ms.map((p, i) => (p - (cpu.find((x) => x.us === 50 && x.mode === 'inline')?.p50ms[i] ?? NaN)) * 1000) ?? [NaN]);
  // The SPEC §7 targets measured by this script (the registry ones come from bench:registry).
  const targets: { name: string; target: string; actual: string; met: boolean }[] = [];
  const ratioTarget = (name: string, key: string, floor: number) => {
    const r = ratios[key];
    if (r !== undefined) targets.push({ name, target: `≥ ${floor}`, actual: `${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`, met: r.median >= floor });
  };
  for (const c of smoke ? [32] : [32, 64]) {
    ratioTarget(`tools/call echo ÷ raw uWS ceiling, c=${c}`, `Sluice / raw uWS ceiling, c=${c}`, 0.6);
    ratioTarget(`tools/call echo ÷ SDK v1 stateful, c=${c}`, `Sluice / SDK v1 stateful, c=${c}`, 10);
    ratioTarget(`tools/call echo ÷ SDK v1 stateless, c=${c}`, `Sluice / SDK v1 stateless, c=${c}`, 20);
  }
  if (cancel[0] !== undefined) targets.push({ name: 'HTTP cancel POST → tool observed, p50', target: '≤ 1 ms', actual: `${cancel[0].p50ms.toFixed(3)} ms`, met: cancel[0].p50ms <= 1 });
  if (cancel[1] !== undefined) targets.push({ name: 'modern disconnect → tool observed, p50', target: '≤ 2 ms', actual: `${cancel[1].p50ms.toFixed(3)} ms`, met: cancel[1].p50ms <= 2 });
  if (cpu.length > 0) targets.push({ name: 'pool dispatch overhead, p50', target: '≤ 80 µs', actual: `${dispatch.median.toFixed(0)} µs (${dispatch.min.toFixed(0)}–${dispatch.max.toFixed(0)})`, met: dispatch.median <= 80 });
  // "Flat" read as: no growth. A falling RSS (the heap settling after the warm-up) is flat enough.
  const soakSlope = soak.length === 0 ? NaN : Math.max(...soak.map((x) => x.rssSlopeMbPerMin));
  if (soak.length > 0) targets.push({ name: 'RSS flat in 60 s soaks at 50 % and 80 % (largest RSS slope; no failed requests)', target: '≤ +1 MB/min', actual: `${soakSlope.toFixed(2)} MB/min, ${soak.reduce((a, x) => a + x.failed, 0)} failed`, met: soakSlope <= 1 && soak.every((x) => x.failed === 0) });
  if (!smoke && registry !== undefined) targets.push(...registry.targets.map((t) => ({ ...t, name: `${t.name} (bench:registry)` })));
  const report = {
    date: new Date().toISOString(),
    mode: `${smoke ? 'smoke' : quick ? 'quick' : 'full'}${only === undefined ? '' : `, only ${[...only].join(',')}`}`,
    machine: `${cpus()[0]?.model ?? '?'} × ${cpus().length}, node ${process.version}`,
    pinned: pin,
    command: smoke ? 'npm run bench:smoke' : only !== undefined ? `npm run build && node dist/bench/http.js${quick ? ' --quick' : ''} --only ${[...only].join(',')}` : 'npm run bench',
    seconds, reps,
    targets,
    ratios,
    rows: rows.map((r) => ({
      scenario: r.scenario, label: r.label, connections: r.connections,
      rps: median(r.runs.map((x) => x.rps)), rpsMin: Math.min(...r.runs.map((x) => x.rps)), rpsMax: Math.max(...r.runs.map((x) => x.rps)),
      p50ms: median(r.runs.map((x) => x.p50ms)), p99ms: median(r.runs.map((x) => x.p99ms)),
      requestsPerServerCpuSecond: median(r.runs.map((x) => x.requests / Math.max(1e-9, x.serverCpu))),
      generatorBusy: Math.max(...r.runs.map((x) => x.generatorBusy)),
    })),
    cancel,
    lifecycle: lifecycle.map((l) => ({ label: l.label, lifecyclesPerSecond: median(l.lifecyclesPerSecond), min: Math.min(...l.lifecyclesPerSecond), max: Math.max(...l.lifecyclesPerSecond), p50ms: median(l.p50ms), p99ms: median(l.p99ms), errors: l.errors })),
    cpuTools,
    poolDispatchUs: cpu.length === 0 ? undefined : dispatch,
    soak,
    twoWorkers: twoWorkers.length === 0 ? undefined : {
      rps: range(twoWorkers.map((r) => r.run.rps)), p99ms: median(twoWorkers.map((r) => r.run.p99ms)),
      perThread: twoWorkers.map((r) => r.perThread),
      // Share of the busier thread per run (0.5 = even).
      busierShare: range(twoWorkers.map((r) => (r.perThread[0] ?? 0) / Math.max(1, r.perThread.reduce((a, b) => a + b, 0)))),
    },
    registry,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  mkdirSync(results, { recursive: true });
  // The full run is the report (<date>.md, latest.md, latest.json); smoke and quick runs keep their own files.
  const base = smoke ? 'smoke' : only !== undefined ? `only-${[...only].join('-')}${quick ? '-quick' : ''}` : quick ? 'quick' : 'http';
  writeFileSync(join(results, `${base}-${date}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(results, `${base}-latest.json`), `${JSON.stringify(report, null, 2)}\n`);
  const f = (x: number, d: number) => (Number.isFinite(x) ? x.toFixed(d) : '–');
  const lines = [
    `# HTTP benchmark (${report.mode})`, '',
    `- Date: ${report.date}`, `- Machine: ${report.machine}; server pinned to CPU 1, load generator to CPU 0: ${pin}`,
    `- Command: \`${report.command}\` (${seconds} s per run after a 1 s warm-up, ${reps} interleaved repeat(s)); run time ${report.durationSeconds} s`,
    ...(!smoke && registry !== undefined ? [`- S5 and the in-process cancel latencies: \`npm run bench:registry\` (${registry.timestamp}, run just before by \`npm run bench\`), see [registry-latest.md](registry-latest.md)`] : []),
    '', '## SPEC §7 targets', '',
    '| target | wanted | measured (median, min–max) | met? |', '|---|---|---|---|',
    ...targets.map((t) => `| ${t.name} | ${t.target} | ${t.actual} | ${t.met ? 'met' : '**missed**'} |`),
    '', '## Ratios (same run; median, min–max over repeats)', '',
    '| ratio | median | min–max |', '|---|---:|---:|',
    ...Object.entries(ratios).map(([k, v]) => `| ${k} | ${f(v.median, 2)} | ${f(v.min, 2)}–${f(v.max, 2)} |`),
    '', '## Throughput (S0 calibration, S1 tools/call echo)', '',
    '| scenario | server | c | req/s (median) | min–max | p50 ms | p99 ms | req per server CPU-s | generator CPU |', '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.rows.map((r) => `| ${r.scenario} | ${r.label} | ${r.connections} | ${f(r.rps, 0)} | ${f(r.rpsMin, 0)}–${f(r.rpsMax, 0)} | ${f(r.p50ms, 2)} | ${f(r.p99ms, 2)} | ${f(r.requestsPerServerCpuSecond, 0)} | ${(r.generatorBusy * 100).toFixed(0)}%${r.generatorBusy > 0.9 ? ' (lower bound)' : ''} |`),
    '', '"req per server CPU-s" counts the server process\'s user + system time (all its threads). A run whose generator core was above 90 % busy is marked a lower bound: the server may have had more to give.',
    ...(cancel.length === 0 ? [] : [
      '', '## Cancel → observed over HTTP (S4)', '',
      `| mode | n | p50 ms | p99 ms | p99.9 ms | p50 per round (${reps}), min–max |`, '|---|---:|---:|---:|---:|---:|',
      ...cancel.map((c) => `| ${c.mode} | ${c.n} | ${f(c.p50ms, 3)} | ${f(c.p99ms, 3)} | ${f(c.p999ms, 3)} | ${f(c.roundP50ms.min, 3)}–${f(c.roundP50ms.max, 3)} |`),
      '', 'Percentiles pool every round. With a few hundred samples, p99.9 is close to the maximum. Polling and `ctx.signal` latencies inside one process are measured by `npm run bench:registry` (S5 section of registry-latest.md).',
    ]),
    ...(lifecycle.length === 0 ? [] : [
      '', '## Session per call (S2): initialize → initialized → tools/call → DELETE, 16 loops', '',
      '| server | lifecycles/s (median) | min–max | p50 ms | p99 ms | errors |', '|---|---:|---:|---:|---:|---:|',
      ...report.lifecycle.map((l) => `| ${l.label} | ${f(l.lifecyclesPerSecond, 0)} | ${f(l.min, 0)}–${f(l.max, 0)} | ${f(l.p50ms, 2)} | ${f(l.p99ms, 2)} | ${l.errors} |`),
    ]),
    ...(cpuTools.length === 0 ? [] : [
      '', '## CPU tools inline vs pool (S3): latency at c=1, throughput and HTTP-worker loop delay at c=8 (one pool thread)', '',
      '| tool CPU | mode | p50 ms (c=1) | p99 ms (c=1) | req/s (c=8), min–max | loop delay p50 / p99 / max ms (c=8) |', '|---:|---|---:|---:|---:|---:|',
      ...cpuTools.map((c) => `| ${c.us} µs | ${c.mode} | ${f(c.p50ms, 3)} | ${f(c.p99ms, 3)} | ${f(c.rps.median, 0)} (${f(c.rps.min, 0)}–${f(c.rps.max, 0)}) | ${f(c.loopDelayP50ms, 2)} / ${f(c.loopDelayP99ms, 2)} / ${f(c.loopDelayMaxMs, 2)} |`),
      '', `Pool dispatch overhead at 50 µs (p50 at c=1, pool − inline, per repeat): ${f(dispatch.median, 0)} µs (${f(dispatch.min, 0)}–${f(dispatch.max, 0)}). Loop delay is the HTTP worker's \`monitorEventLoopDelay\` (1 ms resolution, so about 1 ms is its floor) during the c=8 run: the wait every other request on that worker would see. The server process is pinned to one core, so the pool thread shares it with the HTTP worker: the pool buys responsiveness here, not throughput.`,
    ]),
    ...(soak.length === 0 ? [] : [
      '', `## Open-loop soak (S6): h2load --rps at 50 % and 80 % of the S1 peak (${f(peak, 0)} req/s), ${quick ? 5 : 60} s each`, '',
      '| load | req/s offered | mean ms | max ms | failed | RSS start → end MB | RSS slope MB/min |', '|---:|---:|---:|---:|---:|---:|---:|',
      ...soak.map((x) => `| ${x.share * 100} % | ${x.rate} | ${f(x.meanMs, 2)} | ${f(x.maxMs, 2)} | ${x.failed} | ${f(x.rssStartMb, 1)} → ${f(x.rssEndMb, 1)} | ${f(x.rssSlopeMbPerMin, 2)} |`),
      '', 'One 60 s run per load (a soak, not repeated). The slope is a least-squares fit over one RSS sample per second.',
    ]),
    ...(report.twoWorkers === undefined ? [] : [
      '', '## Two HTTP workers on both cores (S7): wrk -t2 -c64, nothing pinned', '',
      `Throughput ${f(report.twoWorkers.rps.median, 0)} req/s (${f(report.twoWorkers.rps.min, 0)}–${f(report.twoWorkers.rps.max, 0)}), p99 ${f(report.twoWorkers.p99ms, 2)} ms. Requests per worker thread, per run (from \`sluice_thread_requests_total\` on /metrics; wrk counted ${twoWorkers.map((r) => r.run.requests).join('; ')}): ${report.twoWorkers.perThread.map((p) => p.join(' / ')).join('; ')}; the busier thread served ${f(report.twoWorkers.busierShare.median * 100, 1)} % (${f(report.twoWorkers.busierShare.min * 100, 1)}–${f(report.twoWorkers.busierShare.max * 100, 1)} %). The kernel spreads connections by SO_REUSEPORT hash, so the split follows the 64 connections, not the load.`,
    ]),
    '', '## Charts', '',
    ...(smoke || !runs('S0') ? [] : [`![S0 calibration](${base}-s0.svg)`, '']),
    `![S1 req/s at c=${smoke ? 32 : 64}](${base}-s1.svg)`, '',
    ...(lifecycle.length === 0 ? [] : [`![S2 lifecycles](${base}-s2.svg)`, '', `![S3 CPU tools](${base}-s3.svg)`, '']),
    ...(cancel.length === 0 ? [] : [`![S4 cancel latency](${base}-s4.svg)`, '']),
    ...(!smoke && registry !== undefined ? ['![S5 table and registry (bench:registry)](registry-latest.svg)', ''] : []),
    ...(soak.length === 0 ? [] : [`![S6 soak](${base}-s6.svg)`, '', `![S7 two workers](${base}-s7.svg)`, '']),
  ];
  writeFileSync(join(results, `${base}-${date}.md`), `${lines.join('\n')}\n`);
  writeFileSync(join(results, `${base}-latest.md`), `${lines.join('\n')}\n`);
  if (!smoke && !quick && only === undefined) {
    writeFileSync(join(results, `${date}.md`), `${lines.join('\n')}\n`);
    writeFileSync(join(results, 'latest.md'), `${lines.join('\n')}\n`);
    writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  }
  const c = smoke ? 32 : 64;
  if (!smoke && runs('S0')) writeFileSync(join(results, `${base}-s0.svg`), svgBars('S0 calibration: hello world, req/s at c=50 (one server core)', report.rows.filter((r) => r.scenario === 'S0').map((r) => ({ label: r.label, value: r.rps })), 'req/s'));
  writeFileSync(join(results, `${base}-s1.svg`), svgBars(`S1 tools/call echo, req/s at c=${c} (one server core)`, report.rows.filter((r) => r.scenario === 'S1' && r.connections === c).map((r) => ({ label: r.label, value: r.rps })), 'req/s'));
  if (report.lifecycle.length > 0) {
    writeFileSync(join(results, `${base}-s2.svg`), svgBars('S2 session per call, lifecycles/s (one server core)', report.lifecycle.map((l) => ({ label: l.label, value: l.lifecyclesPerSecond })), '/s'));
  }
  if (cancel.length > 0) writeFileSync(join(results, `${base}-s4.svg`), svgBars('S4 cancel → tool observed over HTTP, p50 ms', cancel.map((x) => ({ label: x.mode, value: x.p50ms })), 'ms'));
  if (cpuTools.length > 0) {
    writeFileSync(join(results, `${base}-s3.svg`), svgBars('S3 CPU tools: HTTP-worker loop delay p99 at c=8, ms', cpuTools.map((x) => ({ label: `${x.us} µs ${x.mode}`, value: x.loopDelayP99ms })), 'ms'));
  }
  if (soak.length > 0) {
    writeFileSync(join(results, `${base}-s6.svg`), svgBars('S6 open-loop soak: mean and max latency, ms', soak.flatMap((x) => [{ label: `${x.share * 100} % of peak, mean`, value: x.meanMs }, { label: `${x.share * 100} % of peak, max`, value: x.maxMs }]), 'ms'));
  }
  if (report.twoWorkers !== undefined) {
    writeFileSync(join(results, `${base}-s7.svg`), svgBars('S7 two HTTP workers: requests per thread (first run)', (report.twoWorkers.perThread[0] ?? []).map((n, i) => ({ label: `worker thread ${i + 1}`, value: n })), 'requests'));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (smoke) {
    // Fails only on a gross regression, each a ratio to the raw uWS ceiling measured in this run.
    const share = ratios['Sluice / raw uWS ceiling, c=32']?.median ?? 0;
    if (!(share >= 0.15)) {
      process.stderr.write(`bench:smoke: Sluice reached only ${(share * 100).toFixed(0)} % of the raw uWS ceiling (floor 15 %)\n`);
      process.exit(1);
    }
    // Cancel → observed against the ceiling's own request latency at c=32 in this run (about 2× on a quiet box).
    const ceilingP50 = report.rows.find((r) => r.label === ceiling && r.connections === 32)?.p50ms ?? NaN;
    const cancelRatio = (cancel[0]?.p50ms ?? Infinity) / ceilingP50;
    if (!(cancelRatio <= 100)) {
      process.stderr.write(`bench:smoke: legacy cancel → observed p50 is ${cancelRatio.toFixed(1)}× the ceiling's request p50 (limit 100×)\n`);
      process.exit(1);
    }
  }
}

await main();
