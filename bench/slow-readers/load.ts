/**
 * The slow-reader soak's load: closed-loop echo calls on keep-alive connections (the well-behaved
 * clients), and attackers whose `flood` calls are read (phase B) or stalled after the response head
 * (phase C). Only 127.0.0.1 is targeted and every loop is bounded in time. No side effects on import.
 */
import { readFileSync } from 'node:fs';
import { Agent } from 'node:http';
import { connect } from 'node:net';
import type { Socket } from 'node:net';
import { send } from '../lib/http-client.js';

export type FloodMode = 'burst' | 'tight';
export interface Options { seconds: number; attackers: number; clients: number; rssBoundMb: number; floodMode: FloodMode }

const kAccept = 'application/json, text/event-stream';
const kLegacy = '2025-11-25';
const kModern = '2026-07-28';
/** Every request but the /metrics reads and the end-of-phase cancels gives up after this long. */
const kTimeoutMs = 10_000;

export const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

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
export async function echoLoad(port: number, clients: number, untilMs: number, signal: AbortSignal): Promise<EchoStats> {
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
        const r = await send(port, { path: '/mcp', method: 'POST', body, headers }, agent, { timeoutMs: kTimeoutMs });
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

export type AttackMode = 'reading' | 'stalled';

export interface AttackStats {
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

export interface AttackerPlan { index: number; era: 'legacy' | 'modern'; session?: string }

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
export async function legacySession(port: number): Promise<string> {
  const init = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: kLegacy, capabilities: {}, clientInfo: { name: 'slow-reader', version: '1' } } });
  const r = await send(port, { path: '/mcp', method: 'POST', body: init, headers: { 'content-type': 'application/json', accept: kAccept } }, false, { timeoutMs: kTimeoutMs });
  const session = r.headers['mcp-session-id'];
  if (r.status !== 200 || typeof session !== 'string') throw new Error(`initialize: ${r.status} ${r.body.slice(0, 200)}`);
  const headers = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': kLegacy, 'mcp-session-id': session };
  await send(port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers }, false, { timeoutMs: kTimeoutMs });
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
export async function attacker(port: number, plan: AttackerPlan, mode: AttackMode, floodMode: FloodMode, untilMs: number, stats: AttackStats, signal: AbortSignal, ids: { next: number }): Promise<void> {
  while (Date.now() < untilMs && !signal.aborted) {
    // The tool runs until the phase ends (+1 s), so legacy calls do not outlive the phase by much.
    const ms = Math.max(1000, untilMs - Date.now() + 1000);
    if (await holdOneCall(port, plan, ids.next++, ms, mode, floodMode, stats, signal)) stats.closedByServer++;
    if (!signal.aborted) await sleep(250);
  }
}

/** Legacy floods are not cancelled by a disconnect: cancel them the way a client would. */
export async function cancelLegacyCalls(port: number, calls: { session: string; id: number }[]): Promise<void> {
  const agent = new Agent({ keepAlive: true, maxSockets: 4 });
  const queue = [...calls];
  await Promise.all(Array.from({ length: 4 }, async () => {
    for (let c = queue.shift(); c !== undefined; c = queue.shift()) {
      const headers = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': kLegacy, 'mcp-session-id': c.session };
      const body = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: c.id, reason: 'slow-readers bench: phase over' } });
      await send(port, { path: '/mcp', method: 'POST', body, headers }, agent, { timeoutMs: 2000 }).catch(() => undefined);
    }
  }));
  agent.destroy();
}
