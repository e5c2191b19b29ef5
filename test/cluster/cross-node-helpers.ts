/** Helpers of the cluster tests: real Sluice nodes on one real redis-server. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { createServer as createHttpServer, request } from 'node:http';
import type { AddressInfo } from 'node:net';
import { fileURLToPath } from 'node:url';
import { Redis } from 'ioredis';
import { createServer } from '../../src/index.js';
import type { Server, ServerAddress, ServerOptions } from '../../src/index.js';

export const kClusterTools = new URL('./cross-node-tools.mjs', import.meta.url);

export interface Node {
  readonly server: Server;
  readonly address: ServerAddress;
  readonly url: string;
  readonly base: string;
  readonly logs: string[];
  close(): Promise<void>;
}

/** One Sluice node (its own supervisor and workers) in cluster mode on `redis`. */
export async function startNode(redis: string | undefined, options: Partial<ServerOptions> = {}, cluster: Record<string, unknown> = {}): Promise<Node> {
  const logs: string[] = [];
  const server = createServer({
    tools: kClusterTools, port: 0, workers: 2, janitor: false, metrics: true, tasks: false, logLevel: 'info',
    ...(redis === undefined ? {} : { cluster: { redis, keyPrefix: 'test:', ...cluster } }),
    ...options,
  }, { log: (level, message) => { if (!message.includes('uWebSockets') && !message.includes('node:http')) logs.push(`${level} ${message}`); } });
  const address = await server.listen();
  return { server, address, url: address.url, base: `http://127.0.0.1:${address.port}`, logs, close: () => server.close() };
}

/** One /metrics value. */
export async function metric(node: Node, name: string): Promise<number> {
  const text = await (await fetch(`${node.base}/metrics`)).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  if (line === undefined) throw new Error(`no metric ${name}`);
  return Number(line.slice(name.length + 1));
}

export async function readyz(node: Node): Promise<{ status: number; text: string }> {
  const res = await fetch(`${node.base}/readyz`);
  return { status: res.status, text: await res.text() };
}

export const legacyHeaders = (key: string) => ({ 'x-api-key': key, 'mcp-protocol-version': '2025-11-25' });
export const modernHeaders = (method: string, name?: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) });
export const modernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

export interface Stream {
  readonly events: Record<string, unknown>[];
  readonly ended: boolean;
  close(): void;
}

/** Opens a POST and hands back its SSE (or JSON) messages as they arrive. */
export function openStream(url: string, message: unknown, headers: Record<string, string>): Stream {
  const events: Record<string, unknown>[] = [];
  let buffer = '';
  let ended = false;
  const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
    const sse = (res.headers['content-type'] ?? '').startsWith('text/event-stream');
    res.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      if (!sse) return;
      let i;
      while ((i = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const data = event.split('\n').find((l) => l.startsWith('data: '));
        if (data !== undefined) events.push(JSON.parse(data.slice(6)) as Record<string, unknown>);
      }
    });
    res.on('end', () => {
      if (!sse && buffer.trim() !== '') events.push(JSON.parse(buffer) as Record<string, unknown>);
      ended = true;
    });
  });
  req.on('error', () => { ended = true; });
  req.end(JSON.stringify(message));
  return { events, get ended() { return ended; }, close: () => req.destroy() };
}

/** Polls until `check` is true (bounded). */
export async function until(check: () => boolean | Promise<boolean>, timeoutMs = 10_000, what = 'condition'): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 10));
  }
}

export interface RoundRobinProxy {
  /** The proxy's MCP endpoint (`http://127.0.0.1:<port>/mcp`). */
  readonly url: string;
  /** The target port of each request, in arrival order (`METHOD port`). */
  readonly served: string[];
  /** Each request as it went: HTTP method, target port, and its body (filled as it streams through). */
  readonly requests: ProxiedRequest[];
  close(): Promise<void>;
}

export interface ProxiedRequest {
  readonly method: string;
  readonly port: number;
  body: string;
}

/**
 * A round-robin HTTP balancer for the tests: each incoming request goes to the next target in
 * turn, request and response bodies streamed both ways, headers kept; a client that goes away
 * takes the upstream connection with it (so a 2026-07-28 disconnect still cancels on the node).
 */
export async function roundRobinProxy(targets: readonly string[]): Promise<RoundRobinProxy> {
  const urls = targets.map((t) => new URL(t));
  const served: string[] = [];
  const requests: ProxiedRequest[] = [];
  let turn = 0;
  const proxy = createHttpServer((req, res) => {
    const target = urls[turn++ % urls.length]!;
    served.push(`${req.method} ${target.port}`);
    const seen: ProxiedRequest = { method: req.method ?? '', port: Number(target.port), body: '' };
    requests.push(seen);
    // Watched on the side (the pipe below streams it on as it comes).
    req.on('data', (chunk: Buffer) => { if (seen.body.length < 64 * 1024) seen.body += chunk.toString('utf8'); });
    const upstream = request({ host: target.hostname, port: target.port, method: req.method, path: req.url, headers: req.headers, agent: false }, (up) => {
      res.writeHead(up.statusCode ?? 502, up.headers);
      up.pipe(res);
    });
    upstream.on('error', () => { res.destroy(); });
    // The client closed before the response was complete: close the node's connection too.
    res.on('close', () => { if (!res.writableFinished) upstream.destroy(); });
    req.pipe(upstream);
  });
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r));
  const { port } = proxy.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    served,
    requests,
    close: () => new Promise<void>((r) => { proxy.closeAllConnections(); proxy.close(() => r()); }),
  };
}

/** The keys under `prefix` that would stay in Redis forever (no TTL), except the documented `cursor-key`. */
export async function keysWithoutTtl(redisUrl: string, prefix: string): Promise<string[]> {
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  r.on('error', () => {});
  try {
    const forever: string[] = [];
    for await (const keys of r.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) {
      for (const key of keys) if (key !== `${prefix}cursor-key` && (await r.pttl(key)) === -1) forever.push(key);
    }
    return forever;
  } finally {
    r.disconnect();
  }
}

/** Every key under `prefix` (to show a check of TTLs looked at something). */
export async function keysUnder(redisUrl: string, prefix: string): Promise<string[]> {
  const r = new Redis(redisUrl, { maxRetriesPerRequest: 1 });
  r.on('error', () => {});
  try {
    const all: string[] = [];
    for await (const keys of r.scanStream({ match: `${prefix}*`, count: 500 }) as AsyncIterable<string[]>) all.push(...keys);
    return all;
  } finally {
    r.disconnect();
  }
}

export interface NodeProcess {
  readonly nodeId: string;
  readonly port: number;
  readonly url: string;
  readonly base: string;
  readonly child: ChildProcess;
  /** What the process wrote to stderr (its log lines). */
  readonly stderr: string[];
  /** SIGKILL: no clean-up of any kind. */
  kill(): Promise<void>;
  /** SIGTERM (a clean close), SIGKILL after a grace. */
  stop(): Promise<void>;
}

const kNodeScript = fileURLToPath(new URL('./node-process.mjs', import.meta.url));

/** A Sluice node as its own process (dist/: build first), in cluster mode on `redis` under `prefix`. */
export async function startNodeProcess(redis: string, prefix: string, nodeId: string, options: Record<string, unknown> = {}): Promise<NodeProcess> {
  const child = spawn(process.execPath, [kNodeScript, redis, prefix, nodeId, JSON.stringify(options)], { stdio: ['ignore', 'pipe', 'pipe'] });
  const stderr: string[] = [];
  child.stderr!.setEncoding('utf8').on('data', (chunk: string) => stderr.push(chunk));
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    const timer = setTimeout(() => reject(new Error(`node ${nodeId} did not start in 15 s: ${stderr.join('')}`)), 15_000);
    child.stdout!.setEncoding('utf8').on('data', (chunk: string) => {
      out += chunk;
      const m = /READY (\d+)/.exec(out);
      if (m !== null) { clearTimeout(timer); resolve(Number(m[1])); }
    });
    child.once('exit', (code, signal) => { clearTimeout(timer); reject(new Error(`node ${nodeId} exited (${code ?? signal}) before it was ready: ${stderr.join('')}`)); });
  });
  const exited = new Promise<void>((r) => { if (child.exitCode !== null || child.signalCode !== null) r(); else child.once('exit', () => r()); });
  const halt = async (signal: NodeJS.Signals): Promise<void> => {
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill(signal);
    const timer = setTimeout(() => child.kill('SIGKILL'), 5_000);
    await exited;
    clearTimeout(timer);
  };
  return {
    nodeId, port, url: `http://127.0.0.1:${port}/mcp`, base: `http://127.0.0.1:${port}`, child, stderr,
    kill: () => halt('SIGKILL'),
    stop: () => halt('SIGTERM'),
  };
}
