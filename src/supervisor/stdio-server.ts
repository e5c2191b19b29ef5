import { randomBytes } from 'node:crypto';
import type { Readable, Writable } from 'node:stream';
import { SluiceError } from '../errors.js';
import { Engine } from '../protocol/engine.js';
import { createRegistry } from '../registry/index.js';
import { ServerCounters } from '../telemetry/counters.js';
import { collectCatalog, importToolsModule, toolsModuleUrl } from '../catalog/catalog.js';
import type { Catalog } from '../catalog/catalog.js';
import { ToolPool } from '../tools/pool.js';
import { serveStdio } from '../transport/stdio/stdio.js';
import { resolveOptions } from './options.js';
import type { ServerOptions } from './options.js';

export interface StdioServerOptions extends ServerOptions {
  /** Default process.stdin. */
  input?: Readable;
  /** Default process.stdout. */
  output?: Writable;
  /** Where warnings go (default stderr: stdout carries the protocol). */
  log?: (level: 'warn' | 'error', message: string) => void;
}

/** Serves the tools over stdio (newline-delimited JSON-RPC) until the input ends. */
export async function serveStdioServer(options: StdioServerOptions): Promise<void> {
  const resolved = resolveOptions(options);
  const log = options.log ?? ((_level, message) => { process.stderr.write(`${message}\n`); });
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
  try {
    await serveStdio(engine, { input: options.input ?? process.stdin, output: options.output ?? process.stdout, maxLineBytes: resolved.maxBodyBytes });
  } finally {
    stopJanitor?.();
    await pool?.close();
  }
}
