/**
 * `npm run bench` (full) and `npm run bench:smoke` (short, for CI): HTTP scenarios of issue 6.
 *
 * Each server runs in its own process pinned to CPU 1, the load generator (wrk) to CPU 0, as
 * perf-anchors §4 recommends for a 2-core box; servers are interleaved within each repeat, and
 * every ratio compares figures from the same run. Sample responses are checked for a correct
 * JSON-RPC result before a server is measured. Results go to bench/results/.
 *
 * Scenarios here: S0 (calibration), S1 (tools/call echo), S4 (cancel → observed over HTTP).
 * Not built yet: S2 (session per call), S3 (pool vs inline CPU tools), S6 (open-loop soak),
 * S7 (two HTTP workers); S5 is `npm run bench:registry`.
 */
import { execFileSync, spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, writeFileSync, existsSync } from 'node:fs';
import { request, Agent } from 'node:http';
import { cpus, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';

const smoke = process.argv.includes('--smoke');
const root = fileURLToPath(new URL('../../', import.meta.url));
const servers = join(root, 'bench', 'servers');
const results = join(root, 'bench', 'results');
const work = mkdtempSync(join(tmpdir(), 'sluice-bench-'));
const pin = existsSync('/usr/bin/taskset') && cpus().length >= 2;

interface Running { child: ChildProcess; port: number; pid: number }

function ensureTools(): void {
  const missing = ['wrk'].filter((t) => { try { execFileSync('which', [t]); return false; } catch { return true; } });
  if (missing.length === 0) return;
  process.stderr.write(`bench: installing ${missing.join(', ')} (Debian packages)\n`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', 'wrk'], { stdio: 'ignore' });
}

async function start(script: string, args: string[] = []): Promise<Running> {
  const cmd = pin ? 'taskset' : process.execPath;
  const argv = pin ? ['-c', '1', process.execPath, join(servers, script), ...args] : [join(servers, script), ...args];
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

async function wrk(port: number, e: Endpoint, connections: number, seconds: number, serverPid: number): Promise<WrkResult> {
  const script = join(work, `req-${port}.lua`);
  const headers = Object.entries(e.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n');
  writeFileSync(script, `wrk.method = ${JSON.stringify(e.method)}\n${e.body === undefined ? '' : `wrk.body = ${JSON.stringify(e.body)}\n`}${headers}\n`);
  const url = `http://127.0.0.1:${port}${e.path}`;
  const args = ['-t1', `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const cpu0 = pin ? cpuTimes(0) : [0, 1];
  const serverBefore = cpuSeconds(serverPid);
  const out = await new Promise<string>((resolve, reject) => {
    const child = spawn(pin ? 'taskset' : 'wrk', pin ? ['-c', '0', 'wrk', ...args] : args);
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
  const seconds = smoke ? 2 : 8;
  const reps = smoke ? 1 : 3;
  const rows: Row[] = [];
  const started = Date.now();
  if (!smoke) await s0(rows, seconds, reps);
  await s1(rows, seconds, reps, smoke ? [32] : [1, 32, 64], smoke ? contenders.slice(0, 2) : contenders);
  const latency = await s4(smoke ? 30 : 200);

  const med = (label: string, c: number, pick: (r: WrkResult) => number) => median(rows.find((r) => r.scenario === 'S1' && r.label === label && r.connections === c)?.runs.map(pick) ?? []);
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
    ratio(`Sluice / SDK v1 stateful, c=${c}`, sluice, contenders[3].label, c);
    ratio(`Sluice / SDK v1 stateless, c=${c}`, sluice, contenders[2].label, c);
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
    durationSeconds: Math.round((Date.now() - started) / 1000),
  };
  mkdirSync(results, { recursive: true });
  const base = smoke ? 'http-smoke' : 'http';
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
    '', `![S1 req/s at c=${smoke ? 32 : 64}](${base}-s1.svg)`, '',
  ];
  writeFileSync(join(results, `${base}-${date}.md`), `${lines.join('\n')}\n`);
  writeFileSync(join(results, `${base}-latest.md`), `${lines.join('\n')}\n`);
  const c = smoke ? 32 : 64;
  writeFileSync(join(results, `${base}-s1.svg`), svgBars(`S1 tools/call echo, req/s at c=${c} (one server core)`, report.rows.filter((r) => r.scenario === 'S1' && r.connections === c).map((r) => ({ label: r.label, value: r.rps })), 'req/s'));
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
