import { readFileSync, existsSync } from 'node:fs';
import { join } from 'node:path';
import { createServer } from '../../src/index.js';
import type { Server, ServerAddress, ServerOptions } from '../../src/index.js';
import { kAdapterLogTag } from '../../src/process/adapter-choice.js';
import { scratchDir } from './scratch.js';

/** The fixture tools module (plain .mjs: worker threads load it without vitest's transform). */
export const kToolsModule = new URL('../fixtures/server-tools.mjs', import.meta.url);

export interface TestServer {
  server: Server;
  address: ServerAddress;
  logs: string[];
  /**
   * The adapter decision's own lines (e.g. the loud warning that uWS cannot load under Node 22/24),
   * kept out of `logs`: tests that require a quiet server must not fail on the Node they run under.
   */
  adapterLogs: string[];
  close(): Promise<void>;
}

/** A real server on loopback with the fixture tools; logs are captured, not printed. */
export async function startServer(options: Partial<ServerOptions> = {}): Promise<TestServer> {
  const logs: string[] = [];
  const adapterLogs: string[] = [];
  const server = createServer({ tools: kToolsModule, port: 0, workers: 2, exposeWorker: true, janitor: false, ...options }, {
    log: (_level, message) => { (message.includes(kAdapterLogTag) ? adapterLogs : logs).push(message); },
  });
  const address = await server.listen();
  return { server, address, logs, adapterLogs, close: () => server.close() };
}

/** A fresh file path for a tool's `record` argument. */
export function recordPath(): string {
  return join(scratchDir('sluice-test-'), 'record.txt');
}

/**
 * Lines a tool (or another thread) recorded so far: whole lines only. A thread may be appending as
 * this reads, and the text then ends in part of a line (a JSON line cut at position 248 failed a
 * CI run's JSON.parse); that part counts once its newline is there.
 */
export function recorded(path: string): string[] {
  if (!existsSync(path)) return [];
  const text = readFileSync(path, 'utf8');
  return text.slice(0, text.lastIndexOf('\n') + 1).split('\n').filter((l) => l.trim() !== '');
}

/** The JSON lines recorded so far (whole lines only, as `recorded`). */
export function recordedJson<T>(path: string): T[] {
  return recorded(path).map((l) => JSON.parse(l) as T);
}

export { until } from './wait.js';

export const kAccept = 'application/json, text/event-stream';

/** Legacy initialize; returns the session id. */
export async function initialize(url: string, version = '2025-11-25'): Promise<string> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: kAccept },
    body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: version, capabilities: {}, clientInfo: { name: 'test', version: '1' } } }),
  });
  if (res.status !== 200) throw new Error(`initialize: ${res.status} ${await res.text()}`);
  const session = res.headers.get('mcp-session-id');
  if (session === null) throw new Error('no session id');
  return session;
}

/** Modern-era _meta for a request. */
export function modernMeta(extra: Record<string, unknown> = {}): Record<string, unknown> {
  return { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, ...extra };
}
