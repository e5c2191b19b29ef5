/**
 * `npm run bench:slow-readers [-- --seconds N --attackers N --clients N --rss-bound-mb N --flood-mode burst|tight]`:
 * a slow-reader soak. One Sluice server (two HTTP workers, bench/servers/sluice-slow-readers.mjs)
 * runs pinned to CPU 1; this process, pinned to CPU 0, drives it (perf-anchors §4).
 *
 * Three phases on the same server process (not restarted), always in this order, each with the
 * same echo load for the same `seconds`:
 * - Warm-up (2 s of echo, not recorded), so every phase sees a JIT-warm server.
 * - Phase A "baseline": `clients` keep-alive loops call `echo` (2026-07-28 requests), nothing else.
 * - Phase B "reading": the same echo load plus `attackers` raw sockets, each calling `flood` on a
 *   text/event-stream reply (even attackers: legacy session, whose log level defaults to all; odd
 *   attackers: 2026-07-28 with _meta logLevel 'debug') and READING the stream (drained, discarded).
 *   This is the tool load without the attack.
 * - Phase C "stalled": the same attackers and flood calls, but each reads the response head and
 *   then stops reading, so the kernel buffers fill and the server's writes back up (the attack). An
 *   attacker the server closes reconnects after a short pause.
 * In B and C the attackers start 1 s before the echo load. C/B is the slow readers' own effect on
 * the echo p99 (the issue's "within 2x of the no-attack run" is judged on it); C/A and B/A are
 * reported for information (B/A is the cost of the flood tool itself).
 *
 * `flood` modes (`--flood-mode`): 'burst' (default), a realistic chatty tool: 10 progress + 10 log
 * messages of 1 kB, then a 1 ms timer, until the phase ends or it is cancelled; 'tight', the old CPU
 * burner (as fast as it can, setImmediate every 50 iterations), whose own CPU cost dominates.
 *
 * Every second: server RSS (/proc/<pid>/status VmRSS) and /metrics; per phase also the server's and
 * this process's CPU time. Every 250 ms the RSS growth over the phase's start is checked against
 * `--rss-bound-mb` (default 512): past it, the phase is aborted at once (so an unbounded server
 * cannot eat the box) and the run exits 1, as it does if the server dies. Latency ratios are
 * reported, not enforced. Only 127.0.0.1 is targeted, every loop is bounded in time, and the
 * attackers and the server are stopped at the end. Results: bench/results/slow-readers-latest.{md,json,svg}.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { cpus, loadavg } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { pin, startServer, stopServer } from './process.js';
import type { Running } from './process.js';

const root = fileURLToPath(new URL('../../', import.meta.url));
const results = join(root, 'bench', 'results');

// ---------------------------------------------------------------------------------------------
// Options

type FloodMode = 'burst' | 'tight';
interface Options { seconds: number; attackers: number; clients: number; rssBoundMb: number; floodMode: FloodMode }

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
    floodMode: floodModeArg(),
  };
}

function floodModeArg(): FloodMode {
  const i = process.argv.indexOf('--flood-mode');
  if (i === -1) return 'burst';
  const v = process.argv[i + 1];
  if (v !== 'burst' && v !== 'tight') throw new Error('--flood-mode needs burst or tight');
  return v;
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

const kClockTicks = (() => {
  try { return Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100; } catch { return 100; }
})();

/** CPU seconds (user + system, every thread) the process has used; NaN once it is gone. */
function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
    return (Number(rest[11]) + Number(rest[12])) / kClockTicks; // fields 14 (utime) and 15 (stime)
  } catch {
    return NaN;
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
// Attackers: flood calls whose readers either drain the stream (phase B) or stop reading after
// the response head (phase C)

type AttackMode = 'reading' | 'stalled';

interface AttackStats {
  connects: number;
  /** 200 with text/event-stream: the server is streaming to the attacker. */
  streaming: number;
  /** Any other first answer (a 429, a JSON reply, ...): the attacker closes and reconnects. */
  refused: number;
  closedByServer: number;
  /** Reading attackers only: flood calls the server finished (reply ended) before the phase did. */
  completed: number;
  /** Bytes the attackers read (in C, only what arrived before they stopped reading). */
  bytesRead: number;
  /** Legacy floods started, for cancelling them at the end (a disconnect does not cancel those). */
  legacyCalls: { session: string; id: number }[];
}

interface AttackerPlan { index: number; era: 'legacy' | 'modern'; session?: string }

/** The raw HTTP/1.1 request of one flood call, running at most `ms`. */
function floodRequest(plan: AttackerPlan, id: number, ms: number, floodMode: FloodMode): string {
  const meta: Record<string, unknown> = { progressToken: `p${id}` };
  const headers: Record<string, string> = { host: '127.0.0.1', 'content-type': 'application/json', accept: kAccept };
  if (plan.era === 'modern') {
    Object.assign(meta, { 'io.modelcontextprotocol/protocolVersion': kModern, 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/logLevel': 'debug' });
    Object.assign(headers, { 'mcp-protocol-version': kModern, 'mcp-method': 'tools/call', 'mcp-name': 'flood' });
  } else {
    Object.assign(headers, { 'mcp-protocol-version': kLegacy, 'mcp-session-id': plan.session! });
  }
  const body = JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'flood', arguments: { ms, mode: floodMode }, _meta: meta } });
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

/** The last chunk of a chunked HTTP/1.1 body: the flood reply is over. */
const kChunkedEnd = Buffer.from('\r\n0\r\n\r\n', 'latin1');

/**
 * Opens one flood call and holds it until the server closes it, its reply ends (reading mode) or
 * `signal` aborts. 'reading': every byte is read and discarded. 'stalled': the response head is
 * read, then nothing. Returns whether the server closed it.
 */
function holdOneCall(port: number, plan: AttackerPlan, id: number, ms: number, mode: AttackMode, floodMode: FloodMode, stats: AttackStats, signal: AbortSignal): Promise<boolean> {
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
      socket.write(floodRequest(plan, id, ms, floodMode));
      if (mode === 'stalled') {
        // Node stops reading from the kernel (readStop) once its 16 kB buffer is full; after that
        // the server's writes pile up in the kernel buffers and then in the server. A paused socket
        // does not see the server's close, so the kernel's view of it is polled.
        const localPort = socket.localPort!;
        watch = setInterval(() => { if (closedByServer(port, localPort)) finish(true); }, 500);
      }
    });
    let first = true;
    let tail = Buffer.alloc(0);
    socket.on('data', (chunk: Buffer) => {
      stats.bytesRead += chunk.length;
      if (first) {
        first = false;
        if (mode === 'stalled') socket.pause(); // stop reading: from here on the reader is "slow" (stopped)
        const text = chunk.toString('latin1');
        if (/^HTTP\/1\.1 200/.test(text) && /content-type: text\/event-stream/i.test(text)) stats.streaming++;
        else { stats.refused++; finish(false); return; }
      }
      if (mode === 'reading') {
        // Drain and discard; only the last bytes are kept, to see the end of the reply.
        tail = Buffer.concat([tail, chunk.subarray(Math.max(0, chunk.length - kChunkedEnd.length))]).subarray(-kChunkedEnd.length);
        if (tail.equals(kChunkedEnd)) { stats.completed++; finish(false); }
      }
    });
  });
}

/** One attacker: holds a flood call, and opens another after a pause when that one is over. */
async function attacker(port: number, plan: AttackerPlan, mode: AttackMode, floodMode: FloodMode, untilMs: number, stats: AttackStats, signal: AbortSignal, ids: { next: number }): Promise<void> {
  while (Date.now() < untilMs && !signal.aborted) {
    // The tool runs until the phase ends (+1 s), so legacy calls do not outlive the phase by much.
    const ms = Math.max(1000, untilMs - Date.now() + 1000);
    if (await holdOneCall(port, plan, ids.next++, ms, mode, floodMode, stats, signal)) stats.closedByServer++;
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
  /** When the phase started (Date.now()), to place it on the run's timeline. */
  startedAt: number;
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
  const w: Watch = { startedAt: t0, rss: [[0, start]], metrics: [], startRssMb: start, peakRssMb: start, boundExceededAt: undefined, stop: () => {} };
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

type PhaseName = 'baseline' | 'reading' | 'stalled';
const kPhases: { name: PhaseName; letter: string; label: string; color: string }[] = [
  { name: 'baseline', letter: 'A', label: 'A baseline (echo only)', color: '#2f6db5' },
  { name: 'reading', letter: 'B', label: 'B reading (flood, streams drained)', color: '#27ae60' },
  { name: 'stalled', letter: 'C', label: 'C stalled (flood, readers stopped)', color: '#c0392b' },
];

interface PhaseResult {
  name: PhaseName;
  /** Seconds from the first phase's start to this one's (the SVG's timeline). */
  offsetS: number;
  echo: { calls: number; errors: number; wrong: number; seconds: number; rps: number; p50ms: number; p99ms: number; maxMs: number };
  rss: { startMb: number; peakMb: number; endMb: number; growthMb: number; settledMb: number | undefined; samples: [number, number][] };
  /** CPU seconds per wall second over the phase (ramp included): the server (pinned to CPU 1, so 1 = saturated) and this load generator (CPU 0). */
  cpu: { wallS: number; server: number; generator: number };
  boundExceededAt: number | undefined;
  attack: (Omit<AttackStats, 'legacyCalls'> & { mode: AttackMode; legacyCalls: number }) | undefined;
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

/**
 * Runs one phase: the echo load for `o.seconds`, with (B, C) the attackers in `mode` started 1 s
 * before it. After an attack phase the legacy floods are cancelled and the server is given a moment
 * (in-flight back to 0, then 2 s) before its RSS is read again and the next phase starts.
 */
async function runPhase(name: PhaseName, server: Running, o: Options, firstStart: number | undefined, mode: AttackMode | undefined): Promise<PhaseResult> {
  const attackers = mode === undefined ? 0 : o.attackers;
  const abort = new AbortController();
  let serverDied = false;
  const onExit = () => { serverDied = true; abort.abort(); };
  server.child.once('exit', onExit);
  const before = await safeMetrics(server.port);
  const plans: AttackerPlan[] = [];
  for (let i = 0; i < attackers; i++) {
    plans.push(i % 2 === 0 ? { index: i, era: 'legacy', session: await legacySession(server.port) } : { index: i, era: 'modern' });
  }
  const cpuServer0 = cpuSeconds(server.pid);
  const cpuSelf0 = process.cpuUsage();
  const wall0 = performance.now();
  const watch = watchServer(server, o.rssBoundMb, abort);
  const rampMs = attackers > 0 ? 1000 : 0;
  const untilMs = Date.now() + rampMs + o.seconds * 1000;
  const stats: AttackStats = { connects: 0, streaming: 0, refused: 0, closedByServer: 0, completed: 0, bytesRead: 0, legacyCalls: [] };
  const ids = { next: 1_000_000 };
  const attack = Promise.all(plans.map((p) => attacker(server.port, p, mode!, o.floodMode, untilMs, stats, abort.signal, ids)));
  if (rampMs > 0) await sleep(rampMs); // let the attackers' streams (and in C their buffers) get going first
  const echo = abort.signal.aborted ? { latenciesMs: [], ok: 0, errors: 0, wrong: 0, seconds: 0 } : await echoLoad(server.port, o.clients, untilMs, abort.signal);
  abort.abort(); // ends the attackers (they hang up) if the echo load finished first
  await attack;
  const endRss = rssMb(server.pid);
  const wallS = (performance.now() - wall0) / 1000;
  const cpuServer = (cpuSeconds(server.pid) - cpuServer0) / wallS;
  const self = process.cpuUsage(cpuSelf0);
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
    offsetS: (watch.startedAt - (firstStart ?? watch.startedAt)) / 1000,
    echo: { calls: echo.ok, errors: echo.errors, wrong: echo.wrong, seconds: echo.seconds, rps: echo.ok / Math.max(1e-9, echo.seconds), p50ms: pct(l, 50), p99ms: pct(l, 99), maxMs: l.reduce((x, y) => Math.max(x, y), -Infinity) },
    rss: { startMb: watch.startRssMb, peakMb: Math.max(watch.peakRssMb, endRss || 0), endMb: endRss, growthMb: Math.max(watch.peakRssMb, endRss || 0) - watch.startRssMb, settledMb, samples: watch.rss },
    cpu: { wallS, server: cpuServer, generator: (self.user + self.system) / 1e6 / wallS },
    boundExceededAt: watch.boundExceededAt,
    attack: mode !== undefined ? { ...stats, mode, legacyCalls: stats.legacyCalls.length } : undefined,
    metrics: summarizeMetrics(before, watch.metrics, after),
    serverDied,
  };
}

/** A phase that did not run because the server died in an earlier one. */
function notRun(name: PhaseName): PhaseResult {
  return {
    name, offsetS: NaN,
    echo: { calls: 0, errors: 0, wrong: 0, seconds: 0, rps: NaN, p50ms: NaN, p99ms: NaN, maxMs: NaN },
    rss: { startMb: NaN, peakMb: NaN, endMb: NaN, growthMb: NaN, settledMb: undefined, samples: [] },
    cpu: { wallS: 0, server: NaN, generator: NaN },
    boundExceededAt: undefined, attack: undefined,
    metrics: Object.fromEntries(kSeries.map((s) => [s, null])) as Record<Series, number | null>,
    serverDied: true,
  };
}

// ---------------------------------------------------------------------------------------------
// Report

const f = (x: number | undefined, d: number) => (x !== undefined && Number.isFinite(x) ? x.toFixed(d) : '–');
const esc = (s: string) => s.replace(/&/g, '&amp;').replace(/</g, '&lt;');

/**
 * Top: server RSS over the run, the three phases on one timeline (each phase's RSS bound dashed
 * over its own span; the gaps are the settling between phases). Bottom: echo p99 per phase and
 * the ratios.
 */
function svgChart(report: Report): string {
  const phases = kPhases.map((k) => ({ ...k, r: report.phases[k.name] }));
  const boundMb = report.options.rssBoundMb;
  const w = 760;
  const h = 470;
  const plot = { x: 60, y: 56, w: 660, h: 220 };
  const timeline = phases.flatMap((p) => p.r.rss.samples.map(([t, v]): [number, number] => [p.r.offsetS + t, v]));
  const tMax = Math.max(1, ...timeline.map(([t]) => t).filter(Number.isFinite));
  const yMax = Math.max(1, ...timeline.map(([, v]) => v).filter(Number.isFinite)) * 1.15;
  const px = (t: number) => plot.x + (t / tMax) * plot.w;
  const py = (v: number) => plot.y + plot.h - (Math.min(v, yMax) / yMax) * plot.h;
  const lines = phases.map((p) => {
    const s = p.r.rss.samples.filter(([, v]) => Number.isFinite(v)).map(([t, v]) => `${px(p.r.offsetS + t).toFixed(1)},${py(v).toFixed(1)}`);
    if (s.length === 0) return '';
    const t0 = p.r.offsetS;
    const t1 = t0 + Math.max(...p.r.rss.samples.map(([t]) => t));
    const bound = p.r.rss.startMb + boundMb;
    const boundLine = bound <= yMax
      ? `<line x1="${px(t0).toFixed(1)}" y1="${py(bound).toFixed(1)}" x2="${px(t1).toFixed(1)}" y2="${py(bound).toFixed(1)}" stroke="${p.color}" stroke-dasharray="4 4"/>`
      : '';
    return [
      `<polyline fill="none" stroke="${p.color}" stroke-width="2" points="${s.join(' ')}"/>`, boundLine,
      `<text x="${px(t0).toFixed(1)}" y="${(plot.y + plot.h + 16).toFixed(1)}" font-size="11" fill="${p.color}">${p.letter} +${f(p.r.rss.growthMb, 1)} MB</text>`,
    ].join('');
  }).join('\n');
  const boundNote = phases.every((p) => !(p.r.rss.startMb + boundMb <= yMax))
    ? `RSS bound (phase start + ${boundMb} MB) is above the plot`
    : `dashed: phase start + ${boundMb} MB bound`;
  const bars = phases.map((p) => ({ label: `${p.letter} ${p.name}`, value: p.r.echo.p99ms, p50: p.r.echo.p50ms, color: p.color }));
  const barMax = Math.max(1e-9, ...bars.map((x) => (Number.isFinite(x.value) ? x.value : 0)));
  const barRows = bars.map((x, i) => {
    const y = 312 + i * 28;
    const len = Math.max(1, ((Number.isFinite(x.value) ? x.value : 0) / barMax) * 420);
    return `<text x="10" y="${y + 14}" font-size="12">${esc(`p99 ${x.label}`)}</text><rect x="130" y="${y + 2}" width="${len.toFixed(1)}" height="18" fill="${x.color}"/><text x="${(136 + len).toFixed(1)}" y="${y + 15}" font-size="12">${f(x.value, 2)} ms (p50 ${f(x.p50, 2)})</text>`;
  }).join('\n');
  const r = report.ratios;
  return [
    `<svg xmlns="http://www.w3.org/2000/svg" width="${w}" height="${h}" viewBox="0 0 ${w} ${h}" font-family="Helvetica, Arial, sans-serif">`,
    `<rect width="${w}" height="${h}" fill="#fff"/>`,
    `<text x="10" y="22" font-size="14" font-weight="bold">${esc(`Slow readers (flood mode ${report.options.floodMode}, ${report.options.attackers} attackers): server RSS (MB) over the run; echo p99 per phase`)}</text>`,
    `<text x="10" y="40" font-size="11" fill="#555">${esc(`${phases.map((p) => p.label).join(' · ')}; ${boundNote}`)}</text>`,
    `<line x1="${plot.x}" y1="${plot.y + plot.h}" x2="${plot.x + plot.w}" y2="${plot.y + plot.h}" stroke="#888"/><line x1="${plot.x}" y1="${plot.y}" x2="${plot.x}" y2="${plot.y + plot.h}" stroke="#888"/>`,
    `<text x="${plot.x - 6}" y="${plot.y + 4}" font-size="11" text-anchor="end">${f(yMax, 0)}</text><text x="${plot.x - 6}" y="${plot.y + plot.h}" font-size="11" text-anchor="end">0</text>`,
    `<text x="${plot.x + plot.w}" y="${plot.y + plot.h + 16}" font-size="11" text-anchor="end">${f(tMax, 0)} s</text>`,
    lines,
    barRows,
    `<text x="10" y="${312 + 3 * 28 + 16}" font-size="12">${esc(`p99 C/B = ${f(r.p99StalledOverReading, 2)} (the slow readers' own effect; target ≤ 2)   ·   C/A = ${f(r.p99StalledOverBaseline, 2)}   ·   B/A = ${f(r.p99ReadingOverBaseline, 2)} (informational)`)}</text>`,
    '</svg>', '',
  ].join('\n');
}

function markdown(report: Report): string {
  const P = report.phases;
  const ph = kPhases.map((k) => P[k.name]);
  const o = report.options;
  const m = (x: number | null) => (x === null ? 'missing' : `${x}`);
  const row = (label: string, cell: (p: PhaseResult) => string) => `| ${label} | ${ph.map(cell).join(' | ')} |`;
  const bound = (p: PhaseResult) => (p.boundExceededAt === undefined ? '' : ` (**bound exceeded at t=${f(p.boundExceededAt, 1)} s**; phase aborted)`);
  const attackLine = (p: PhaseResult) => {
    const a = p.attack;
    if (a === undefined) return `- ${p.name}: did not run`;
    return `- ${p.name === 'reading' ? 'B reading' : 'C stalled'}: ${a.connects} flood calls opened, ${a.streaming} answered with a stream, ${a.refused} answered otherwise, ${a.closedByServer} closed by the server, ${a.completed} ended normally before the phase did; ${(a.bytesRead / 1048576).toFixed(1)} MiB read by the attackers; ${a.legacyCalls} legacy calls cancelled afterwards.`;
  };
  const floodText = o.floodMode === 'burst'
    ? '`burst` (a chatty tool: 10 progress + 10 log messages of 1 kB, then `await setTimeout(1 ms)`, polling ctx.cancelled)'
    : '**`tight`** (the old CPU burner: one progress + one log per iteration as fast as it can, setImmediate every 50 iterations; its own CPU cost on the HTTP workers dominates)';
  return [
    `# Slow-reader soak (${o.seconds} s per phase, ${o.clients} echo clients, ${o.attackers} attackers, flood mode ${o.floodMode})`, '',
    `- Date: ${report.date}; machine: ${report.machine}; server pinned to CPU 1, this load generator to CPU 0: ${report.pinned}`,
    `- Load average (1/5/15 min) at start: ${report.loadAvg.start.map((x) => x.toFixed(2)).join(' / ')}; at end: ${report.loadAvg.end.map((x) => x.toFixed(2)).join(' / ')} (other work on the machine shows here)`,
    `- Command: \`${report.command}\``,
    '- Server: bench/servers/sluice-slow-readers.mjs, two HTTP workers, the same process for the three phases (not restarted), run in the fixed order A, B, C after a 2 s echo warm-up',
    `- \`flood\` mode: ${floodText}`,
    `- Phases: A baseline = echo only. B reading = the echo load plus ${o.attackers} attackers' \`flood\` calls whose clients read (drain and discard) their streams. C stalled = the same calls, but each client reads the response head and then stops reading (the attack). B and C start the attackers 1 s before the echo load; the echo load runs ${o.seconds} s in each phase. After B and C the legacy floods are cancelled and the server settles (in-flight 0, then 2 s).`,
    `- Attackers: ${Math.ceil(o.attackers / 2)} legacy (session, every log level) + ${Math.floor(o.attackers / 2)} 2026-07-28 (_meta logLevel debug), each a \`flood\` call with a progress token on a raw socket; in C a server close is seen through the kernel's TCP states of both ends (/proc/net/tcp); a closed or finished call is followed by a new one 250 ms later`,
    `- **Judged figure: echo p99 C/B** (target ≤ 2). B is the same tool load without the attack, so C/B is the slow readers' own effect: the issue's "within 2x of the no-attack run" is judged on it. C/A and B/A are informational (B/A is what the flood tool itself costs the echo clients on a 2-core box).`,
    `- Verdict: ${report.verdict}`, '',
    `| | ${kPhases.map((k) => k.label).join(' | ')} |`, '|---|---:|---:|---:|',
    row('echo calls (errors, wrong)', (p) => `${p.echo.calls} (${p.echo.errors}, ${p.echo.wrong})`),
    row('echo seconds measured', (p) => f(p.echo.seconds, 1)),
    row('echo req/s', (p) => f(p.echo.rps, 0)),
    row('echo p50 / p99 / max ms', (p) => `${f(p.echo.p50ms, 2)} / **${f(p.echo.p99ms, 2)}** / ${f(p.echo.maxMs, 1)}`),
    row('RSS start / peak / end MB', (p) => `${f(p.rss.startMb, 1)} / ${f(p.rss.peakMb, 1)} / ${f(p.rss.endMb, 1)}`),
    row('RSS growth MB', (p) => `${f(p.rss.growthMb, 1)}${bound(p)}`),
    row('RSS after the attackers left (+2 s) MB', (p) => f(p.rss.settledMb, 1)),
    row('server CPU s per s (CPU 1; 1 = saturated)', (p) => f(p.cpu.server, 2)),
    row('load generator CPU s per s (CPU 0)', (p) => f(p.cpu.generator, 2)),
    ...kSeries.map((s) => row(`${s} (${s.endsWith('_total') ? 'increase' : 'peak'})`, (p) => m(p.metrics[s]))),
    '', '| ratio (same run, same server process) | value | target |', '|---|---:|---:|',
    `| **echo p99 C/B (stalled / reading): the slow readers' own effect** | **${f(report.ratios.p99StalledOverReading, 2)}** | ≤ 2 |`,
    `| echo p99 C/A (stalled / baseline) | ${f(report.ratios.p99StalledOverBaseline, 2)} | informational |`,
    `| echo p99 B/A (reading / baseline): the flood tool's own cost | ${f(report.ratios.p99ReadingOverBaseline, 2)} | informational |`,
    `| echo p50 C/B, C/A, B/A | ${f(P.stalled.echo.p50ms / P.reading.echo.p50ms, 2)}, ${f(P.stalled.echo.p50ms / P.baseline.echo.p50ms, 2)}, ${f(P.reading.echo.p50ms / P.baseline.echo.p50ms, 2)} | |`,
    `| echo req/s C/B, C/A, B/A | ${f(P.stalled.echo.rps / P.reading.echo.rps, 2)}, ${f(P.stalled.echo.rps / P.baseline.echo.rps, 2)}, ${f(P.reading.echo.rps / P.baseline.echo.rps, 2)} | |`, '',
    'Attackers:', attackLine(P.reading), attackLine(P.stalled), '',
    `The echo load is closed-loop (${o.clients} keep-alive loops), so its latencies understate queueing under overload (coordinated omission); compare the phases, not absolute values. In B the load generator also drains the attackers' streams on CPU 0, next to the echo loops, so B pays that too (see the generator CPU row). Metrics: gauges show the peak of the once-a-second /metrics reads, counters their increase over the phase; "missing" means the server does not export the series. CPU rows: CPU seconds (user + system) per wall second over the phase including the attackers' 1 s ramp.`, '',
    '![RSS over time and p99 per phase](slow-readers-latest.svg)', '',
  ].join('\n');
}

interface Report {
  date: string; machine: string; pinned: boolean; loadAvg: { start: number[]; end: number[] }; command: string; options: Options;
  phases: Record<PhaseName, PhaseResult>;
  ratios: { p99StalledOverReading: number; p99StalledOverBaseline: number; p99ReadingOverBaseline: number; rpsStalledOverReading: number };
  /** Whether p99 C/B is within 2 (the judged figure). */
  p99Met: boolean; grossFailure: string | undefined; verdict: string;
}

function writeReport(report: Report): string {
  mkdirSync(results, { recursive: true });
  writeFileSync(join(results, 'slow-readers-latest.json'), `${JSON.stringify(report, (_k, v: unknown) => (typeof v === 'number' && !Number.isFinite(v) ? null : v), 2)}\n`);
  const md = markdown(report);
  writeFileSync(join(results, 'slow-readers-latest.md'), md);
  writeFileSync(join(results, 'slow-readers-latest.svg'), svgChart(report));
  return md;
}

// ---------------------------------------------------------------------------------------------

/** Pins this process (every thread) to CPU 0, away from the server on CPU 1. */
function pinSelf(): void {
  if (pin) execFileSync('taskset', ['-a', '-cp', '0', String(process.pid)], { stdio: 'ignore' });
}

async function main(): Promise<void> {
  const o = parseOptions();
  const loadStart = loadavg();
  pinSelf();
  const server = await startServer([join(root, 'bench', 'servers', 'sluice-slow-readers.mjs')], 1);
  const phases = {} as Record<PhaseName, PhaseResult>;
  try {
    // Warm-up: JIT and heaps of both workers, not recorded.
    await echoLoad(server.port, o.clients, Date.now() + 2000, new AbortController().signal);
    let firstStart: number | undefined;
    let dead = false;
    for (const [name, mode] of [['baseline', undefined], ['reading', 'reading'], ['stalled', 'stalled']] as const) {
      if (dead) { phases[name] = notRun(name); continue; }
      if (firstStart === undefined) firstStart = Date.now();
      phases[name] = await runPhase(name, server, o, firstStart, mode);
      dead = phases[name].serverDied;
    }
  } finally {
    await stopServer(server);
  }
  const { baseline: A, reading: B, stalled: C } = phases;
  const ratios = {
    p99StalledOverReading: C.echo.p99ms / B.echo.p99ms,
    p99StalledOverBaseline: C.echo.p99ms / A.echo.p99ms,
    p99ReadingOverBaseline: B.echo.p99ms / A.echo.p99ms,
    rpsStalledOverReading: C.echo.rps / B.echo.rps,
  };
  const exceeded = [A, B, C].find((p) => p.boundExceededAt !== undefined);
  const grossFailure = [A, B, C].some((p) => p.serverDied) ? 'the server died'
    : exceeded !== undefined ? `RSS growth during phase ${exceeded.name} passed ${o.rssBoundMb} MB (bound exceeded at t=${exceeded.boundExceededAt!.toFixed(1)} s)`
      : undefined;
  const p99Met = ratios.p99StalledOverReading <= 2;
  const verdict = grossFailure !== undefined ? `FAILED: ${grossFailure}`
    : `RSS bounded (grew ${C.rss.growthMb.toFixed(1)} MB with stalled readers, ${B.rss.growthMb.toFixed(1)} MB with reading ones); echo p99 C/B ${ratios.p99StalledOverReading.toFixed(2)} ${p99Met ? 'within' : '**above**'} the 2× target (C/A ${ratios.p99StalledOverBaseline.toFixed(2)}, B/A ${ratios.p99ReadingOverBaseline.toFixed(2)}, informational)${o.floodMode === 'tight' ? '; flood mode **tight** (CPU-burning tool)' : ''}`;
  const args = process.argv.slice(2).join(' ');
  const report: Report = {
    date: new Date().toISOString(), machine: `${cpus()[0]?.model ?? '?'} × ${cpus().length}, node ${process.version}`, pinned: pin,
    loadAvg: { start: loadStart, end: loadavg() },
    command: `npm run bench:slow-readers${args === '' ? '' : ` -- ${args}`}`, options: o,
    phases, ratios, p99Met, grossFailure, verdict,
  };
  process.stdout.write(writeReport(report));
  if (grossFailure !== undefined) {
    process.stderr.write(`bench:slow-readers: ${grossFailure}\n`);
    process.exitCode = 1;
  }
}

await main();
