/**
 * The stdio serving stack: the one thread's engine over the shared tables, and the stdio
 * transport reading newline-delimited JSON-RPC through a gate that closing shuts (the transport
 * then sees the end of its input, as when the client hangs up; the caller's stream is untouched).
 */
import { PassThrough } from 'node:stream';
import type { Readable, Writable } from 'node:stream';
import type { Catalog } from '../catalog/catalog.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import { serveStdio } from '../transport/stdio/stdio.js';
import type { CloseList } from './close-list.js';
import type { ServerConfig } from './config.js';
import type { NodeServices } from './node-services.js';
import { createEngine } from './serving-engine.js';
import { stopGracefully } from './shutdown.js';

export interface StdioStackInput {
  readonly config: ServerConfig;
  readonly services: NodeServices;
  readonly catalog: Catalog;
  /** The compiled pool thread entry, for a tools module with `pool: true` tools. */
  readonly poolEntry: URL;
  /** The pool threads' console writes to stderr (stdout carries the protocol). */
  readonly consoleToStderr: boolean;
  readonly input: Readable;
  readonly output: Writable;
}

/**
 * Starts serving stdio; resolves once the transport reads. The returned promise `served` settles
 * when the input has ended and every request has finished. Its close step (on `closer`) stops
 * reading, gives running requests the grace, then cancels them.
 */
export async function startStdioStack(input: StdioStackInput, closer: CloseList): Promise<{ readonly served: Promise<void> }> {
  const { config, services, catalog } = input;
  const { options, log, tools } = config;
  await importTracingModule(options.tracing); // before the engine: it checks for a tracer provider once
  const pool = tools.module === undefined ? undefined : { module: tools.module, entry: input.poolEntry, consoleToStderr: input.consoleToStderr };
  const serving = createEngine({ shared: services.tables.shared, options, catalog, pool, log, tasks: services.localTasks(), transport: 'pipe' });
  const { engine } = serving;
  if (serving.pool !== undefined) closer.add('the tool pool', () => serving.pool!.close());
  await serving.pool?.started(); // no line is read before the pool threads have loaded the tools module as this thread did
  const source = input.input;
  const gate = new PassThrough();
  const inputGone = () => { if (!gate.writableEnded) gate.end(); };
  const stopReading = () => {
    source.unpipe(gate);
    source.pause();
    inputGone();
  };
  source.pipe(gate);
  source.once('close', inputGone);
  const served = serveStdio(engine, { input: gate, output: input.output, maxLineBytes: options.maxBodyBytes })
    .finally(() => source.off('close', inputGone));
  closer.add('the stdio transport', (shutdown) => stopGracefully(engine, shutdown.graceLeft(), () => {
    stopReading();
    return served;
  }));
  return { served };
}
