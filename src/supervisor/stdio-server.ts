import { randomBytes } from 'node:crypto';
import { PassThrough } from 'node:stream';
import type { Readable, Writable } from 'node:stream';
import { SluiceError } from '../errors.js';
import { Engine } from '../protocol/engine.js';
import { createRegistry } from '../registry/index.js';
import { ServerCounters } from '../telemetry/counters.js';
import { catalogNames, collectCatalog, importToolsModule, toolsModuleUrl } from '../catalog/catalog.js';
import type { Catalog, CatalogNames } from '../catalog/catalog.js';
import { ToolPool } from '../tools/pool.js';
import { serveStdio } from '../transport/stdio/stdio.js';
import { filterLog, resolveOptions } from './options.js';
import type { LogSink, ServerOptions } from './options.js';
import { kCancelSettleMs, kShutdownReason, settled } from './shutdown.js';

export interface StdioServerOptions extends ServerOptions {
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
  const log = filterLog(resolved.logLevel, options.log ?? ((_level, message) => { process.stderr.write(`${message}\n`); }));
  let catalog: Catalog;
  let toolsModule: string | undefined;
  if (typeof options.tools === 'string' || options.tools instanceof URL) {
    toolsModule = toolsModuleUrl(options.tools);
    catalog = (await importToolsModule(toolsModule)).catalog;
  } else if (Array.isArray(options.tools)) {
    catalog = collectCatalog(options.tools);
  } else {
    throw new SluiceError('invalid_option', 'tools must be an array of tools or a module path/URL');
  }
  options.onServing?.(catalogNames(catalog));
  const registry = createRegistry({ maxThreads: 64, ...options.registry });
  const descriptor = registry.descriptor;
  const counters = ServerCounters.create(64);
  const pool = toolsModule !== undefined && catalog.tools.some((t) => t.pool === true)
    ? new ToolPool({ toolsModule, registry, registryDescriptor: descriptor, threads: resolved.poolThreads })
    : undefined;
  const stopJanitor = resolved.janitor === false ? undefined : registry.startJanitor(resolved.janitor);
  const engine = new Engine({
    registry, counters, catalog, serverInfo: resolved.serverInfo, instructions: resolved.instructions, pool,
    streamCancelTimeoutMs: resolved.streamCancelTimeoutMs, log, stateKey: randomBytes(32),
  });
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
    await pool?.close();
  }
}
