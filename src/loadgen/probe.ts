/**
 * Before the load: settle the era (server/discover answered means 2026-07-28, else legacy
 * initialize, as the Sluice client negotiates; or the era forced by --era), then send the load
 * request once. A target that cannot be reached, is not MCP, refuses the token or lacks the tool
 * fails here with a BenchUsageError (exit 2), naming the server's tools when the tool is missing.
 */
import { checkParamHeaders, kInvalidAnnotations, paramHeaders } from '../client/param-headers.js';
import { ErrorCode, kLegacyVersions, kModernVersion } from '../protocol/wire.js';
import type { BenchOptions, Negotiated } from './options.js';
import { OpenError } from './target.js';
import type { Target } from './target.js';
import { makeTarget } from './targets.js';
import type { Outcome } from './wire.js';

/** The run cannot start as asked: exit 2, with this message. */
export class BenchUsageError extends Error {}

/** The time each probe request may take. */
const kProbeTimeoutMs = 10_000;

function where(options: BenchOptions): string {
  return options.target.kind === 'http' ? options.target.url : `the stdio server (${[options.target.command, ...options.target.args].join(' ')})`;
}

/** One request on a fresh connection; the connection is closed after. */
async function once(options: BenchOptions, negotiated: Negotiated, method: string, cancelAfterMs?: number): Promise<{ outcome: Outcome; target: Target; cancelled: boolean }> {
  const target = makeTarget({ ...options, method: method as BenchOptions['method'], sessionPerCall: false }, negotiated);
  try {
    await withTimeout(target.open(), `opening a session with ${where(options)}`);
  } catch (error) {
    await target.close().catch(() => {});
    if (error instanceof OpenError) throw new BenchUsageError(`${where(options)}: ${error.message}`);
    throw error;
  }
  let cancelled = false;
  const timers: ReturnType<typeof setTimeout>[] = [];
  const outcome = await withTimeout(new Promise<Outcome>((resolve) => {
    target.call(1, (o) => resolve(o));
    // With --cancel-after the probe call is cancelled too (a long tool need not run to its end here).
    if (cancelAfterMs !== undefined) {
      timers.push(setTimeout(() => {
        cancelled = true;
        target.cancel(1);
        timers.push(setTimeout(() => target.abort('no-answer', 'cancelled'), 1000));
      }, cancelAfterMs));
    }
  }), `an answer from ${where(options)}`, () => target.abort('timeout', `no answer within ${kProbeTimeoutMs / 1000} s`)).finally(() => { for (const t of timers) clearTimeout(t); });
  return { outcome, target, cancelled };
}

function withTimeout<T>(promise: Promise<T>, what: string, onTimeout?: () => void): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => { onTimeout?.(); reject(new BenchUsageError(`timed out after ${kProbeTimeoutMs / 1000} s waiting for ${what}`)); }, kProbeTimeoutMs);
  });
  return Promise.race([promise, timeout]).finally(() => clearTimeout(timer));
}

/** Why an outcome means the target is not usable, for people. */
function refusal(outcome: Outcome, options: BenchOptions, what: string): string {
  const detail = outcome.detail ?? outcome.kind;
  if (outcome.kind === 'reset' && /could not connect/.test(detail)) return `${detail}: is a server listening at ${where(options)}?`;
  if (outcome.kind === 'invalid') return `${where(options)} does not answer like an MCP server (${what}: ${detail})`;
  if (outcome.kind === 'http' && (outcome.code === 401 || outcome.code === 403)) return detail;
  return `${what} failed: ${detail}`;
}

/** Settles the era and checks the load request works once. */
export async function probe(options: BenchOptions): Promise<Negotiated> {
  const negotiated = await negotiate(options);
  let { outcome, target, cancelled } = await once(options, negotiated, options.method, options.cancelAfterMs);
  await target.close().catch(() => {});
  if (outcome.kind === 'reset' && !/could not connect/.test(outcome.detail ?? '')) {
    // One connection cut short is not yet a broken server: the probe tries once more (the run counts resets).
    ({ outcome, target, cancelled } = await once(options, negotiated, options.method, options.cancelAfterMs));
    await target.close().catch(() => {});
  }
  const refused = (outcome.kind === 'http' && outcome.code === 400) || (outcome.kind === 'rpc' && outcome.code === ErrorCode.HeaderMismatch);
  if (refused && negotiated.era === 'modern' && options.method === 'tools/call') {
    // A 2026-07-28 server refuses (400, -32020) a call of a tool with x-mcp-header annotations
    // that does not mirror them in Mcp-Param-* headers: learn them from tools/list, then try again.
    negotiated.paramHeaders = await toolParamHeaders(options, negotiated);
    if (negotiated.paramHeaders !== undefined) ({ outcome, target, cancelled } = await once(options, negotiated, options.method, options.cancelAfterMs));
    await target.close().catch(() => {});
  }
  if (outcome.kind === 'ok') return negotiated;
  // Cancelled before it answered, and not refused: the call is there to be loaded.
  if (cancelled && (outcome.kind === 'no-answer' || outcome.kind === 'timeout')) return negotiated;
  if (outcome.kind === 'tool' || outcome.kind === 'rpc') {
    if (options.method === 'tools/call') {
      const tools = await toolNames(options, negotiated);
      if (tools !== undefined && !tools.includes(options.name ?? '')) {
        throw new BenchUsageError(`${where(options)} has no tool ${JSON.stringify(options.name)}; its tools: ${tools.length === 0 ? '(none)' : tools.join(', ')}`);
      }
    }
    // A tool that answers isError may do so on purpose: the run counts it. A JSON-RPC error will not go away.
    if (outcome.kind === 'tool') return negotiated;
    // ...unless it answered the probe's cancel: some servers answer a cancelled request with an error
    // (the Python SDK: code 0, "Request cancelled"), which the load loop counts as the answer stopping.
    if (cancelled) return negotiated;
  }
  throw new BenchUsageError(refusal(outcome, options, `the first ${options.method}${options.name === undefined ? '' : ` ${options.name}`}`));
}

async function negotiate(options: BenchOptions): Promise<Negotiated> {
  // ping exists only in the legacy era, server/discover only in 2026-07-28: either settles `auto`.
  if (options.era === 'legacy' || options.method === 'ping') return openLegacy(options);
  const modern: Negotiated = { era: 'modern', version: kModernVersion };
  if (options.era === '2026-07-28' || options.method === 'server/discover') return modern;
  const { outcome, target } = await once(options, modern, 'server/discover');
  await target.close().catch(() => {});
  if (outcome.kind === 'ok') return modern;
  // Refused for its token, not its era: the legacy era would be refused the same way.
  if (outcome.kind === 'http' && (outcome.code === 401 || outcome.code === 403)) throw new BenchUsageError(refusal(outcome, options, 'server/discover'));
  if (outcome.kind === 'reset' && /could not connect/.test(outcome.detail ?? '')) throw new BenchUsageError(refusal(outcome, options, 'server/discover'));
  return openLegacy(options);
}

/** Legacy: a session must start (initialize); the version the server agreed to is kept. */
async function openLegacy(options: BenchOptions): Promise<Negotiated> {
  const negotiated: Negotiated = { era: 'legacy', version: kLegacyVersions[0] };
  const target = makeTarget({ ...options, method: 'ping', sessionPerCall: false }, negotiated);
  try {
    await withTimeout(target.open(), `initialize from ${where(options)}`);
  } catch (error) {
    if (error instanceof OpenError) {
      const message = error.message;
      if (/ 40[13] /.test(message)) throw new BenchUsageError(message.replace(/^initialize failed: /, ''));
      if (/could not connect/.test(message)) throw new BenchUsageError(`${message.replace(/^initialize failed: /, '')}: is a server listening at ${where(options)}?`);
      // A stdio server that never started, or ended before it answered: that, not its manners, is the news.
      if (/the server process (did not start|exited)/.test(message)) throw new BenchUsageError(`${where(options)}: ${message.replace(/^initialize failed: the server process /, '')}`);
      throw new BenchUsageError(`${where(options)} does not answer like an MCP server (${message})`);
    }
    throw error;
  } finally {
    await target.close().catch(() => {});
  }
  return negotiated;
}

/** The server's tools (first page), or undefined when tools/list fails. */
async function listTools(options: BenchOptions, negotiated: Negotiated): Promise<{ name?: unknown; inputSchema?: unknown }[] | undefined> {
  const { outcome, target } = await once({ ...options, method: 'tools/list' }, negotiated, 'tools/list');
  await target.close().catch(() => {});
  const tools = outcome.kind === 'ok' ? (outcome.result as { tools?: unknown }).tools : undefined;
  return Array.isArray(tools) ? tools as { name?: unknown; inputSchema?: unknown }[] : undefined;
}

/** The server's tool names (first page), or undefined when tools/list fails. */
async function toolNames(options: BenchOptions, negotiated: Negotiated): Promise<string[] | undefined> {
  return (await listTools(options, negotiated))?.map((t) => String(t?.name));
}

/**
 * The Mcp-Param-* headers the load's tools/call must carry (2026-07-28: a server refuses a call of
 * an annotated tool without them), from the tool's inputSchema; undefined when it has none, or the
 * tool is not listed (the probe's call then says what is wrong).
 */
async function toolParamHeaders(options: BenchOptions, negotiated: Negotiated): Promise<Record<string, string> | undefined> {
  const tool = (await listTools(options, negotiated))?.find((t) => t?.name === options.name);
  if (tool === undefined) return undefined;
  const specs = checkParamHeaders(tool.inputSchema);
  if (specs === kInvalidAnnotations) throw new BenchUsageError(`tool ${JSON.stringify(options.name)} has x-mcp-header annotations that break the rules of 2026-07-28: a client must not call it`);
  if (specs === undefined) return undefined;
  const headers: Record<string, string> = {};
  paramHeaders(specs, options.args, headers);
  return headers;
}
