/**
 * `npm run bench:slow-readers [-- --seconds N --attackers N --clients N --rss-bound-mb N]`: a
 * slow-reader soak. One Sluice server (two HTTP workers, bench/servers/sluice-slow-readers.mjs)
 * runs pinned to CPU 1; this process, pinned to CPU 0, drives it (perf-anchors §4).
 *
 * - Warm-up (2 s of echo, not recorded), so both phases see a JIT-warm server.
 * - Phase A (baseline): `clients` keep-alive loops call `echo` (2026-07-28 requests) for `seconds`.
 * - Phase B (attack), on the same server process, not restarted: it starts from phase A's warm
 *   heap, so its RSS growth is the attack's and not warm-up. `attackers` raw sockets each call
 *   `flood` on a text/event-stream reply (even attackers: legacy session, whose log level defaults
 *   to all; odd attackers: 2026-07-28 with _meta logLevel 'debug'), read the response head and then
 *   stop reading, so the kernel buffers fill and the server's writes back up. The same echo load
 *   runs alongside. An attacker the server closes reconnects after a short pause.
 *
 * Every second: server RSS (/proc/<pid>/status VmRSS) and /metrics. Every 250 ms the RSS growth
 * over the phase's start is checked against `--rss-bound-mb` (default 512): past it, the phase is
 * aborted at once (so an unbounded server cannot eat the box) and the run exits 1, as it does if the
 * server dies. Latency ratios are reported, not enforced. Only 127.0.0.1 is targeted, every loop is
 * bounded in time, and the attackers and the server are stopped at the end. Results:
 * bench/results/slow-readers-latest.{md,json,svg}.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { cpus } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pin, startServer, stopServer } from './process.js';
import type { Running } from './process.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const results = join(root, 'bench', 'results');

// ---------------------------------------------------------------------------------------------
// Options

interface Options { seconds: number; attackers: number; clients: number; rssBoundMb: number }

function numberArg(name: string, fallback: number): number {
  const i = process.argv.indexOf(name);
  if (i === -1) return fallback;
  const v = Number(process.argv[i + 1]);
  if (!Number.isFinite(v) || v <= 0) throw new Error(`${name} needs a positive number`);
  return v;
}

function parseOptions(): Options {
  return {
    seconds: numberArg('--seconds', 20),
    attackers: Math.round(numberArg('--attackers', 8)),
    clients: Math.round(numberArg('--clients', 16)),
    rssBoundMb: numberArg('--rss-bound-mb', 512),
  };
}

const kAccept = 'application/json, text/event-stream';
const kLegacy = '2025-11-25';
const kModern = '2026-07-28';
/** The /metrics series this benchmark reports (added with the backpressure work; may be absent). */
const kSeries = ['sluice_stream_buffered_bytes', 'sluice_progress_coalesced_total', 'sluice_logs_dropped_total', 'sluice_slow_readers_closed_total', 'sluice_client_limited_total', 'sluice_requests_in_flight'] as const;
type Series = (typeof kSeries)[number];
type Metrics = Partial<Record<Series, number>>;

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

// ---------------------------------------------------------------------------------------------
// Small HTTP and /proc helpers (soak.ts and http.ts keep theirs private and run on import)

interface Reply { status: number; body: string; headers: Record<string, string | string[] | undefined> }

/** One request to 127.0.0.1; rejects after `timeoutMs` so no loop can hang on a stalled server. */
function send(port: number, path: string, method: string, body: string | undefined, headers: Record<string, string>, agent: Agent | false, timeoutMs = 10_000): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path, method, agent, timeout: timeoutMs, headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString(), headers: res.headers }));
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end(body);
  });
}

function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? NaN : Number(m[1]) / 1024;
  } catch {
    return NaN; // the process is gone
  }
}

/** The series of kSeries that /metrics has (a series it lacks stays undefined: "missing"). */
async function readMetrics(port: number): Promise<Metrics> {
  const text = (await send(port, '/metrics', 'GET', undefined, {}, false, 2000)).body;
  const out: Metrics = {};
  for (const name of kSeries) {
    const m = new RegExp(`^${name} (\\S+)$`, 'm').exec(text);
    if (m !== null) out[name] = Number(m[1]);
  }
  return out;
}

function pct(xs: number[], p: number): number {
  if (xs.length === 0) return NaN;
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.floor((p / 100) * s.length))];
}

/**
 * Whether the server has closed (or reset) our connection from local port `localPort` to `port`,
 * from /proc/net/tcp. A paused attacker does not read, so it cannot see the close itself: a server
 * that closes a socket with unsent data queues its FIN behind that data, which our zero window
 * never lets through. The kernel knows, though: the server's end leaves ESTABLISHED (FIN_WAIT1
 * while the data is stuck), ours goes to CLOSE_WAIT if the FIN did arrive, and a reset end vanishes.
 */
function closedByServer(port: number, localPort: number): boolean {
  let ours: number | undefined;
  let theirs: number | undefined;
  for (const line of readFileSync('/proc/net/tcp', 'utf8').split('\n').slice(1)) {
    const f = line.trim().split(/\s+/);
    if (f.length < 4) continue;
    const local = parseInt(f[1].split(':')[1], 16);
    const remote = parseInt(f[2].split(':')[1], 16);
    if (local === localPort && remote === port) ours = parseInt(f[3], 16);
    else if (local === port && remote === localPort) theirs = parseInt(f[3], 16);
  }
  return ours !== kEstablished || theirs !== kEstablished;
}
const kEstablished = 0x01;

// ---------------------------------------------------------------------------------------------
// Well-behaved load: closed-loop echo calls on keep-alive connections

interface EchoStats { latenciesMs: number[]; ok: number; errors: number; wrong: number; seconds: number }

/** A 2026-07-28 echo (no session to set up, so every loop is the same request shape). */
function echoRequest(id: number): { body: string; headers: Record<string, string> } {
  const meta = { 'io.modelcontextprotocol/protocolVersion': kModern, 'io.modelcontextprotocol/clientCapabilities': {} };
  return {
    body: JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: `e${id}` }, _meta: meta } }),
    headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': kModern, 'mcp-method': 'tools/call', 'mcp-name': 'echo' },
  };
}

/** `clients` loops calling echo until `untilMs` or `signal` aborts; only successful calls are timed. */
async function echoLoad(port: number, clients: number, untilMs: number, signal: AbortSignal): Promise<EchoStats> {
  const agent = new Agent({ keepAlive: true, maxSockets: clients });
  const stats: EchoStats = { latenciesMs: [], ok: 0, errors: 0, wrong: 0, seconds: 0 };
  const started = performance.now();
  let nextId = 1;
  await Promise.all(Array.from({ length: clients }, async () => {
    while (Date.now() < untilMs && !signal.aborted) {
      const id = nextId++;
      const { body, headers } = echoRequest(id);
      const t0 = performance.now();
      try {
        const r = await send(port, '/mcp', 'POST', body, headers, agent);
        if (r.status !== 200 || !r.body.includes(`"e${id}"`)) { stats.wrong++; continue; }
        stats.latenciesMs.push(performance.now() - t0);
        stats.ok++;
      } catch {
        stats.errors++;
        await sleep(50); // a refused or reset connection must not turn into a busy loop
      }
    }
  }));
  stats.seconds = (performance.now() - started) / 1000;
  agent.destroy();
  return stats;
}

// ---------------------------------------------------------------------------------------------
// Attackers: flood calls whose readers stop reading after the response head

interface AttackStats {
  connects: number;
  /** 200 with text/event-stream: the server is streaming into a reader that does not read. */
  streaming: number;
  /** Any other first answer (a 429, a JSON reply, ...): the attacker closes and reconnects. */
  refused: number;
  closedByServer: number;
  /** Legacy floods started, for cancelling them at the end (a disconnect does not cancel those). */
  legacyCalls: { session: string; id: number }[];
}

interface AttackerPlan { index: number; era: 'legacy' | 'modern'; session?: string }

/** The raw HTTP/1.1 request of one flood call, running at most `ms`. */
function floodRequest(plan: AttackerPlan, id: number, ms: number): string {
  const meta: Record<string, unknown> = { progressToken: `p${id}` };
  const headers: Record<string, string> = { host: '127.0.0.1', 'content-type': 'application/json', accept: kAccept };
  if (plan.era === 'modern') {
    Object.assign(meta, { 'io.modelcontextprotocol/protocolVersion': kModern, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/logLevel': 'debug' });
    Object.assign(headers, { 'mcp-protocol-version': kModern, 'mcp-method': 'tools/call', 'mcp-name': 'flood' });
  } else {
    Object.assign(headers, { 'mcp-protocol-version': kLegacy, 'mcp-session-id': plan.session! });
  }
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'flood', arguments: { ms }, _meta: meta } });
  headers['content-length'] = String(Buffer.byteLength(body));
  return `POST /mcp HTTP/1.1\r\n${Object.entries(headers).map(([k, v]) => `${k}: ${v}\r\n`).join('')}\r\n${body}`;
}

/** A legacy session for a legacy attacker (logging defaults to every level there). */
async function legacySession(port: number): Promise<string> {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: kLegacy, capabilities: {}, clientInfo: { name: 'slow-reader', version: '1' } } });
  const r = await send(port, '/mcp', 'POST', init, { 'content-type': 'application/json', accept: kAccept }, false);
  const session = r.headers['mcp-session-id'];
  if (r.status !== 200 || typeof session !== 'string') throw new Error(`initialize: ${r.status} ${r.body.slice(0, 200)}`);
  const headers = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': kLegacy, 'mcp-session-id': session };
  await send(port, '/mcp', 'POST', JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers, false);
  return session;
}

/**
 * Opens one flood call and holds it without reading until the server closes it or `signal`
 * aborts. Returns whether the server closed it.
 */
function holdOneCall(port: number, plan: AttackerPlan, id: number, ms: number, stats: AttackStats, signal: AbortSignal): Promise<boolean> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    let done = false;
    let watch: NodeJS.Timeout | undefined;
    const finish = (closedByServer: boolean) => {
      if (done) return;
      done = true;
      clearInterval(watch);
      signal.removeEventListener('abort', onAbort);
      socket.destroy();
      resolve(closedByServer);
    };
    const onAbort = () => finish(false);
    signal.addEventListener('abort', onAbort);
    socket.on('error', () => finish(true));
    socket.on('close', () => finish(true));
    socket.once('connect', () => {
      stats.connects++;
      if (plan.era === 'legacy') stats.legacyCalls.push({ session: plan.session!, id });
      socket.write(floodRequest(plan, id, ms));
      // Node stops reading from the kernel (readStop) once its 16 kB buffer is full; after that the
      // server's writes pile up in the kernel buffers and then in the server.
      const localPort = socket.localPort!;
      watch = setInterval(() => { if (closedByServer(port, localPort)) finish(true); }, 500);
    });
    socket.once('data', (head: Buffer) => {
      socket.pause(); // stop reading: from here on the reader is "slow" (stopped)
      const text = head.toString('latin1');
      if (/^HTTP\/1\.1 200/.test(text) && /content-type: text\/event-stream/i.test(text)) stats.streaming++;
      else { stats.refused++; finish(false); }
    });
  });
}

/** One attacker: holds a flood call, and reconnects after a pause when the server closes it. */
async function attacker(port: number, plan: AttackerPlan, untilMs: number, stats: AttackStats, signal: AbortSignal, ids: { next: number }): Promise<void> {
  while (Date.now() < untilMs && !signal.aborted) {
    // The tool runs until the phase ends (+1 s), so legacy calls do not outlive the phase by much.
    const ms = Math.max(1000, untilMs - Date.now() + 1000);
    if (await holdOneCall(port, plan, ids.next++, ms, stats, signal)) stats.closedByServer++;
    if (!signal.aborted) await sleep(250);
  }
}

/** Legacy floods are not cancelled by a disconnect: cancel them the way a client would. */
async function cancelLegacyCalls(port: number, calls: { session: string; id: number }[]): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const queue = [...calls];
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
      const headers = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': kLegacy, 'mcp-session-id': c.session };
      const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: c.id, reason: 'slow-readers bench: phase over' } });
      await send(port, '/mcp', 'POST', body, headers, agent, 2000).catch(() => undefined);
    }
  }));
  agent.destroy();
}

// ---------------------------------------------------------------------------------------------
// Watching the server: RSS and /metrics every second, the RSS bound every 250 ms

interface Watch {
  /** [seconds since the phase started, RSS MB] once a second. */
  rss: [number, number][];
  metrics: { t: number; values: Metrics }[];
  startRssMb: number;
  peakRssMb: number;
  /** Seconds into the phase when RSS growth passed the bound, if it did. */
  boundExceededAt: number | undefined;
  stop(): void;
}

function watchServer(server: Running, boundMb: number, abort: AbortController): Watch {
  const t0 = Date.now();
  const at = () => (Date.now() - t0) / 1000;
  const start = rssMb(server.pid);
  const w: Watch = { rss: [[0, start]], metrics: [], startRssMb: start, peakRssMb: start, boundExceededAt: undefined, stop: () => {} };
  const guard = setInterval(() => {
    const now = rssMb(server.pid);
    if (now > w.peakRssMb) w.peakRssMb = now;
    if (w.boundExceededAt === undefined && now - start > boundMb) {
      w.boundExceededAt = at();
      w.rss.push([w.boundExceededAt, now]);
      abort.abort(); // stop the attack now: an unbounded server would otherwise eat the machine
    }
  }, 250);
  let reading = false;
  const sampler = setInterval(() => {
    w.rss.push([at(), rssMb(server.pid)]);
    if (reading) return; // a /metrics read still waiting on a busy worker: skip, do not pile up
    reading = true;
    const t = at();
    readMetrics(server.port).then((values) => { w.metrics.push({ t, values }); }, () => undefined).finally(() => { reading = false; });
  }, 1000);
  w.stop = () => { clearInterval(guard); clearInterval(sampler); };
  return w;
}

// ---------------------------------------------------------------------------------------------
// Phases

interface PhaseResult {
  name: 'baseline' | 'attack';
  echo: { calls: number; errors: number; wrong: number; seconds: number; rps: number; p50ms: number; p99ms: number; maxMs: number };
  rss: { startMb: number; peakMb: number; endMb: number; growthMb: number; settledMb: number | undefined; samples: [number, number][] };
  boundExceededAt: number | undefined;
  attack: Omit<AttackStats, 'legacyCalls'> & { legacyCalls: number } | undefined;
  /** Peak of the gauges, change of the counters over the phase; null: the series is missing. */
  metrics: Record<Series, number | null>;
  serverDied: boolean;
}

function summarizeMetrics(before: Metrics, samples: { values: Metrics }[], after: Metrics): Record<Series, number | null> {
  const out = {} as Record<Series, number | null>;
  for (const name of kSeries) {
    const seen = [before, ...samples.map((s) => s.values), after].map((m) => m[name]).filter((v): v is number => v !== undefined);
    if (seen.length === 0) { out[name] = null; continue; }
    // Gauges: the peak seen in the phase. Counters: how much they grew over it.
    out[name] = name.endsWith('_total') ? (after[name] ?? Math.max(...seen)) - (before[name] ?? 0) : Math.max(...seen);
  }
  return out;
}

async function safeMetrics(port: number): Promise<Metrics> {
  return readMetrics(port).catch(() => ({}));
}

/** Runs one phase; with `attackers` > 0, the attackers start 1 s before the echo load. */
async function runPhase(name: PhaseResult['name'], server: Running, o: Options, attackers: number): Promise<PhaseResult> {
  const abort = new AbortController();
  let serverDied = false;
  const onExit = () => { serverDied = true; abort.abort(); };
  server.child.once('exit', onExit);
  const before = await safeMetrics(server.port);
  const watch = watchServer(server, o.rssBoundMb, abort);
  const rampMs = attackers > 0 ? 1000 : 0;
  const untilMs = Date.now() + rampMs + o.seconds * 1000;
  const stats: AttackStats = { connects: 0, streaming: 0, refused: 0, closedByServer: 0, legacyCalls: [] };
  const plans: AttackerPlan[] = [];
  for (let i = 0; i < attackers; i++) {
    plans.push(i % 2 === 0 ? { index: i, era: 'legacy', session: await legacySession(server.port) } : { index: i, era: 'modern' });
  }
  const ids = { next: 1_000_000 };
  const attack = Promise.all(plans.map((p) => attacker(server.port, p, untilMs, stats, abort.signal, ids)));
  if (rampMs > 0) await sleep(rampMs); // let the attackers' buffers start to fill first
  const echo = abort.signal.aborted ? { latenciesMs: [], ok: 0, errors: 0, wrong: 0, seconds: 0 } : await echoLoad(server.port, o.clients, untilMs, abort.signal);
  abort.abort(); // ends the attackers (they hang up) if the echo load finished first
  await attack;
  const endRss = rssMb(server.pid);
  const after = serverDied ? {} : await safeMetrics(server.port);
  watch.stop();
  // After the attack: stop the legacy floods, then give the server a moment and see what RSS it keeps.
  let settledMb: number | undefined;
  if (attackers > 0 && !serverDied) {
    await cancelLegacyCalls(server.port, stats.legacyCalls);
    for (let i = 0; i < 20 && (await safeMetrics(server.port)).sluice_requests_in_flight !== 0; i++) await sleep(250);
    await sleep(2000);
    settledMb = rssMb(server.pid);
  }
  server.child.off('exit', onExit);
  const l = echo.latenciesMs;
  return {
    name,
    echo: { calls: echo.ok, errors: echo.errors, wrong: echo.wrong, seconds: echo.seconds, rps: echo.ok / Math.max(1e-9, echo.seconds), p50ms: pct(l, 50), p99ms: pct(l, 99), maxMs: l.reduce((x, y) => Math.max(x, y), -Infinity) },
    rss: { startMb: watch.startRssMb, peakMb: Math.max(watch.peakRssMb, endRss || 0), endMb: endRss, growthMb: Math.max(watch.peakRssMb, endRss || 0) - watch.startRssMb, settledMb, samples: watch.rss },
    boundExceededAt: watch.boundExceededAt,
    attack: attackers > 0 ? { ...stats, legacyCalls: stats.legacyCalls.length } : undefined,
    metrics: summarizeMetrics(before, watch.metrics, after),
    serverDied,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const f = (x: number | undefined, d: number) => (x !== undefined && Number.isFinite(x) ? x.toFixed(d) : '–');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/** RSS over time for both phases (one line each, the bound dashed), then the two p99 bars. */
function svgChart(a: PhaseResult, b: PhaseResult, boundMb: number): string {
  const w = 720;
  const plot = { x: 60, y: 40, w: 620, h: 220 };
  const all = [...a.rss.samples, ...b.rss.samples];
  const tMax = Math.max(1, ...all.map(([t]) => t));
  const yMax = Math.max(1, ...all.map(([, v]) => v), b.rss.startMb + boundMb) * 1.05;
  const px = (t: number) => plot.x + (t / tMax) * plot.w;
  const py = (v: number) => plot.y + plot.h - (v / yMax) * plot.h;
  const line = (s: [number, number][], color: string) => `<polyline fill="none" stroke="${color}" stroke-width="2" points="${s.filter(([, v]) => Number.isFinite(v)).map(([t, v]) => `${px(t).toFixed(1)},${py(v).toFixed(1)}`).join(' ')}"/>`;
  const boundY = py(b.rss.startMb + boundMb).toFixed(1);
  const bars = [{ label: 'p99 baseline', value: a.echo.p99ms, color: '#2f6db5' }, { label: 'p99 attack', value: b.echo.p99ms, color: '#c0392b' }];
  const barMax = Math.max(1e-9, ...bars.map((x) => (Number.isFinite(x.value) ? x.value : 0)));
  const barRows = bars.map((x, i) => {
    const y = 320 + i * 30;
    const len = Math.max(1, ((Number.isFinite(x.value) ? x.value : 0) / barMax) * 380);
    return `<text x="10" y="${y + 14}" font-size="12">${x.label}</text><rect x="120" y="${y + 2}" width="${len.toFixed(1)}" height="18" fill="${x.color}"/><text x="${(126 + len).toFixed(1)}" y="${y + 15}" font-size="12">${f(x.value, 2)} ms</text>`;
  }).join('\n');
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="390" viewBox="0 0 ${w} 390" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="${w}" height="390" fill="#fff"/>`,
    `<text x="10" y="22" font-size="14" font-weight="bold">${esc('Slow readers: server RSS (MB) over each phase; echo p99 per phase')}</text>`,
    `<line x1="${plot.x}" y1="${plot.y + plot.h}" x2="${plot.x + plot.w}" y2="${plot.y + plot.h}" stroke="#888"/><line x1="${plot.x}" y1="${plot.y}" x2="${plot.x}" y2="${plot.y + plot.h}" stroke="#888"/>`,
    `<text x="${plot.x - 6}" y="${plot.y + 4}" font-size="11" text-anchor="end">${f(yMax, 0)}</text><text x="${plot.x - 6}" y="${plot.y + plot.h}" font-size="11" text-anchor="end">0</text>`,
    `<text x="${plot.x + plot.w}" y="${plot.y + plot.h + 16}" font-size="11" text-anchor="end">${f(tMax, 0)} s</text>`,
    `<line x1="${plot.x}" y1="${boundY}" x2="${plot.x + plot.w}" y2="${boundY}" stroke="#c0392b" stroke-dasharray="4 4"/><text x="${plot.x + plot.w}" y="${Number(boundY) - 4}" font-size="11" text-anchor="end">attack start + ${boundMb} MB bound</text>`,
    line(a.rss.samples, '#2f6db5'), line(b.rss.samples, '#c0392b'),
    `<text x="${plot.x + 10}" y="${plot.y + 14}" font-size="12" fill="#2f6db5">baseline</text><text x="${plot.x + 80}" y="${plot.y + 14}" font-size="12" fill="#c0392b">attack</text>`,
    barRows,
    '</svg>', '',
  ].join('\n');
}

function markdown(report: Report): string {
  const [a, b] = [report.baseline, report.attack];
  const m = (x: number | null, unit = '') => (x === null ? 'missing' : `${x}${unit}`);
  const bound = b.boundExceededAt === undefined ? `within the ${report.options.rssBoundMb} MB bound` : `**bound exceeded at t=${f(b.boundExceededAt, 1)} s** (${report.options.rssBoundMb} MB; attack aborted)`;
  return [
    `# Slow-reader soak (${report.options.seconds} s per phase, ${report.options.clients} echo clients, ${report.options.attackers} attackers)`, '',
    `- Date: ${report.date}; machine: ${report.machine}; server pinned to CPU 1, this load generator to CPU 0: ${report.pinned}`,
    `- Command: \`${report.command}\``,
    '- Server: bench/servers/sluice-slow-readers.mjs, two HTTP workers, the same process for both phases (not restarted; phase B starts from phase A\'s warm heap)',
    `- Attackers: ${Math.ceil(report.options.attackers / 2)} legacy (session, every log level) + ${Math.floor(report.options.attackers / 2)} 2026-07-28 (_meta logLevel debug), each a \`flood\` call with a progress token on a raw socket paused after the response head; a server close is seen through the kernel's TCP states of both ends (/proc/net/tcp) and followed by a reconnect 250 ms later`,
    `- Verdict: ${report.verdict}`, '',
    '| | baseline | attack |', '|---|---:|---:|',
    `| echo calls (errors, wrong) | ${a.echo.calls} (${a.echo.errors}, ${a.echo.wrong}) | ${b.echo.calls} (${b.echo.errors}, ${b.echo.wrong}) |`,
    `| echo seconds measured | ${f(a.echo.seconds, 1)} | ${f(b.echo.seconds, 1)} |`,
    `| echo req/s | ${f(a.echo.rps, 0)} | ${f(b.echo.rps, 0)} |`,
    `| echo p50 / p99 / max ms | ${f(a.echo.p50ms, 2)} / ${f(a.echo.p99ms, 2)} / ${f(a.echo.maxMs, 1)} | ${f(b.echo.p50ms, 2)} / ${f(b.echo.p99ms, 2)} / ${f(b.echo.maxMs, 1)} |`,
    `| RSS start / peak / end MB | ${f(a.rss.startMb, 1)} / ${f(a.rss.peakMb, 1)} / ${f(a.rss.endMb, 1)} | ${f(b.rss.startMb, 1)} / ${f(b.rss.peakMb, 1)} / ${f(b.rss.endMb, 1)} |`,
    `| RSS growth MB | ${f(a.rss.growthMb, 1)} | ${f(b.rss.growthMb, 1)} (${bound}) |`,
    `| RSS after the attackers left (+2 s) MB | – | ${f(b.rss.settledMb, 1)} |`,
    ...kSeries.map((s) => `| ${s} (${s.endsWith('_total') ? 'increase' : 'peak'}) | ${m(a.metrics[s])} | ${m(b.metrics[s])} |`),
    '', '| ratio (same run) | value | target |', '|---|---:|---:|',
    `| echo p99 attack / baseline | ${f(report.p99Ratio, 2)} | ≤ 2 |`,
    `| echo p50 attack / baseline | ${f(b.echo.p50ms / a.echo.p50ms, 2)} | |`,
    `| echo req/s attack / baseline | ${f(report.throughputRatio, 2)} | |`, '',
    `Attack: ${b.attack?.connects ?? 0} flood calls opened, ${b.attack?.streaming ?? 0} answered with a stream, ${b.attack?.refused ?? 0} answered otherwise, ${b.attack?.closedByServer ?? 0} closed by the server; ${b.attack?.legacyCalls ?? 0} legacy calls cancelled afterwards.`, '',
    `The echo load is closed-loop (${report.options.clients} keep-alive loops), so its latencies understate queueing under overload (coordinated omission); compare the two phases, not absolute values. Metrics: gauges show the peak of the once-a-second /metrics reads, counters their increase over the phase; "missing" means the server does not export the series.`, '',
    '![RSS over time and p99](slow-readers-latest.svg)', '',
  ].join('\n');
}

interface Report {
  date: string; machine: string; pinned: boolean; command: string; options: Options;
  baseline: PhaseResult; attack: PhaseResult;
  p99Ratio: number; throughputRatio: number; p99Met: boolean; grossFailure: string | undefined; verdict: string;
}

function writeReport(report: Report): string {
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'slow-readers-latest.json'), `${JSON.stringify(report, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  const md = markdown(report);
  writeFileSync(join(results, 'slow-readers-latest.md'), md);
  writeFileSync(join(results, 'slow-readers-latest.svg'), svgChart(report.baseline, report.attack, report.options.rssBoundMb));
  return md;
}

// ---------------------------------------------------------------------------------------------

/** Pins this process (every thread) to CPU 0, away from the server on CPU 1. */
function pinSelf(): void {
  if (pin) execFileSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });
}

async function main(): Promise<void> {
  const o = parseOptions();
  pinSelf();
  const server = await startServer([join(root, 'bench', 'servers', 'sluice-slow-readers.mjs')], 1);
  let baseline: PhaseResult;
  let attack: PhaseResult;
  try {
    // Warm-up: JIT and heaps of both workers, not recorded.
    await echoLoad(server.port, o.clients, Date.now() + 2000, new AbortController().signal);
    baseline = await runPhase('baseline', server, o, 0);
    attack = baseline.serverDied ? baseline : await runPhase('attack', server, o, o.attackers);
  } finally {
    await stopServer(server);
  }
  const p99Ratio = attack.echo.p99ms / baseline.echo.p99ms;
  const throughputRatio = attack.echo.rps / baseline.echo.rps;
  const grossFailure = baseline.serverDied || attack.serverDied ? 'the server died'
    : attack.boundExceededAt !== undefined ? `RSS growth during the attack passed ${o.rssBoundMb} MB (bound exceeded at t=${attack.boundExceededAt.toFixed(1)} s)`
      : undefined;
  const p99Met = p99Ratio <= 2;
  const verdict = grossFailure !== undefined ? `FAILED: ${grossFailure}`
    : `RSS bounded (grew ${attack.rss.growthMb.toFixed(1)} MB under attack); echo p99 ratio ${p99Ratio.toFixed(2)} ${p99Met ? 'within' : '**above**'} the 2× target`;
  const args = process.argv.slice(2).join(' ');
  const report: Report = {
    date: new Date().toISOString(), machine: `${cpus()[0]?.model ?? '?'} × ${cpus().length}, node ${process.version}`, pinned: pin,
    command: `npm run bench:slow-readers${args === '' ? '' : ` -- ${args}`}`, options: o,
    baseline, attack, p99Ratio, throughputRatio, p99Met, grossFailure, verdict,
  };
  process.stdout.write(writeReport(report));
  if (grossFailure !== undefined) {
    process.stderr.write(`bench:slow-readers: ${grossFailure}\n`);
    process.exitCode = 1;
  }
}

await main();
