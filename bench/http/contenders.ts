/**
 * What the HTTP benchmark sends: the tools/call echo at both protocol eras, the S1 contenders (the
 * raw uWS ceiling, Sluice, the official SDKs, Sluice on Node 22 over node:http) and the check of a
 * sample answer. No side effects on import.
 */
import { execFileSync } from 'node:child_process';
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { send } from '../lib/http-client.js';
import { kRoot } from '../lib/report.js';
import type { Endpoint } from './wrk.js';

/** The Node 22 of .ci/node-versions (npm ci there when it is missing). */
function node22(): string {
  const dir = join(kRoot, '.ci', 'node-versions');
  const bin = join(dir, 'node_modules', 'node22', 'bin', 'node');
  if (!existsSync(bin)) {
    process.stderr.write('bench: installing Node 22 into .ci/node-versions (npm ci)\n');
    execFileSync('npm', ['ci', '--no-audit', '--no-fund'], { cwd: dir, stdio: 'inherit' });
  }
  return bin;
}

export const echoBody = (id: number) => JSON.stringify({ jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' } } });
export const kAccept = 'application/json, text/event-stream';

/** Checks that a server answers the benchmark request with the right JSON-RPC result. */
export function checkEcho(label: string, res: { status: number; body: string }): void {
  // (wrk counts any 2xx: the result itself is checked once per server.)
  const parsed = JSON.parse(res.body.startsWith('event:') ? res.body.slice(res.body.indexOf('data: ') + 6) : res.body) as { result?: { content?: { text?: string }[] } };
  if (res.status !== 200 || parsed.result?.content?.[0]?.text !== 'bench') throw new Error(`${label}: wrong sample response ${res.status} ${res.body.slice(0, 200)}`);
}

export interface Contender {
  label: string; script: string; args?: string[]; endpoint: (port: number) => Promise<Endpoint>;
  /** Run the server under this Node binary instead of the bench's own. */
  node?: () => string;
  /** Extra check of the sample response (e.g. which HTTP stack answered). */
  check?: (res: { headers: Record<string, string | string[] | undefined> }) => void;
}

export const kNode22Label = 'Sluice on Node 22, node:http, 2 HTTP workers (reusePort)';
export const kCeilingModernLabel = 'raw uWS JSON-RPC echo, 2026-07-28 request';
export const kFloorLabel = 'hardened uWS floor (raw echo + the reads hardening needs)';
export const kSluiceLabel = 'Sluice (1 HTTP worker)';
export const kModernLabel = 'Sluice, 2026-07-28 (1 HTTP worker)';
export const kAsyncLabel = 'Sluice async echo (1 HTTP worker)';
export const kModernAsyncLabel = 'Sluice async echo, 2026-07-28 (1 HTTP worker)';

/** A 2025-11-25 tools/call echo (no session). */
export function legacyEcho(): Endpoint {
  return { path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } };
}

/** A 2026-07-28 tools/call echo: per-request _meta and headers. */
export function modernEcho(): Endpoint {
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'bench' }, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {}, 'io.modelcontextprotocol/clientInfo': { name: 'bench', version: '1' } } } });
  return { path: '/mcp', method: 'POST', body, headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' } };
}

/** The same request naming `echo_async` (the echo from an `async` handler) instead of `echo`. */
export function asyncOf(e: Endpoint): Endpoint {
  const headers = { ...e.headers };
  if (headers['mcp-name'] !== undefined) headers['mcp-name'] = 'echo_async';
  return { ...e, headers, body: e.body!.replace('"name":"echo"', '"name":"echo_async"') };
}

export const legacyInit = JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });

export const contenders: Contender[] = [
  {
    label: 'raw uWS JSON-RPC echo (ceiling)', script: 'uws-echo.mjs',
    endpoint: async () => ({ path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json' } }),
  },
  {
    // The ceiling fed the 2026-07-28 request: what its longer body and two more headers cost any
    // server on uWS (the most "2026-07-28 ÷ legacy" can be).
    label: kCeilingModernLabel, script: 'uws-echo.mjs',
    endpoint: async () => modernEcho(),
  },
  {
    // The raw echo plus only the reads hardening needs on every request (uws-floor.mjs): the most
    // "Sluice ÷ ceiling" can be.
    label: kFloorLabel, script: 'uws-floor.mjs',
    endpoint: async () => legacyEcho(),
  },
  {
    label: kSluiceLabel, script: 'sluice-echo.mjs',
    endpoint: async () => legacyEcho(),
  },
  {
    label: 'official SDK v1, stateless', script: 'sdk-v1.mjs', args: ['stateless'],
    endpoint: async () => legacyEcho(),
  },
  {
    label: kModernLabel, script: 'sluice-echo.mjs',
    endpoint: async () => modernEcho(),
  },
  {
    label: 'official SDK v2 handler, 2026-07-28', script: 'sdk-v2.mjs',
    endpoint: async () => modernEcho(),
  },
  {
    // Almost every real tool is async: the same echo from an `async` handler (issue 17: ≥ 0.95 of the sync one).
    label: kAsyncLabel, script: 'sluice-echo.mjs',
    endpoint: async () => asyncOf(legacyEcho()),
  },
  {
    label: kModernAsyncLabel, script: 'sluice-echo.mjs',
    endpoint: async () => asyncOf(modernEcho()),
  },
  {
    label: 'official SDK v1, stateful', script: 'sdk-v1.mjs', args: ['stateful'],
    endpoint: async (port) => {
      const init = await send(port, { path: '/mcp', method: 'POST', body: legacyInit, headers: { 'content-type': 'application/json', accept: kAccept } });
      const session = String(init.headers['mcp-session-id']);
      await send(port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/initialized' }), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' } });
      return { path: '/mcp', method: 'POST', body: echoBody(1), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session } };
    },
  },
  {
    // Where uWS has no native binding (Node 22/24 on this glibc 2.36 machine) Sluice serves on
    // node:http, its HTTP workers sharing the port through reusePort. Pinned to CPU 1 like every S1
    // row: the 2 workers share one core, so this is the adapter's cost, not a 2-core figure (S7 is).
    label: kNode22Label, script: 'sluice-echo.mjs', args: ['nosessions', '2'], node: node22,
    endpoint: async () => legacyEcho(),
    check: (res) => {
      // uWS marks every response with a `uWebSockets` header; this row must be node:http.
      if (res.headers.uwebsockets !== undefined) throw new Error(`${kNode22Label}: answered by uWebSockets.js, not node:http`);
    },
  },
];
