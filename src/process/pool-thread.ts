import { parentPort, threadId } from 'node:worker_threads';
import { attachRegistry } from '../registry/index.js';
import type { Registry } from '../registry/index.js';
import { ToolContext } from '../tools/context.js';
import { catalogNames, importToolsModule } from '../catalog/catalog.js';
import type { CatalogNames } from '../catalog/catalog.js';
import { Refusal, checkArguments, errorText, thrownResult, toToolResult, toolFailure } from '../tools/define.js';
import type { CallToolResult, Tool } from '../tools/define.js';
import { epochNow } from '../tools/pool.js';
import { RelayOut } from '../tools/pool-relay.js';
import { describeFailure } from '../tools/result.js';
import { trustSchemasCheckedElsewhere } from '../tools/schema.js';
import type { PoolOutcome, PoolTask, PoolThreadData, PoolThreadLoad, PoolThreadMessage } from '../tools/pool.js';
import { CancelledError, ProtocolError } from '../errors.js';
import type { ProtocolErrorWire } from '../errors.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import { routeConsoleToStderr } from './console-to-stderr.js';
import { refuseProcessExit } from './thread-entry.js';
import { ToolSpans } from '../telemetry/tracing/tool-spans.js';

let registry: Registry | undefined;
/** The tools module, loaded once: its tools by name, and what it defines here (reported in `ready`). */
let loaded: Promise<{ tools: Map<string, Tool>; served: CatalogNames }> | undefined;
/** Tool spans, when the `tracing` module registered a tracer provider in this thread. */
let spans: ToolSpans | undefined;

const announce = (state: PoolThreadMessage['state'], loaded?: PoolThreadLoad) => {
  const message: PoolThreadMessage = { type: 'sluice:pool-thread', state, threadId, loaded };
  parentPort?.postMessage(message);
};

/**
 * Inside a pool thread, once, from its entry module: says the thread exists (before it joins the
 * registry's roster, so its owner can release the entry if the thread dies with it), joins the
 * registry, loads the tools module, then says it is ready. Loading up front means no task ever
 * imports a module, and the pool can wait for `ready` before terminating a thread (terminating one
 * mid-instantiation aborts the process). Never rejects: a failed load fails each task instead, and
 * `ready` says why (the pool's owner then refuses to start, see `ToolPool.started`).
 */
export async function startPoolThread(data: PoolThreadData): Promise<void> {
  announce('starting');
  // A pool tool's process.exit() would end this thread mid-task (piscina then fails the task with
  // a bare "worker exited" and starts a replacement): it throws instead.
  refuseProcessExit('a pool thread');
  // A stdio server's stdout is the protocol; a worker's stdout is relayed there by Node.
  if (data.consoleToStderr === true) routeConsoleToStderr();
  // The serving thread imported the tools module before it started this pool, and checked its
  // schemas: this thread compiles only what results need (see trustSchemasCheckedElsewhere).
  trustSchemasCheckedElsewhere();
  try {
    registry ??= attachRegistry(data.registry);
  } catch {
    // A full roster: each task tries again, and fails with the reason, instead of this thread dying.
  }
  // The tracing module first (its instrumentations before the tools' imports), as in every thread.
  try {
    await importTracingModule(data.tracing);
    spans = ToolSpans.create();
  } catch {
    // It failed in the HTTP worker too, which refused to start: this thread is being torn down.
  }
  // What loaded goes to the pool's owner, which refuses to start when it is not what it serves.
  announce('ready', await loadTools(data).then(
    ({ served }): PoolThreadLoad => ({ served }),
    (error: unknown): PoolThreadLoad => ({ failure: error instanceof Error ? error.message : String(error) }),
  ));
}

/** This thread's tools; the module is imported once, by `startPoolThread`. */
function loadTools(data: PoolThreadData): Promise<{ tools: Map<string, Tool>; served: CatalogNames }> {
  return loaded ??= importToolsModule(data.toolsModule).then(({ catalog }) => ({
    tools: new Map(catalog.tools.map((t) => [t.name, t])),
    served: catalogNames(catalog),
  }));
}

/** Inside a pool thread: adopt the request's row and run the handler (in its span, when traced). */
export async function runPoolTask(data: PoolThreadData, task: PoolTask): Promise<PoolOutcome> {
  const waitedMs = Math.max(0, epochNow() - task.queuedAt);
  const relay = new RelayOut(task.wants, postToOwner);
  try {
    const outcome = spans === undefined || task.trace === undefined ? await runTool(data, task, relay) : await spans.run(task.name, task.trace, () => runTool(data, task, relay), outcomeOf);
    return { ...outcome, waitedMs, relayed: relay.end() };
  } finally {
    relay.end(); // thrown past: the owner forgets the call; a timer the tool left behind sends nothing
  }
}

/** A relayed message goes to the pool's owner on this thread's port (piscina's 'message' there). */
function postToOwner(message: unknown): void {
  parentPort?.postMessage(message);
}

/** A pool outcome as a span's `error.type`: '' for success. */
function outcomeOf(outcome: PoolOutcome): string {
  if (!outcome.ok) return String(outcome.error.code);
  return outcome.result.isError === true ? 'tool_error' : '';
}

async function runTool(data: PoolThreadData, task: PoolTask, relay: RelayOut): Promise<PoolOutcome> {
  registry ??= attachRegistry(data.registry);
  const tool = (await loadTools(data)).tools.get(task.name);
  if (tool === undefined) throw new Error(`the pool's tools module has no tool named ${task.name}`);
  const ctx = new ToolContext(registry.adopt(task.ref), { ...relay.sinks(), auth: task.auth, input: task.input });
  try {
    // Checked by the HTTP worker already; again here, with this thread's copy of the tool, so the
    // handler gets the schema's parsed value (a Standard Schema may transform) made in its own thread.
    const args = await checkArguments(tool, task.args);
    if (args instanceof Refusal) return { ok: true, result: args.result() };
    const result = await toToolResult(tool, await tool.handler(args, ctx));
    try {
      return { ok: true, result: JSON.parse(JSON.stringify(result)) as CallToolResult }; // plain data across the thread boundary
    } catch (error) {
      return { ok: true, result: toolFailure(tool, `the result cannot be sent as JSON: ${errorText(error)}`) }; // a toJSON() that throws
    }
  } catch (error) {
    // A ProtocolError stays one, as it does inline: sent as plain data, rebuilt by the engine.
    if (error instanceof ProtocolError) return { ok: false, error: plainProtocolError(error) };
    // The value stays here: its description goes to the HTTP worker's failure log, unless it was the cancel.
    return { ok: true, result: thrownResult(error), thrown: error instanceof CancelledError || ctx.cancelled ? undefined : describeFailure(error) };
  }
}

/** A ProtocolError as JSON data (its `data` reaches the client as JSON anyway; dropped if it is not JSON). */
function plainProtocolError(error: ProtocolError): ProtocolErrorWire {
  const wire = error.toRpcWire();
  if (wire.data === undefined) return wire;
  try {
    const json = JSON.stringify(wire.data);
    if (json === undefined) delete wire.data;
    else wire.data = JSON.parse(json) as unknown;
  } catch {
    delete wire.data;
  }
  return wire;
}
