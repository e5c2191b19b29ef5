/**
 * `sluice bench`: the flags, then a run (or interleaved rounds) of src/loadgen. Exit 0 when the
 * run completed, 1 when the error rate passed --max-errors, 2 on usage errors (BenchUsageError
 * too: an unreachable URL, a server that is not MCP, a missing tool).
 */
import { writeFileSync } from 'node:fs';
import { parseArgs } from 'node:util';
import type { BenchEra, BenchMethod, BenchOptions } from '../loadgen/options.js';
import { parseDuration, parseRate } from '../loadgen/options.js';
import { BenchUsageError } from '../loadgen/probe.js';
import { renderHtml } from '../loadgen/report.js';
import { defaultThreads, runCompare, runOnce, runRepeats } from '../loadgen/run.js';
import type { CompareResult, Spread } from '../loadgen/run.js';
import { renderText } from '../loadgen/summary.js';
import type { BenchSummary } from '../loadgen/summary.js';
import { endpointUrl } from './client-commands.js';
import { UsageError, choiceFlag, integerFlag } from './flags.js';

export const kBenchUsage = `Usage:
  sluice bench <url | -- command args…> [options]
                               load an MCP server (any: Sluice or not) and report throughput,
                               latency percentiles, errors and cancellation figures

  --tool <name>        the tool to call (tools/call); prompts/get: the prompt; resources/read: the URI
  --args <json>        the arguments, a JSON object (default {})
  --method <m>         tools/call | tools/list | resources/read | prompts/get | ping |
                       server/discover (default tools/call with --tool, else ping, or
                       server/discover with --era 2026-07-28; ping runs the legacy era)
  --connections <n>    concurrent connections (stdio: one server process each; default 10)
  --duration <t>       measured time, e.g. 30s, 500ms, 2m (default 30s)
  --warmup <t>         load before measuring, not counted (default 5s)
  --rate <r/s>         open loop: this many requests per second over all connections, latency
                       counted from when each request was due (default: closed loop)
  --threads <t>        generator worker threads (default 1, which keeps one core busy)
  --era <era>          auto | legacy | 2026-07-28 (default auto: server/discover, else initialize)
  --session-per-call   legacy: initialize, call and DELETE on every iteration (each step timed);
                       --era auto then means legacy
  --header <k:v>       an extra request header (repeatable)
  --bearer <token>     send Authorization: Bearer <token> (default: SLUICE_BEARER_TOKEN)
  --cancel-after <t>   cancel every call after this long: 50 (ms), 50ms, 1.5s (legacy:
                       notifications/cancelled; 2026-07-28: the request's stream is closed) and
                       report cancel latencies
  --max-errors <pct>   exit 1 when more than this percentage of requests fail (default 1)
  --json               print the result as one JSON document (fields: docs/loadgen.md)
  --report <file>      write a self-contained HTML page with the charts
  --compare <url2>     run the same load against url2 in interleaved rounds and report ratios
  --repeats <k>        rounds (default 1; with --compare, default 3)
`;

const kMethods = ['tools/call', 'tools/list', 'resources/read', 'prompts/get', 'ping', 'server/discover'] as const;

function duration(name: string, text: string | undefined, fallback: number, min: number): number {
  if (text === undefined) return fallback;
  const ms = parseDuration(text);
  if (ms === undefined || ms < min) throw new UsageError(`--${name} must be a duration like 30s, 500ms or 2m${min > 0 ? ` (at least ${min} ms)` : ''}, got ${JSON.stringify(text)}`);
  return ms;
}

/**
 * `--cancel-after`: a bare number is milliseconds (as documented first), and "100ms", "1.5s" or
 * "2m" read as --duration's do, since users write it the way they write --duration.
 */
function cancelAfter(text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const ms = /^\s*\d+\s*$/.test(text) ? Number(text) : parseDuration(text);
  if (ms === undefined || ms < 1 || ms > 3_600_000) throw new UsageError(`--cancel-after must be 1 ms to 1 h, as milliseconds (50) or a duration (50ms, 1.5s), got ${JSON.stringify(text)}`);
  return ms;
}

/**
 * `--method`, or without it tools/call with --tool, else the era's lightest request: ping (legacy
 * only; 2026-07-28 removed it), or server/discover when the run is told 2026-07-28.
 */
function loadMethod(flag: string | undefined, tool: string | undefined, era: BenchEra): BenchMethod {
  const method = (choiceFlag('method', flag, kMethods) ?? (tool !== undefined ? 'tools/call' : era === '2026-07-28' ? 'server/discover' : 'ping')) as BenchMethod;
  if (method === 'ping' && era === '2026-07-28') throw new UsageError('ping was removed in 2026-07-28: --method server/discover is its lightest request');
  if (method === 'server/discover' && era === 'legacy') throw new UsageError('server/discover is a 2026-07-28 request: --method ping is the legacy era\'s lightest');
  return method;
}

/** Parses the bench flags into the run's options (and the output choices). */
export function benchOptions(argv: readonly string[], env: NodeJS.ProcessEnv = process.env): {
  options: BenchOptions; compare: string | undefined; repeats: number; json: boolean; report: string | undefined;
} {
  const split = argv.indexOf('--');
  const flags = split === -1 ? argv : argv.slice(0, split);
  const command = split === -1 ? [] : argv.slice(split + 1);
  let parsed;
  try {
    parsed = parseArgs({
      args: [...flags], allowPositionals: true,
      options: {
        tool: { type: 'string' }, args: { type: 'string' }, method: { type: 'string' }, connections: { type: 'string' },
        duration: { type: 'string' }, warmup: { type: 'string' }, rate: { type: 'string' }, threads: { type: 'string' },
        era: { type: 'string' }, 'session-per-call': { type: 'boolean' }, header: { type: 'string', multiple: true },
        bearer: { type: 'string' }, 'cancel-after': { type: 'string' }, 'max-errors': { type: 'string' }, json: { type: 'boolean' },
        report: { type: 'string' }, compare: { type: 'string' }, repeats: { type: 'string' },
      },
    });
  } catch (error) {
    throw new UsageError((error as Error).message);
  }
  const { values, positionals } = parsed;
  if (command.length > 0 && positionals.length > 0) throw new UsageError('give a URL or `-- command args…`, not both');
  if (command.length === 0 && positionals.length !== 1) throw new UsageError(positionals.length === 0 ? 'bench needs a URL, or `--` and the command of a stdio server' : `bench takes one URL, got ${positionals.join(' ')}`);
  const target: BenchOptions['target'] = command.length > 0
    ? { kind: 'stdio', command: command[0]!, args: command.slice(1) }
    : { kind: 'http', url: endpointUrl(positionals[0]!).href };
  const sessionPerCall = values['session-per-call'] === true;
  const eraFlag = (choiceFlag('era', values.era, ['auto', 'legacy', '2026-07-28'] as const) ?? 'auto') as BenchEra;
  if (sessionPerCall && eraFlag === '2026-07-28') throw new UsageError('--session-per-call is for the legacy era (2026-07-28 has no sessions)');
  // Sessions are what --session-per-call measures: with --era auto it speaks the legacy era, even to
  // a server that offers 2026-07-28 (which would have no session to open or DELETE).
  const era: BenchEra = sessionPerCall && eraFlag === 'auto' ? 'legacy' : eraFlag;
  const method = loadMethod(values.method, values.tool, era);
  if ((method === 'tools/call' || method === 'prompts/get' || method === 'resources/read') && values.tool === undefined) {
    throw new UsageError(`--method ${method} needs --tool <${method === 'resources/read' ? 'uri' : 'name'}>`);
  }
  let args: Record<string, unknown> = {};
  if (values.args !== undefined) {
    let value: unknown;
    try { value = JSON.parse(values.args); } catch { throw new UsageError(`--args must be a JSON object, got ${JSON.stringify(values.args)}`); }
    if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new UsageError('--args must be a JSON object');
    args = value as Record<string, unknown>;
  }
  const headers: Record<string, string> = {};
  for (const h of values.header ?? []) {
    const colon = h.indexOf(':');
    const name = colon > 0 ? h.slice(0, colon).trim().toLowerCase() : '';
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name) || /[\r\n]/.test(h)) throw new UsageError(`--header must be name:value, got ${JSON.stringify(h)}`);
    if (['host', 'content-length', 'transfer-encoding', 'connection'].includes(name)) throw new UsageError(`--header cannot set ${name}`);
    headers[name] = h.slice(colon + 1).trim();
  }
  const token = values.bearer ?? (env.SLUICE_BEARER_TOKEN === '' ? undefined : env.SLUICE_BEARER_TOKEN);
  if (token !== undefined) {
    if (target.kind === 'stdio') throw new UsageError('--bearer goes with a URL, not a stdio server');
    if (!/^[\x21-\x7e]+$/.test(token)) throw new UsageError('--bearer must be a token of visible ASCII characters without spaces');
    if (headers.authorization !== undefined) throw new UsageError('give the token as --bearer or as an authorization --header, not both');
    headers.authorization = `Bearer ${token}`;
  }
  if (target.kind === 'stdio' && Object.keys(headers).length > 0) throw new UsageError('--header goes with a URL, not a stdio server');
  const rate = values.rate === undefined ? undefined : parseRate(values.rate);
  if (values.rate !== undefined && rate === undefined) throw new UsageError(`--rate must be requests per second like 500/s, got ${JSON.stringify(values.rate)}`);
  const connections = integerFlag('connections', values.connections, 1, 10_000) ?? 10;
  let maxErrors = 1;
  if (values['max-errors'] !== undefined) {
    const m = /^\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(values['max-errors']);
    if (m === null || Number(m[1]) > 100) throw new UsageError(`--max-errors must be a percentage from 0 to 100, got ${JSON.stringify(values['max-errors'])}`);
    maxErrors = Number(m[1]);
  }
  if (values.compare !== undefined && target.kind === 'stdio') throw new UsageError('--compare compares two URLs');
  const options: BenchOptions = {
    target, method, name: values.tool, args, connections,
    durationMs: duration('duration', values.duration, 30_000, 100),
    warmupMs: duration('warmup', values.warmup, 5_000, 0),
    rate, threads: integerFlag('threads', values.threads, 1, 64) ?? defaultThreads(), era, sessionPerCall, headers,
    cancelAfterMs: cancelAfter(values['cancel-after']),
    maxErrors: maxErrors / 100,
    timeoutMs: 10_000,
  };
  const repeats = integerFlag('repeats', values.repeats, 1, 100) ?? (values.compare === undefined ? 1 : 3);
  return { options, compare: values.compare === undefined ? undefined : endpointUrl(values.compare).href, repeats, json: values.json === true, report: values.report };
}

function spreadLine(name: string, s: Spread, digits: number): string {
  return `${name.padEnd(18)} ${s.median.toFixed(digits)} (${s.min.toFixed(digits)}–${s.max.toFixed(digits)})`;
}

function compareText(c: CompareResult): string {
  const lines = [`A: ${c.a}`, `B: ${c.b}`, `${c.repeats} interleaved rounds; median (min–max) of each`, ''];
  lines.push(`${'figure'.padEnd(18)} ${'A'.padEnd(24)} ${'B'.padEnd(24)} B / A`);
  for (const name of Object.keys(c.figures.a)) {
    const a = c.figures.a[name]!, b = c.figures.b[name]!, r = c.ratios[name];
    const cell = (s: Spread): string => `${s.median} (${s.min}–${s.max})`.padEnd(24);
    lines.push(`${name.padEnd(18)} ${cell(a)} ${cell(b)} ${r === undefined ? '-' : `${r.median.toFixed(2)} (${r.min.toFixed(2)}–${r.max.toFixed(2)})`}`);
  }
  return `${lines.join('\n')}\n`;
}

/** `sluice bench …`; returns the exit code. */
export async function bench(argv: readonly string[]): Promise<number> {
  if (argv.includes('--help') || argv.includes('-h')) {
    process.stdout.write(kBenchUsage);
    return 0;
  }
  const { options, compare, repeats, json, report } = benchOptions(argv);
  const io = { live: process.stderr };
  let summaries: BenchSummary[];
  try {
    if (compare !== undefined) {
      const other: BenchOptions = { ...options, target: { kind: 'http', url: compare } };
      const result = await runCompare(options, other, repeats, io);
      summaries = result.rounds.flatMap((r) => [r.a, r.b]);
      process.stdout.write(json ? `${JSON.stringify(result, null, 2)}\n` : compareText(result));
      if (report !== undefined) writeFileSync(report, renderHtml({ compare: result }));
    } else if (repeats > 1) {
      const result = await runRepeats(options, repeats, io);
      summaries = result.rounds;
      if (json) process.stdout.write(`${JSON.stringify({ repeats, ...result }, null, 2)}\n`);
      else process.stdout.write(`${result.rounds.map(renderText).join('\n')}\n${repeats} rounds; median (min–max):\n${Object.entries(result.figures).map(([k, s]) => spreadLine(k, s, 3)).join('\n')}\n`);
      if (report !== undefined) writeFileSync(report, renderHtml({ summary: result.rounds[result.rounds.length - 1]! }));
    } else {
      const summary = await runOnce(options, io);
      summaries = [summary];
      process.stdout.write(json ? `${JSON.stringify(summary, null, 2)}\n` : renderText(summary));
      if (report !== undefined) writeFileSync(report, renderHtml({ summary }));
    }
  } catch (error) {
    if (error instanceof BenchUsageError) throw new UsageError(error.message);
    throw error;
  }
  for (const s of summaries) if (s.generator.bottleneck) process.stderr.write(`sluice bench: warning: the generator used ${s.generator.cpuPercent} % CPU on ${s.threads} thread(s): it, not the server, may be the bottleneck (try --threads)\n`);
  const failing = summaries.find((s) => s.errors.rate > options.maxErrors);
  if (failing !== undefined) {
    process.stderr.write(`sluice bench: ${(failing.errors.rate * 100).toFixed(2)} % of the requests to ${failing.target} failed (over --max-errors ${options.maxErrors * 100} %)\n`);
    return 1;
  }
  return 0;
}
