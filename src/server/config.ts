/**
 * The server's configuration, decided once: `createServer`'s and the stdio server's options are
 * resolved here into one frozen `ServerConfig`, and an HTTP worker rebuilds the same config from
 * what the supervisor sent it plus its tools module's exports. Nothing past this module reads raw
 * options, and every rule about which options go together is written here only.
 */
import { threadId as ownThreadId } from 'node:worker_threads';
import { verifyOption } from '../auth/options.js';
import type { TokenVerifierFunction } from '../auth/contract.js';
import { collectCatalog, importToolsModule, toolsModuleUrl } from '../catalog/catalog.js';
import type { Catalog } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import type { TaskStore } from '../tasks/store.js';
import { deepFreeze } from '../tasks/transitions.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import { errorText } from '../tools/result.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import { filterLog, resolveOptions, taskStoreOption } from './options.js';
import type { ResolvedOptions, ServerLogLevel, ServerLogSink, ServerOptions } from './options.js';

/** The `tools` option: a module every thread loads, or a catalog served in this thread. */
export type ToolsSource = { readonly module: string; readonly catalog?: undefined } | { readonly module?: undefined; readonly catalog: Catalog };

/** Everything a server is built from, complete and frozen. */
export interface ServerConfig {
  /** The structured-cloneable part: what an HTTP worker is sent. */
  readonly options: ResolvedOptions;
  readonly tools: ToolsSource;
  /** The server log, filtered at `options.logLevel`. */
  readonly log: ServerLogSink;
  /** The user's task store (tasks on and one given); the default store is made by the node's services. */
  readonly taskStore: TaskStore | undefined;
  /** Who the caller is, in-process (the module form exports `authenticate` instead). */
  readonly authenticate: Authenticate | undefined;
  /** With `auth`: a user verifier replacing the JWT path (`auth.verify`, or the module's `verifyToken`). */
  readonly verifyToken: TokenVerifierFunction | undefined;
}

/** Resolves `createServer`'s (or the stdio server's) options. Throws `invalid_option` on the first bad one. */
export function resolveConfig(options: ServerOptions, sink?: ServerLogSink): ServerConfig {
  const resolved = resolveOptions(options);
  const tools = toolsSource(options.tools);
  const verifyToken = verifyOption(options.auth);
  // A function cannot reach the HTTP workers: a tools module exports verifyToken instead.
  if (tools.module !== undefined && verifyToken !== undefined) throw new SluiceError('invalid_option', 'auth.verify works with in-process tools only: export verifyToken from the tools module instead');
  // Ignored, it would let every request through anonymously while its author believes it checks them.
  if (tools.module !== undefined && options.authenticate !== undefined) throw new SluiceError('invalid_option', 'authenticate works with in-process tools only: export authenticate from the tools module instead');
  checkPrincipalSource(resolved, options.authenticate);
  return Object.freeze({
    // Frozen through (key bytes stay as they are: a typed array cannot be frozen).
    options: deepFreeze(resolved),
    tools,
    log: serverLog(resolved, sink),
    taskStore: taskStoreOption(options),
    authenticate: options.authenticate,
    verifyToken,
  });
}

/**
 * An HTTP worker's config: the options the supervisor resolved, and the hooks its tools module
 * exports (`authenticate`, `verifyToken`), checked by the same rules as in-process options.
 */
export async function workerConfig(options: ResolvedOptions, toolsModule: string, log: ServerLogSink): Promise<{ config: ServerConfig; catalog: Catalog }> {
  await importTracingModule(options.tracing); // before the tools module, as loadCatalog does
  const { catalog, exports } = await importToolsModule(toolsModule);
  const authenticate = typeof exports.authenticate === 'function' ? (exports.authenticate as Authenticate) : undefined;
  const verifyToken = typeof exports.verifyToken === 'function' ? (exports.verifyToken as TokenVerifierFunction) : undefined;
  checkPrincipalSource(options, authenticate, 'the tools module exports authenticate, and auth is set');
  // The tasks live in the supervisor: a worker reaches them over its port, never a store of its own.
  const config: ServerConfig = Object.freeze({ options, tools: { module: toolsModule }, log, taskStore: undefined, authenticate, verifyToken });
  return { config, catalog };
}

/** Two ways to name the principal would disagree on who the caller is: one only. */
function checkPrincipalSource(options: ResolvedOptions, authenticate: unknown, why = 'auth verifies bearer tokens itself'): void {
  if (options.auth !== undefined && authenticate !== undefined) throw new SluiceError('invalid_option', `auth and authenticate are exclusive: ${why}`);
}

/** Checks the `tools` option (synchronously; a module is only named here, not loaded). */
function toolsSource(tools: unknown): ToolsSource {
  if (typeof tools === 'string' || tools instanceof URL) return { module: toolsModuleUrl(tools) };
  if (!Array.isArray(tools)) throw new SluiceError('invalid_option', 'tools must be an array of tools or a module path/URL');
  const catalog = collectCatalog(tools);
  const count = catalog.tools.length + catalog.resources.length + catalog.templates.length + catalog.prompts.length;
  if (count !== tools.length) throw new SluiceError('invalid_option', 'tools must all come from defineTool, defineResource, defineResourceTemplate or definePrompt');
  const pooled = catalog.tools.find((t) => t.pool === true);
  if (pooled !== undefined) throw new SluiceError('invalid_option', `tool ${pooled.name} runs in the pool: give the tools as a module so pool threads can load it`);
  return { catalog };
}

/**
 * The catalog of a config's tools, importing the module when it is one. The `tracing` module is
 * imported first, so an SDK's instrumentations are in place before the tools' own imports.
 */
export async function loadCatalog(config: ServerConfig): Promise<Catalog> {
  await importTracingModule(config.options.tracing);
  return config.tools.catalog ?? (await importToolsModule(config.tools.module)).catalog;
}

/**
 * `Name: message` of what a log hook threw, for the fallback's note: nothing read here may throw
 * out of the guard, so the name is read inside a try (errorText guards the message itself).
 */
function hookFailure(error: unknown): string {
  let name = '';
  try {
    if (error instanceof Error) name = `${String(error.name)}: `;
  } catch {
    // a name getter (or its toString) that throws: the name is left out
  }
  return name + errorText(error);
}

/** The server log: `sink` (default: stderr), lines below `logLevel` dropped. */
function serverLog(options: ResolvedOptions, sink: ServerLogSink | undefined): ServerLogSink {
  if (sink !== undefined) return filterLog(options.logLevel, guardedSink(sink));
  keepStderrFailuresQuiet();
  return filterLog(options.logLevel, toStderr);
}

function toStderr(_level: ServerLogLevel, message: string): void {
  if (!process.stderr.destroyed) process.stderr.write(`${message}\n`);
}

/**
 * The caller's log hook, kept from taking the server with it. It runs where requests are answered
 * (a tool's failure is logged before its error goes out): a throw there left the request without
 * an answer and reached uncaughtException, and an async hook's rejection was an unhandled one. A
 * line the hook fails on goes to stderr instead, after one line saying why.
 */
function guardedSink(sink: ServerLogSink): ServerLogSink {
  let told = false;
  const fallBack = (level: ServerLogLevel, message: string, error: unknown) => {
    keepStderrFailuresQuiet();
    if (!told) {
      told = true;
      toStderr('error', `sluice: the log hook failed (${hookFailure(error)}); the lines it fails on go to stderr`);
    }
    toStderr(level, message);
  };
  return (level, message) => {
    try {
      const returned: unknown = sink(level, message);
      if (returned instanceof Promise) returned.catch((error: unknown) => fallBack(level, message, error));
    } catch (error) {
      fallBack(level, message, error);
    }
  };
}

let stderrQuiet = false;

/**
 * A stderr whose reader has gone (a client that closed the pipe: EPIPE) must not take the server
 * with it: its 'error' is listened for, once per thread, and what is logged after it is dropped.
 * Called by the default log sink and by `sluice serve` before its first line.
 */
export function keepStderrFailuresQuiet(): void {
  if (stderrQuiet) return;
  stderrQuiet = true;
  process.stderr.on('error', () => {});
}

/**
 * The task runner id of a thread: who runs a task, so its tasks fail when that thread is lost.
 * `<nodeId>/<threadId>` in cluster mode, where the runners of every node share one store.
 */
export function runnerId(options: ResolvedOptions, threadId: number = ownThreadId): string {
  const node = options.cluster?.nodeId;
  return node === undefined ? String(threadId) : `${node}/${threadId}`;
}
