/**
 * What one `sluice bench` run is asked to do, as the workers receive it (plain data: it crosses
 * the worker_threads boundary by structured clone).
 */

/** The MCP methods a run can load (`ping` is the legacy era's only; `server/discover` the 2026-07-28 era's). */
export type BenchMethod = 'tools/call' | 'tools/list' | 'resources/read' | 'prompts/get' | 'ping' | 'server/discover';

/** `--era`: negotiated (`auto`), or forced. */
export type BenchEra = 'auto' | 'legacy' | '2026-07-28';

/** Where the load goes: an HTTP endpoint, or a stdio server spawned once per connection. */
export type BenchTarget =
  | { kind: 'http'; url: string }
  | { kind: 'stdio'; command: string; args: string[] };

export interface BenchOptions {
  target: BenchTarget;
  method: BenchMethod;
  /** tools/call and prompts/get: the name; resources/read: the URI. */
  name: string | undefined;
  /** The arguments of tools/call and prompts/get. */
  args: Record<string, unknown>;
  connections: number;
  durationMs: number;
  warmupMs: number;
  /** Open loop: requests per second over the whole run; undefined: closed loop. */
  rate: number | undefined;
  threads: number;
  era: BenchEra;
  sessionPerCall: boolean;
  /** Extra request headers (`--header`, `--bearer`), names lower-cased. */
  headers: Record<string, string>;
  cancelAfterMs: number | undefined;
  /** Exit 1 when errors / requests exceeds this fraction. */
  maxErrors: number;
  /** One request's time limit: past it the request counts as a timeout and its connection is replaced. */
  timeoutMs: number;
}

/** The era a probe settled on, and what the workers need to speak it. */
export interface Negotiated {
  era: 'legacy' | 'modern';
  /** The MCP-Protocol-Version the server agreed to (legacy) or 2026-07-28. */
  version: string;
  /**
   * 2026-07-28 tools/call of a tool whose inputSchema has x-mcp-header annotations: the
   * `Mcp-Param-*` headers mirroring the load's arguments (learnt from tools/list by the probe).
   */
  paramHeaders?: Readonly<Record<string, string>> | undefined;
}

/** "30s", "500ms", "2m", "1.5s", or a bare number of seconds, in ms; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)\s*(ms|s|m)?\s*$/.exec(text);
  if (m === null) return undefined;
  const v = Number(m[1]);
  const ms = m[2] === 'ms' ? v : m[2] === 'm' ? v * 60_000 : v * 1000;
  return Number.isFinite(ms) ? Math.round(ms) : undefined;
}

/** "500", "500/s", "500/S", "2k/s" in requests per second; undefined when malformed or not positive. */
export function parseRate(text: string): number | undefined {
  const m = /^\s*(\d+(?:\.\d+)?)(k)?\s*(?:\/\s*s)?\s*$/i.exec(text);
  if (m === null) return undefined;
  const v = Number(m[1]) * (m[2] === undefined ? 1 : 1000);
  return Number.isFinite(v) && v > 0 ? v : undefined;
}
