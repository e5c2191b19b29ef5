/**
 * The HTTP benchmark's tools: wrk and h2load (installed from Debian if missing), a wrk run against
 * one endpoint with the server's CPU time and the generator core's busy share, the bench servers
 * of bench/servers/ and a scratch folder. No side effects on import.
 */
import { execFileSync, spawn } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { cpuSeconds, cpuTimes, pin, pinned } from '../lib/machine.js';
import { startServer } from '../lib/process.js';
import type { Running } from '../lib/process.js';
import { kRoot } from '../lib/report.js';
import { scratchDir } from '../lib/scratch.js';

export const kServers = join(kRoot, 'bench', 'servers');

let scratch: string | undefined;

/** A temporary folder for wrk scripts and request records, made on first use. */
export function work(): string {
  scratch ??= scratchDir('sluice-bench-');
  return scratch;
}

export function ensureTools(): void {
  const packages: Record<string, string> = { wrk: 'wrk', h2load: 'nghttp2-client' };
  const missing = Object.keys(packages).filter((t) => { try { execFileSync('which', [t]); return false; } catch { return true; } });
  if (missing.length === 0) return;
  process.stderr.write(`bench: installing ${missing.map((t) => packages[t]).join(', ')} (Debian packages)\n`);
  execFileSync('apt-get', ['update', '-qq'], { stdio: 'ignore' });
  execFileSync('apt-get', ['install', '-y', '-qq', ...missing.map((t) => packages[t])], { stdio: 'ignore' });
}

/** A bench server script from bench/servers, pinned to CPU 1 unless `pinnedServer` is false; `node` runs it under another Node binary. */
export function start(script: string, args: string[] = [], pinnedServer = true, node?: string): Promise<Running> {
  return startServer([join(kServers, script), ...args], pinnedServer ? 1 : undefined, node);
}

export interface Endpoint { path: string; method: 'GET' | 'POST'; body?: string; headers: Record<string, string> }

export interface WrkResult { rps: number; p50ms: number; p99ms: number; non2xx: number; serverCpu: number; generatorBusy: number; requests: number }

/** The server's CPU µs per request of a wrk run. */
export function cpuPerRequest(w: WrkResult): number {
  return (w.serverCpu * 1e6) / Math.max(1, w.requests);
}

/** wrk's and h2load's durations ("812.00us", "1.20ms", "2.01s") in ms. */
export function parseMs(text: string): number {
  const m = /([\d.]+)(us|ms|s)/.exec(text);
  if (m === null) return NaN;
  const v = Number(m[1]);
  return m[2] === 'us' ? v / 1000 : m[2] === 's' ? v * 1000 : v;
}

/** Runs `command args` to its end and returns its stdout; rejects on a non-zero exit. */
export function collect(command: [string, string[]], what: string): Promise<string> {
  return new Promise<string>((resolve, reject) => {
    const child = spawn(...command);
    let text = '';
    child.stdout.on('data', (c: Buffer) => { text += c.toString(); });
    child.once('exit', (code) => (code === 0 ? resolve(text) : reject(new Error(`${what} exited ${code}: ${text}`))));
  });
}

export async function wrk(port: number, e: Endpoint, connections: number, seconds: number, serverPid: number, generatorPinned = true, threads = 1): Promise<WrkResult> {
  const script = join(work(), `req-${port}.lua`);
  const headers = Object.entries(e.headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n');
  writeFileSync(script, `wrk.method = ${JSON.stringify(e.method)}\n${e.body === undefined ? '' : `wrk.body = ${JSON.stringify(e.body)}\n`}${headers}\n`);
  const url = `http://127.0.0.1:${port}${e.path}`;
  const args = [`-t${threads}`, `-c${connections}`, `-d${seconds}s`, '--latency', '-s', script, url];
  const cpu0 = pin ? cpuTimes(0) : [0, 1];
  const serverBefore = cpuSeconds(serverPid);
  const out = await collect(pinned(generatorPinned ? 0 : undefined, 'wrk', args), 'wrk');
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
