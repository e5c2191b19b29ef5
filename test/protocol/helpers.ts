// An engine with no transport and no threads: a fake Reply records what the engine does with it.
import { collectCatalog } from '../../src/catalog/catalog.js';
import { definePrompt } from '../../src/catalog/prompts.js';
import { defineResource } from '../../src/catalog/resources.js';
import { Engine } from '../../src/protocol/engine.js';
import type { EngineConfig, Era, NotifyKind, Reply, RequestInfo, Running } from '../../src/protocol/engine.js';
import { createRegistry } from '../../src/registry/index.js';
import type { RegistryOptions } from '../../src/registry/index.js';
import { ServerCounters } from '../../src/telemetry/counters.js';
import type { ServerTracer } from '../../src/telemetry/tracing/server.js';
import { defineTool } from '../../src/tools/define.js';
import { ErrorCode, ProtocolError } from '../../src/protocol/wire.js';

const noArgs = { type: 'object', properties: {} };

/** Settles when the test says so; the tool sees cancellation through ctx.signal. */
export interface Gate {
  open(value?: string): void;
}

export const gates: Gate[] = [];

export const kTools = [
  defineTool({ name: 'echo', description: 'Echoes.', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] }, handler: (a: { text: string }) => a.text }),
  // Async: resolves when its gate opens, or with 'stopped' when the request is cancelled.
  defineTool({
    name: 'wait', description: 'Waits.', inputSchema: noArgs,
    handler: (_a, ctx) => new Promise<string>((resolve) => {
      gates.push({ open: (value) => resolve(value ?? 'done') });
      ctx.signal.addEventListener('abort', () => resolve('stopped'));
    }),
  }),
  // Async and deaf to cancellation: only the kill timer ends it.
  defineTool({ name: 'hang', description: 'Never ends.', inputSchema: noArgs, handler: () => new Promise<string>(() => {}) }),
  defineTool({ name: 'boom', description: 'Throws.', inputSchema: noArgs, handler: () => { throw new Error('kaput'); } }),
  // Async handlers that settle at once: what most real tools are (the run chains one then for them).
  defineTool({ name: 'echo_async', description: 'Echoes, async.', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: async (a: { text: string }) => a.text }),
  defineTool({ name: 'boom_async', description: 'Rejects.', inputSchema: noArgs, handler: async () => { throw new Error('async kaput'); } }),
  defineTool({ name: 'refuse_async', description: 'Rejects with a protocol error.', inputSchema: noArgs, handler: async () => { throw new ProtocolError(ErrorCode.InvalidParams, 'not like that', { why: 'test' }); } }),
  defineTool({
    name: 'shape_async', description: 'Resolves with a result its outputSchema refuses.', inputSchema: noArgs,
    outputSchema: { type: 'object', properties: { n: { type: 'number' } }, required: ['n'] },
    handler: async () => ({ n: 'not a number' }),
  }),
  // An async Standard Schema (its validate returns a promise), then an async handler: two awaits in one call.
  defineTool({
    name: 'checked_async', description: 'Checks asynchronously, then answers asynchronously.',
    inputSchema: { '~standard': { version: 1, vendor: 'test', validate: async (v: unknown) => ({ value: { text: `checked ${String((v as { text?: unknown }).text)}` } }) } },
    jsonSchema: { input: { type: 'object', properties: { text: { type: 'string' } } } },
    handler: async (a: { text: string }) => a.text,
  }),
  definePrompt({ name: 'greet', arguments: [{ name: 'who', required: true }], get: (args) => `hello ${args.who}` }),
  definePrompt({ name: 'broken', get: () => { throw new Error('prompt bug'); } }),
  defineResource({ uri: 'test://fixed', name: 'fixed', mimeType: 'text/plain', read: () => 'contents' }),
];

export type Event =
  | ['notify', string, NotifyKind | undefined]
  | ['started', Running]
  | ['respond', unknown, number]
  | ['cancelled']
  | ['busy', unknown]
  | ['released'];

/** A Reply that records every call, in order. */
export class FakeReply implements Reply {
  readonly events: Event[] = [];
  readonly canStream: boolean;

  constructor(canStream = false) {
    this.canStream = canStream;
  }

  notify(json: string, kind?: NotifyKind): void {
    this.events.push(['notify', json, kind]);
  }

  started(running: Running): void {
    this.events.push(['started', running]);
  }

  respond(json: string, httpStatus: number): void {
    this.events.push(['respond', JSON.parse(json), httpStatus]);
  }

  cancelled(): void {
    this.events.push(['cancelled']);
  }

  busy(id: unknown): void {
    this.events.push(['busy', id]);
  }

  released(): void {
    this.events.push(['released']);
  }

  /** The names of the calls so far. */
  get calls(): string[] {
    return this.events.map((e) => e[0]);
  }

  /** The parsed JSON-RPC response (throws if there is none). */
  get response(): { id: unknown; result?: Record<string, unknown>; error?: { code: number; message: string; data?: unknown } } {
    const found = this.events.find((e) => e[0] === 'respond');
    if (found === undefined) throw new Error(`no response: ${this.calls.join(', ')}`);
    return found[1] as never;
  }

  get status(): number {
    const found = this.events.find((e) => e[0] === 'respond');
    return found === undefined ? 0 : (found[2] as number);
  }
}

export interface TestEngine {
  engine: Engine;
  logs: string[];
  config: EngineConfig;
}

/** An engine on `kTools` (or `tools`), with a spanning `tracer` when given. */
export function makeEngine(options: { registry?: RegistryOptions; streamCancelTimeoutMs?: number; tools?: readonly unknown[]; tracer?: ServerTracer } = {}): TestEngine {
  const logs: string[] = [];
  const config: EngineConfig = {
    registry: createRegistry({ inFlightCapacity: 64, ...options.registry }),
    counters: ServerCounters.create(4),
    catalog: collectCatalog(options.tools ?? kTools),
    serverInfo: { name: 'engine-test', version: '1.0.0' },
    streamCancelTimeoutMs: options.streamCancelTimeoutMs ?? 60_000,
    clientRequestTimeoutMs: 300_000,
    log: (level, message) => { logs.push(`${level} ${message}`); },
    stateKeys: [new Uint8Array(32).fill(7)],
    tracer: options.tracer,
  };
  return { engine: new Engine(config), logs, config };
}

export const kModernMeta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} };

export function info(era: Era, scope = 'session:a'): RequestInfo {
  return era === 'modern'
    ? { era, version: '2026-07-28', scope: `modern:${scope}`, logLevel: undefined }
    : { era, version: '2025-11-25', scope, logLevel: 0 };
}

/** Params for `era` (modern: with the _meta every 2026-07-28 request carries). */
export function params(era: Era, p: Record<string, unknown> = {}): Record<string, unknown> {
  return era === 'modern' ? { ...p, _meta: kModernMeta } : p;
}

/**
 * Lets pending promise callbacks run. Not enough for a cancel: its abort arrives through the thread's
 * cancel watcher (an Atomics.waitAsync wake, delivered in the poll phase), which a 0 ms timer may beat
 * on a loaded machine; wait for what the cancel does with `until` (test/helpers/wait.ts).
 */
export const tick = (ms = 0): Promise<void> => new Promise((r) => setTimeout(r, ms));
