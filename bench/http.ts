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
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const smoke = process.argv.includes('--smoke');
/** A short full run to check the harness itself (not for figures). */
const quick = process.argv.includes('--quick');
const root = fileURLToPath(new URL('../../', import.meta.url));
const servers = join(root, 'bench', 'servers');
const results = join(root, 'bench', 'results');
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const pin = existsSync('/usr/bin/taskset') && cpus().length >= 2;

interface Running { child: ChildProcess; port: number; pid: number }

function ensureTools(): void {
  const packages: Record<string, string> = { wrk: 'wrk', h2load: 'nghttp2-client' };
  const missing = Object.keys(packages).filter((t) => { try { execFileSync('which', [t]); return false; } catch { return true; } });
  if (missing.length === 0) return;
  process.stderr.write(`bench: installing ${missing.map((t) => packages[t]).join(', ')} (Debian packages)\n`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing.map((t) => packages[t])], { stdio: 'ignore' });
}

async function start(script: string, args: string[] = [], pinned = true): Promise<Running> {
  const cmd = pin && pinned ? 'taskset' : process.execPath;
  const argv = pin && pinned ? ['-c', '1', process.execPath, join(servers, script), ...args] : [join(servers, script), ...args];
  const child = spawn(cmd, argv, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${script} exited (${code}) before it was ready`)));
  });
  return { child, port, pid: child.pid! };
}

async function stop(s: Running): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}

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

async function wrk(port: number, e: Endpoint, connections: number, seconds: number, serverPid: number, pinned = true, threads = 1): Promise<WrkResult> {
  const script = join(work, `req-${port}.lua`);
  const headers = Object.entries(e.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n');
  writeFileSync(script, `wrk.method = ${JSON.stringify(e.method)}\n${e.body === undefined ? '' : `wrk.body = ${JSON.stringify(e.body)}\n`}${headers}\n`);
  const url = `http://127.0.0.1:${port}${e.path}`;
  const args = [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const cpu0 = pin ? cpuTimes(0) : [0, 1];
  const serverBefore = cpuSeconds(serverPid);
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(pin && pinned ? 'taskset' : 'wrk', pin && pinned ? ['-c', '0', 'wrk', ...args] : args);
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
  const parsed = JSON.parse(res.body.startsWith('event:') ? res.body.slice(res.body.indexOf('data: ') + 6) : res.body) as { result?: { content?: { text?: string }[] } };
  if (res.status !== 200 || parsed.result?.content?.[0]?.text !== 'bench') throw new Error(`${label}: wrong sample response ${res.status} ${res.body.slice(0, 200)}`);
}

interface Contender { label: string; script: string; args?: string[]; endpoint: (port: number) => Promise<Endpoint> }

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
      const s = await start(c.script, c.args);
      try {
        const e = await c.endpoint(s.port);
        checkEcho(c.label, await post(s.port, e));
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

interface Latency { mode: string; samples: number[] }

/** S4 over HTTP: a cancel POST (legacy) or a closed stream (2026-07-28) → the tool saw it, in ms. */
async function s4(samples: number): Promise<Latency[]> {
  const s = await start('sluice-cancel.mjs');
  const out: Latency[] = [{ mode: 'legacy cancel POST → tool observed', samples: [] }, { mode: '2026-07-28 disconnect → tool observed', samples: [] }];
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
      if (seen !== undefined && i >= 4) out[modern ? 1 : 0].samples.push(Number(seen - t0) / 1e6); // first few: warm-up
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
          const child = spawn(pin ? 'taskset' : process.execPath, pin ? ['-c', '0', process.execPath, driver, String(s.port), '16', String(seconds)] : [driver, String(s.port), '16', String(seconds)]);
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

/** S3: a CPU tool of 50 µs / 1 ms / 10 ms, inline vs pool: latency at c=1 and throughput at c=8. */
async function s3(seconds: number): Promise<{ us: number; mode: string; p50ms: number; p99ms: number; rps: number }[]> {
  const s = await start('sluice-cpu.mjs');
  const out: { us: number; mode: string; p50ms: number; p99ms: number; rps: number }[] = [];
  try {
    for (const us of [50, 1000, 10_000]) {
      for (const mode of ['inline', 'pool']) {
        const e: Endpoint = { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: `cpu_${mode}`, arguments: { us } } }), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } };
        const sample = await post(s.port, e);
        if (sample.status !== 200 || !sample.body.includes('"result"')) throw new Error(`S3 ${mode}: wrong sample ${sample.body.slice(0, 120)}`);
        await wrk(s.port, e, 1, 1, s.pid);
        const one = await wrk(s.port, e, 1, seconds, s.pid);
        const many = await wrk(s.port, e, 8, seconds, s.pid);
        out.push({ us, mode, p50ms: one.p50ms, p99ms: one.p99ms, rps: many.rps });
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
        const child = spawn(pin ? 'taskset' : 'h2load', pin ? ['-c', '0', 'h2load', ...args] : args);
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

/** S7: two HTTP workers sharing both cores with an unpinned wrk -t2: throughput and tail. */
async function s7(seconds: number, reps: number): Promise<WrkResult[]> {
  const runs: WrkResult[] = [];
  for (let rep = 0; rep < reps; rep++) {
    const s = await start('sluice-echo.mjs', ['nosessions', '2'], false);
    try {
      const e: Endpoint = { path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } };
      await wrk(s.port, e, 64, 1, s.pid, false, 2);
      runs.push(await wrk(s.port, e, 64, seconds, s.pid, false, 2));
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
    const len = Math.max(1, (b.value / max) * 380);
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
  if (!smoke) await s0(rows, seconds, reps);
  await s1(rows, seconds, reps, smoke ? [32] : [1, 32, 64], smoke ? contenders.slice(0, 2) : contenders);
  const latency = await s4(smoke ? 30 : 200);
  const lifecycle = smoke ? [] : await s2(seconds, reps);
  const cpu = smoke ? [] : await s3(4);
  const peak = median(rows.find((r) => r.scenario === 'S1' && r.label === contenders[1].label && r.connections === (smoke ? 32 : 64))?.runs.map((r) => r.rps) ?? []);
  const soak = smoke ? [] : await s6(peak, quick ? 5 : 60);
  const twoWorkers = smoke ? [] : await s7(seconds, reps);

  const med = (label: string, c: number, pick: (r: WrkResult) => number) => median(rows.find((r) => r.scenario === 'S1' && r.label === label && r.connections === c)?.runs.map(pick) ?? []);
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
  }
  const date = new Date().toISOString().slice(0, 10);
  const report = {
    date: new Date().toISOString(),
    mode: smoke ? 'smoke' : 'full',
    machine: `${cpus()[0]?.model ?? '?'} × ${cpus().length}, node ${process.version}`,
    pinned: pin,
    command: smoke ? 'npm run bench:smoke' : 'npm run bench',
    seconds, reps,
    ratios,
    rows: rows.map((r) => ({
      scenario: r.scenario, label: r.label, connections: r.connections,
      rps: median(r.runs.map((x) => x.rps)), rpsMin: Math.min(...r.runs.map((x) => x.rps)), rpsMax: Math.max(...r.runs.map((x) => x.rps)),
      p50ms: median(r.runs.map((x) => x.p50ms)), p99ms: median(r.runs.map((x) => x.p99ms)),
      requestsPerServerCpuSecond: median(r.runs.map((x) => x.requests / Math.max(1e-9, x.serverCpu))),
      generatorBusy: Math.max(...r.runs.map((x) => x.generatorBusy)),
    })),
    cancel: latency.map((l) => ({ mode: l.mode, n: l.samples.length, p50ms: pct(l.samples, 50), p99ms: pct(l.samples, 99), p999ms: pct(l.samples, 99.9) })),
    lifecycle: lifecycle.map((l) => ({ label: l.label, lifecyclesPerSecond: median(l.lifecyclesPerSecond), min: Math.min(...l.lifecyclesPerSecond), max: Math.max(...l.lifecyclesPerSecond), p50ms: median(l.p50ms), p99ms: median(l.p99ms), errors: l.errors })),
    cpuTools: cpu,
    soak,
    twoWorkers: twoWorkers.length === 0 ? undefined : { rps: median(twoWorkers.map((r) => r.rps)), rpsMin: Math.min(...twoWorkers.map((r) => r.rps)), rpsMax: Math.max(...twoWorkers.map((r) => r.rps)), p99ms: median(twoWorkers.map((r) => r.p99ms)) },
    registry: existsSync(join(results, 'registry-latest.json')) ? JSON.parse(readFileSync(join(results, 'registry-latest.json'), 'utf8')) as unknown : undefined,
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  mkdirSync(results, { recursive: true });
  // The full run is the report (<date>.md, latest.md, latest.json); the smoke run keeps its own files.
  const base = smoke ? 'smoke' : quick ? 'quick' : 'http';
  writeFileSync(join(results, `${base}-${date}.json`), `${JSON.stringify(report, null, 2)}\n`);
  writeFileSync(join(results, `${base}-latest.json`), `${JSON.stringify(report, null, 2)}\n`);
  const lines = [
    `# HTTP benchmark (${report.mode})`, '',
    `- Date: ${report.date}`, `- Machine: ${report.machine}; server pinned to CPU 1, wrk to CPU 0: ${pin}`,
    `- Command: \`${report.command}\` (${seconds} s per run after a 1 s warm-up, ${reps} interleaved repeat(s))`, '',
    '## Ratios (same run; median, min–max over repeats)', '',
    '| ratio | median | min–max |', '|---|---:|---:|',
    ...Object.entries(ratios).map(([k, v]) => `| ${k} | ${v.median.toFixed(2)} | ${v.min.toFixed(2)}–${v.max.toFixed(2)} |`),
    '', '## Throughput', '',
    '| scenario | server | c | req/s (median) | min–max | p50 ms | p99 ms | req per server CPU-s | generator CPU |', '|---|---|---:|---:|---:|---:|---:|---:|---:|',
    ...report.rows.map((r) => `| ${r.scenario} | ${r.label} | ${r.connections} | ${r.rps.toFixed(0)} | ${r.rpsMin.toFixed(0)}–${r.rpsMax.toFixed(0)} | ${r.p50ms.toFixed(2)} | ${r.p99ms.toFixed(2)} | ${r.requestsPerServerCpuSecond.toFixed(0)} | ${(r.generatorBusy * 100).toFixed(0)}%${r.generatorBusy > 0.9 ? ' (lower bound)' : ''} |`),
    '', '## Cancel → observed over HTTP (S4)', '',
    '| mode | n | p50 ms | p99 ms | p99.9 ms |', '|---|---:|---:|---:|---:|',
    ...report.cancel.map((c) => `| ${c.mode} | ${c.n} | ${c.p50ms?.toFixed(3)} | ${c.p99ms?.toFixed(3)} | ${c.p999ms?.toFixed(3)} |`),
    '', 'Polling and signal latencies inside one process are in registry-latest.md (`npm run bench:registry`).',
    ...(lifecycle.length === 0 ? [] : [
      '', '## Session per call (S2): initialize → initialized → tools/call → DELETE, 16 loops', '',
      '| server | lifecycles/s (median) | min–max | p50 ms | p99 ms | errors |', '|---|---:|---:|---:|---:|---:|',
      ...report.lifecycle.map((l) => `| ${l.label} | ${l.lifecyclesPerSecond.toFixed(0)} | ${l.min.toFixed(0)}–${l.max.toFixed(0)} | ${l.p50ms.toFixed(2)} | ${l.p99ms.toFixed(2)} | ${l.errors} |`),
    ]),
    ...(cpu.length === 0 ? [] : [
      '', '## CPU tools inline vs pool (S3): latency at c=1, throughput at c=8 (one pool thread)', '',
      '| tool CPU | mode | p50 ms (c=1) | p99 ms (c=1) | req/s (c=8) |', '|---:|---|---:|---:|---:|',
      ...cpu.map((c) => `| ${c.us} µs | ${c.mode} | ${c.p50ms.toFixed(3)} | ${c.p99ms.toFixed(3)} | ${c.rps.toFixed(0)} |`),
      '', `Pool dispatch overhead at 50 µs (p50, pool − inline): ${(((cpu.find((c) => c.us === 50 && c.mode === 'pool')?.p50ms ?? NaN) - (cpu.find((c) => c.us === 50 && c.mode === 'inline')?.p50ms ?? NaN)) * 1000).toFixed(0)} µs. Main-loop delay is not measured yet.`,
    ]),
    ...(soak.length === 0 ? [] : [
      '', `## Open-loop soak (S6): h2load --rps at 50 % and 80 % of the S1 peak (${peak.toFixed(0)} req/s), ${quick ? 5 : 60} s each`, '',
      '| load | req/s offered | mean ms | max ms | failed | RSS start → end MB | RSS slope MB/min |', '|---:|---:|---:|---:|---:|---:|---:|',
      ...soak.map((x) => `| ${x.share * 100} % | ${x.rate} | ${x.meanMs.toFixed(2)} | ${x.maxMs.toFixed(2)} | ${x.failed} | ${x.rssStartMb.toFixed(1)} → ${x.rssEndMb.toFixed(1)} | ${x.rssSlopeMbPerMin.toFixed(2)} |`),
    ]),
    ...(report.twoWorkers === undefined ? [] : [
      '', '## Two HTTP workers on both cores (S7): wrk -t2 -c64, nothing pinned', '',
      `Throughput ${report.twoWorkers.rps.toFixed(0)} req/s (${report.twoWorkers.rpsMin.toFixed(0)}–${report.twoWorkers.rpsMax.toFixed(0)}), p99 ${report.twoWorkers.p99ms.toFixed(2)} ms. Requests per worker thread are not measured yet.`,
    ]),
    '', `![S1 req/s at c=${smoke ? 32 : 64}](${base}-s1.svg)`, '', `![S4 cancel latency](${base}-s4.svg)`, '',
    ...(lifecycle.length === 0 ? [] : [`![S2 lifecycles](${base}-s2.svg)`, '', `![S3 CPU tools](${base}-s3.svg)`, '']),
  ];
  writeFileSync(join(results, `${base}-${date}.md`), `${lines.join('\n')}\n`);
  writeFileSync(join(results, `${base}-latest.md`), `${lines.join('\n')}\n`);
  if (!smoke && !quick) {
    writeFileSync(join(results, `${date}.md`), `${lines.join('\n')}\n`);
    writeFileSync(join(results, 'latest.md'), `${lines.join('\n')}\n`);
    writeFileSync(join(results, 'latest.json'), `${JSON.stringify(report, null, 2)}\n`);
  }
  const c = smoke ? 32 : 64;
  writeFileSync(join(results, `${base}-s1.svg`), svgBars(`S1 tools/call echo, req/s at c=${c} (one server core)`, report.rows.filter((r) => r.scenario === 'S1' && r.connections === c).map((r) => ({ label: r.label, value: r.rps })), 'req/s'));
  if (report.lifecycle.length > 0) {
    writeFileSync(join(results, `${base}-s2.svg`), svgBars('S2 session per call, lifecycles/s (one server core)', report.lifecycle.map((l) => ({ label: l.label, value: l.lifecyclesPerSecond })), '/s'));
  }
  writeFileSync(join(results, `${base}-s4.svg`), svgBars('S4 cancel → tool observed over HTTP, p50 ms', report.cancel.map((c) => ({ label: c.mode, value: c.p50ms })), 'ms'));
  if (cpu.length > 0) {
    writeFileSync(join(results, `${base}-s3.svg`), svgBars('S3 CPU tools, p50 ms at c=1', cpu.map((c) => ({ label: `${c.us} µs ${c.mode}`, value: c.p50ms })), 'ms'));
  }
  process.stdout.write(`${lines.join('\n')}\n`);
  if (smoke) {
    // Fails only on a gross regression, as a ratio to the ceiling measured in the same run.
    const share = ratios['Sluice / raw uWS ceiling, c=32']?.median ?? 0;
    if (!(share >= 0.15)) {
      process.stderr.write(`bench:smoke: Sluice reached only ${(share * 100).toFixed(0)} % of the raw uWS ceiling (floor 15 %)\n`);
      process.exit(1);
    }
    const cancelP50 = report.cancel[0]?.p50ms ?? Infinity;
    if (!(cancelP50 < 50)) {
      process.stderr.write(`bench:smoke: legacy cancel → observed p50 ${cancelP50} ms (floor 50 ms)\n`);
      process.exit(1);
    }
  }
  void med;
}

await main();
