/**
 * The stdio server: the one thread serves newline-delimited JSON-RPC over a pair of streams, with
 * the same assembly as an HTTP thread (assembly.ts) and a graceful shutdown on `signal`.
 */
import { threadEntry } from './thread-entry.js';
import { PassThrough } from 'node:stream';
import { threadId } from 'node:worker_threads';
import type { Readable, Writable } from 'node:stream';
import type { CatalogNames } from '../catalog/catalog.js';
import { catalogNames } from '../catalog/catalog.js';
import { serveStdio } from '../transport/stdio/stdio.js';
import { MemoryTaskStore } from '../tasks/memory-store.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import { createEngine, createSharedTables, loadCatalog, serverLog, startJanitor, toolsSource } from '../server/assembly.js';
import type { ServingEngine } from '../server/assembly.js';
import { resolveOptions, taskStoreOption } from '../server/options.js';
import type { LogSink, ServerOptions } from '../server/options.js';
import { kCancelSettleMs, kShutdownReason, settled } from '../server/shutdown.js';

/** The options stdio uses (no host, port, workers, sessions, HTTP limits: none applies to it). */
export type StdioServerBaseOptions = Pick<ServerOptions,
  'tools' | 'registry' | 'janitor' | 'maxBodyBytes' | 'streamCancelTimeoutMs' | 'shutdownGraceMs' | 'poolThreads' | 'logLevel' | 'serverInfo' | 'instructions' | 'tasks'>;

export interface StdioServerOptions extends StdioServerBaseOptions {
  /** Default process.stdin. */
  input?: Readable;
  /** Default process.stdout. */
  output?: Writable;
  /** Where log lines at `logLevel` or above go (default stderr: stdout carries the protocol). */
  log?: LogSink;
  /** Told what is served once the tools are loaded, before the first line is read. */
  onServing?: (served: CatalogNames) => void;
  /**
   * Graceful shutdown (the CLI aborts it on SIGTERM/SIGINT): input is no longer read (what was
   * already read is still served); running requests get `shutdownGraceMs` to finish; then every
   * one still running is cancelled through the registry (reason 'server shutting down'), as a
   * client cancel would, and gets a short moment to notice; the pool closes and the promise resolves.
   */
  signal?: AbortSignal;
}

/** Serves the tools over stdio (newline-delimited JSON-RPC) until the input ends or `signal` aborts. */
export async function serveStdioServer(options: StdioServerOptions): Promise<void> {
  const resolved = resolveOptions(options);
  const log = serverLog(resolved.logLevel, options.log);
  const source = toolsSource(options.tools);
  await importTracingModule(resolved.tracing); // before the engine: it checks for a tracer provider once
  const catalog = await loadCatalog(source);
  options.onServing?.(catalogNames(catalog));
  const { registry, shared } = createSharedTables(options.registry, undefined);
  // One thread: the tasks live here (the user's store, or one in memory), closed with the server.
  const taskStore = resolved.tasks === false ? undefined : taskStoreOption(options) ?? new MemoryTaskStore(resolved.tasks.limits);
  const tasks = taskStore === undefined || resolved.tasks === false ? undefined : { store: taskStore, limits: resolved.tasks.limits, runner: String(threadId) };
  let serving: ServingEngine;
  try {
    serving = createEngine({ shared, options: resolved, catalog, toolsModule: source.module, poolEntry: threadEntry('pool-worker'), log, tasks, transport: 'pipe' });
  } catch (error) {
    await taskStore?.close();
    throw error;
  }
  const { engine, pool } = serving;
  const stopJanitor = startJanitor(registry, resolved);
  const input = options.input ?? process.stdin;
  const signal = options.signal;
  // With a signal, the transport reads through a gate that the signal closes: the transport sees
  // the end of its input, as when the client hangs up, without the caller's stream being touched.
  const gate = signal === undefined ? undefined : new PassThrough();
  let grace: ReturnType<typeof setTimeout> | undefined;
  let cancelledAt = 0;
  const shutDown = () => {
    if (gate === undefined) return;
    input.unpipe(gate);
    input.pause();
    if (!gate.writableEnded) gate.end();
    grace = setTimeout(() => {
      cancelledAt = Date.now();
      engine.cancelAll(kShutdownReason);
    }, resolved.shutdownGraceMs);
  };
  const inputGone = () => { if (gate !== undefined && !gate.writableEnded) gate.end(); };
  try {
    if (gate !== undefined) {
      input.pipe(gate);
      input.once('close', inputGone);
      if (signal!.aborted) shutDown();
      else signal!.addEventListener('abort', shutDown, { once: true });
    }
    await serveStdio(engine, { input: gate ?? input, output: options.output ?? process.stdout, maxLineBytes: resolved.maxBodyBytes });
    if (cancelledAt > 0) await settled(engine, cancelledAt + kCancelSettleMs);
  } finally {
    clearTimeout(grace);
    signal?.removeEventListener('abort', shutDown);
    input.off('close', inputGone);
    stopJanitor?.();
    try {
      await pool?.close();
    } finally {
      await taskStore?.close();
    }
  }
}
