/** Helpers of the cluster tests: real Sluice nodes on one real redis-server. */
import { request } from 'node:http';
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
