/**
 * The stdio server: the one thread serves newline-delimited JSON-RPC over a pair of streams, built
 * by the same composition root as an HTTP server (config, node services, a serving stack, one
 * close list), with a graceful shutdown on `signal`.
 */
import type { Readable, Writable } from 'node:stream';
import type { CatalogNames } from '../catalog/catalog.js';
import { catalogNames } from '../catalog/catalog.js';
import { CloseList } from '../server/close-list.js';
import { loadCatalog, resolveConfig } from '../server/config.js';
import { NodeServices } from '../server/node-services.js';
import type { ServerLogSink, ServerOptions } from '../server/options.js';
import { routeConsoleToStderr } from './console-to-stderr.js';
import { threadEntry } from './thread-entry.js';

/** The options stdio uses (no host, port, workers, sessions, HTTP limits: none applies to it). */
export type StdioServerBaseOptions = Pick<ServerOptions,
  'tools' | 'registry' | 'janitor' | 'maxBodyBytes' | 'streamCancelTimeoutMs' | 'clientRequestTimeoutMs' | 'shutdownGraceMs' | 'poolThreads' | 'logLevel' | 'serverInfo' | 'instructions' | 'tasks' | 'tracing'>;

export interface StdioServerOptions extends StdioServerBaseOptions {
  /** Default process.stdin. */
  input?: Readable;
  /**
   * Default process.stdout. When it is process.stdout, `console` writes to stderr while the server
   * runs, in this thread and in the pool threads (a tool's console.log would otherwise be a line
   * that is not JSON-RPC among the messages, and strict clients close the transport on it).
   */
  output?: Writable;
  /** Where log lines at `logLevel` or above go (default stderr: stdout carries the protocol); one it fails on goes to stderr. */
  log?: ServerLogSink;
  /** Told what is served once the tools are loaded here and in the pool threads, as reading begins. */
  onServing?: (served: CatalogNames) => void;
  /**
   * Graceful shutdown (the CLI aborts it on SIGTERM/SIGINT): input is no longer read (what was
   * already read is still served); running requests get `shutdownGraceMs` to finish; then every
   * one still running is cancelled through the registry (reason 'server shutting down'), as a
   * client cancel would, and gets a short moment to notice; the pool closes and the promise resolves.
   */
  signal?: AbortSignal;
}

/**
 * Serves the tools over stdio (newline-delimited JSON-RPC) until the input ends (once the running
 * requests have answered) or `signal` aborts. An output that fails (the client closed its end:
 * EPIPE) cancels the running requests and stops reading: the promise resolves once they have ended.
 */
export async function serveStdioServer(options: StdioServerOptions): Promise<void> {
  const output = options.output ?? process.stdout;
  // Before the tools module is imported: its top level may log too.
  const restoreConsole = output === process.stdout ? routeConsoleToStderr() : undefined;
  try {
    await serve(options, output, restoreConsole !== undefined);
  } finally {
    restoreConsole?.();
  }
}

async function serve(options: StdioServerOptions, output: Writable, consoleToStderr: boolean): Promise<void> {
  const config = resolveConfig(options, options.log);
  const catalog = await loadCatalog(config);
  const closer = new CloseList(config.log);
  const services = new NodeServices(config, 'stdio');
  const signal = options.signal;
  const graceMs = config.options.shutdownGraceMs;
  // Closing on abort is synchronous up to its first wait: input stops being read at once.
  const onAbort = () => { void closer.close(graceMs).catch(() => undefined); };
  try {
    await services.start(closer);
    // Imported here, not at the top: every thread whose tools module imports 'sluice' loads this file.
    const { startStdioStack } = await import('../server/stdio-stack.js');
    const { served } = await startStdioStack({ config, services, catalog, poolEntry: threadEntry('pool-worker'), consoleToStderr, input: options.input ?? process.stdin, output }, closer);
    // Only now: the stack waited for the pool threads, and a server that cannot start says only why.
    options.onServing?.(catalogNames(catalog));
    if (signal?.aborted === true) onAbort();
    else signal?.addEventListener('abort', onAbort, { once: true });
    await served;
  } finally {
    signal?.removeEventListener('abort', onAbort);
    await closer.close(graceMs);
  }
}
