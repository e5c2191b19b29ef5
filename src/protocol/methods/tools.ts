import { CancelledError } from '../../errors.js';
import type { InputRequired } from '../../tools/context.js';
import { Refusal, checkArguments, thrownResult, toToolResult } from '../../tools/define.js';
import { adoptThenable, describeFailure } from '../../tools/result.js';
import type { CallToolResult, Tool, ToolOutput } from '../../tools/define.js';
import { poolCallResult } from '../../tools/pool.js';
import type { ToolPool } from '../../tools/pool.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { EngineConfig } from '../contract.js';
import { LogBudget, droppedNote } from '../failure-log.js';
import { PendingResult } from '../pending-result.js';
import { missingCapabilities } from '../refusals.js';
import type { Method, Run } from '../run.js';
import type { TaskCalls } from '../tasks/calls.js';
import { ErrorCode, ProtocolError } from '../wire.js';

/** tools/call params key (never on the wire) carrying arguments an async Standard Schema already parsed. */
const kCheckedArguments = Symbol('sluice.checkedArguments');

/** A tool's result, an input-required round, or a task's create result. */
type Outcome = CallToolResult | InputRequired | Record<string, unknown>;
// A promise here may resolve to a PendingResult (an async check, then an async tool): the run takes either.
type CallResult = Outcome | PendingResult | Promise<Outcome | PendingResult>;

/**
 * tools/list and tools/call, for both eras. The legacy list names each tool's `execution.taskSupport`
 * when the server offers tasks (2025-11-25); the 2026-07-28 list never does (its schema has no such field).
 */
export function toolMethods(index: CatalogIndex, config: Pick<EngineConfig, 'pool' | 'log'>, tasks: TaskCalls, offersTasks: boolean): Array<[string, Method]> {
  const tools = new ToolMethods(index, config.pool, config.log, tasks);
  const legacyList = offersTasks ? index.toolListWithExecution : index.toolList;
  return [
    ['tools/list', { handler: (run, params) => run.era.cacheable(index.page(params, 'tools', run.era.name === 'legacy' ? legacyList : index.toolList)) }],
    ['tools/call', { handler: (run, params) => tools.call(run, params), names: 'name' }],
  ];
}

class ToolMethods {
  readonly #index: CatalogIndex;
  readonly #pool: ToolPool | undefined;
  readonly #log: EngineConfig['log'];
  readonly #failures = new LogBudget(20, 60_000);
  readonly #tasks: TaskCalls;

  constructor(index: CatalogIndex, pool: ToolPool | undefined, log: EngineConfig['log'], tasks: TaskCalls) {
    this.#index = index;
    this.#pool = pool;
    this.#log = log;
    this.#tasks = tasks;
  }

  call(run: Run, params: Record<string, unknown> | undefined): CallResult {
    const name = params?.name;
    if (typeof name !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'tools/call needs a tool name');
    const tool = this.#index.tools.get(name);
    if (tool === undefined) throw new ProtocolError(ErrorCode.InvalidParams, `Unknown tool: ${name}`);
    const input = run.input(params);
    if (tool.requires !== undefined) {
      const missing = Object.fromEntries(Object.entries(tool.requires).filter(([cap]) => input.clientCapabilities?.[cap] === undefined));
      if (Object.keys(missing).length > 0) {
        throw missingCapabilities(missing, run.era.name);
      }
    }
    // Tools that never run as tasks (the common case) skip the decision entirely.
    const mayBeTask = (tool.taskSupport !== undefined && tool.taskSupport !== 'forbidden') || params?.task !== undefined;
    const asTask = mayBeTask && this.#tasks.mode(run, tool, params) === 'task';
    const args = params?.arguments ?? {};
    if (args === null || typeof args !== 'object' || Array.isArray(args)) throw new ProtocolError(ErrorCode.InvalidParams, 'arguments must be an object');
    // Compiled once by defineTool; an async Standard Schema comes back here with its parsed value.
    const checked = (params as Record<symbol, unknown>)[kCheckedArguments] as Record<string, unknown> | undefined ?? checkArguments(tool, args as Record<string, unknown>);
    if (checked instanceof Refusal) return checked.result();
    if (checked instanceof Promise) {
      return checked.then((value) => value instanceof Refusal ? value.result() : this.call(run, { ...params, [kCheckedArguments]: value }));
    }
    if (asTask) return this.#tasks.start(run, tool, tool.pool === true ? args as Record<string, unknown> : checked, params, input);
    const sink = run.progressSink(params);
    if (tool.pool === true) {
      const pool = this.#pool;
      if (pool === undefined) throw new ProtocolError(ErrorCode.InternalError, `tool ${name} runs in the pool, but the server has no pool`);
      // The raw arguments: the pool thread checks them again with its own copy of the tool, so a
      // Standard Schema's parsed value (which need not survive structured cloning) is made there.
      return run.runInPool(pool, tool.name, args as Record<string, unknown>, sink, input).then((outcome) => poolCallResult(outcome, (thrown) => this.#logThrown(run, name, thrown)), (error: unknown) => {
        if (run.killed) throw new CancelledError('killed');
        return toolError(error);
      });
    }
    const ctx = run.context(sink, input);
    run.enterInFlight(); // a synchronous tool holds its thread: it is in flight while it runs
    let output: ToolOutput | Promise<ToolOutput>;
    try {
      output = adoptThenable(tool.handler(checked, ctx));
    } catch (error) {
      return this.failed(run, name, error);
    }
    return output instanceof Promise ? new PendingToolOutput(output, this, tool, run) : toToolResult(tool, output);
  }

  /**
   * A tool threw: the client gets `isError` content, the operator a log line naming the tool (warn,
   * at most 20 a minute per thread). A cancelled tool that stopped by throwing (its CancelledError,
   * or the AbortError of something it gave `ctx.signal`) is not a failure.
   */
  failed(run: Run, name: string, error: unknown): CallToolResult {
    const result = toolError(error);
    if (!(error instanceof CancelledError)) this.#logThrown(run, name, error);
    return result;
  }

  /** The operator's line for a tool's throw (a pool thread's comes as its description): not when the call was cancelled. */
  #logThrown(run: Run, name: string, error: unknown): void {
    if (run.cancelled) return;
    const dropped = this.#failures.take();
    if (dropped >= 0) this.#log('warn', `sluice: tool ${name} threw${droppedNote(dropped)}: ${describeFailure(error)}`);
  }
}

/** An async tool's output still to come: its result once it settles, through one `then` (see `PendingResult`). */
class PendingToolOutput extends PendingResult {
  readonly #methods: ToolMethods;
  readonly #tool: Tool;
  readonly #run: Run;

  constructor(output: Promise<unknown>, methods: ToolMethods, tool: Tool, run: Run) {
    super(output);
    this.#methods = methods;
    this.#tool = tool;
    this.#run = run;
  }

  resolved(output: unknown): ReturnType<typeof toToolResult> {
    return toToolResult(this.#tool, output as ToolOutput);
  }

  rejected(error: unknown): CallToolResult {
    return this.#methods.failed(this.#run, this.#tool.name, error);
  }
}

/** A thrown error becomes isError content; protocol errors stay protocol errors. */
export function toolError(error: unknown): CallToolResult {
  if (error instanceof ProtocolError) throw error;
  return thrownResult(error);
}
