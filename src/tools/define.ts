/**
 * Tool definitions: the types a tool author writes, `defineTool` (which checks a definition once and
 * compiles its schemas, compile.ts), and the per-call checks that use what it compiled: arguments
 * (`checkArguments`) and results against the outputSchema (`toToolResult`). Result types and their
 * JSON check are in result.ts; both are re-exported here, where the rest of the server imports them.
 */
import { SluiceError, kindOf } from '../errors.js';
import { isInputRequired } from './context.js';
import type { InputRequired, ToolContext } from './context.js';
import { Refusal, compileSide, kCompiled } from './compile.js';
import type { Checked, Compiled } from './compile.js';
import * as shapes from './content-shape.js';
import { rememberHeaderSpecs, scanHeaderAnnotations } from './header-annotations.js';
import type { HeaderSpec } from './header-annotations.js';
import * as results from './result.js';
import type { CallToolResult, ToolOutput } from './result.js';
import { SchemaProblem } from './schema.js';
import type { JsonSchema } from './schema.js';
import type { StandardSchemaV1 } from './standard-schema.js';

export { Refusal, kCompiled } from './compile.js';
export { errorText, thrownResult, toCallToolResult, toolFailure, unserialisable } from './result.js';
export type { CallToolResult, ContentBlock, ToolOutput } from './result.js';

// Module-local copies of what each tools/call result goes through: optimised code reads an imported
// binding through its cell, with a hole check, at every use; a module-local const is an immediate.
const { errorText, isFullResult, isRecord, toCallToolResult, toolFailure, unserialisable, wireValue } = results;
const { contentBlocksProblem } = shapes;

/** A schema for arguments or results: JSON Schema (an object schema), or any Standard Schema (zod 4, …). */
export type ToolSchema = JsonSchema | StandardSchemaV1;

/** The arguments a handler gets: the schema's output type for a Standard Schema, else a plain record. */
export type InferArguments<S> = S extends StandardSchemaV1<unknown, infer Out> ? Out : Record<string, unknown>;

/** What a handler may return: with a Standard Schema `outputSchema`, that schema's input type (or a full result). */
export type InferToolOutput<S> = CallToolResult | InputRequired | StructuredOutput<S>;

/** The non-result values a handler may return (kept apart so full results keep their literal types). */
type StructuredOutput<S> = [S] extends [StandardSchemaV1<infer In, unknown>] ? In : string | number | boolean | null | void | Record<string, unknown> | unknown[];

/** Whether a tool may run as a task (MCP `execution.taskSupport`). */
export type TaskSupport = 'forbidden' | 'optional' | 'required';

export interface ToolDefinition<In extends ToolSchema = JsonSchema, Out extends ToolSchema = JsonSchema> {
  /** 1–128 characters of [A-Za-z0-9_.-]. */
  name: string;
  title?: string;
  description: string;
  /**
   * The arguments: a JSON Schema object schema (`type: 'object'`, draft 2020-12 unless `$schema`
   * says draft-07), or a Standard Schema such as `z.object({...})` (zod 4), whose output type types
   * the handler's `args`. Checked before the handler runs; a failure is an `isError` result.
   */
  inputSchema: In;
  /**
   * The structured result, same forms as `inputSchema`. When given, every non-error result must
   * carry `structuredContent` that matches it, else the client gets an `isError` result naming the
   * problem (MCP: servers MUST conform; the SDK clients reject a result that does not).
   */
  outputSchema?: Out;
  /**
   * JSON Schemas to publish in tools/list for Standard Schemas that cannot convert themselves (no
   * `~standard.jsonSchema`, as zod 4.2+ has). Validation still uses the Standard Schema.
   */
  jsonSchema?: { input?: JsonSchema; output?: JsonSchema };
  annotations?: Record<string, unknown>;
  /**
   * Run in the CPU pool (piscina) instead of the HTTP worker's event loop. The tool must then be
   * defined in the tools module the server was given, so the pool thread can load it.
   */
  pool?: boolean;
  /**
   * Client capabilities the tool needs (2026-07-28): a request from a client that did not declare
   * them is refused with -32021 and HTTP 400, e.g. `{ sampling: {} }`.
   */
  requires?: Record<string, Record<string, unknown>>;
  /**
   * Whether the tool may run as a task (a call the client polls, answers and cancels after the
   * request ended): `'forbidden'` (the default), `'optional'` (a task when the client supports
   * tasks and the handler does not settle at once, else a plain call), or `'required'` (only as a
   * task: clients without task support are refused). The handler and its `ctx` are the same either
   * way: `ctx.request(...)` becomes the task's `input_required`, and a cancel raises `ctx.cancelled`.
   */
  taskSupport?: TaskSupport;
  /**
   * OAuth scopes a tools/call of it needs, besides the server's `auth.scopes` (only with `auth`):
   * a token lacking any gets 403 `insufficient_scope` naming every needed scope.
   */
  scopes?: readonly string[];
  /** The tool's work. Its value may come as a Promise or any thenable (a query builder), awaited as `await` would. */
  handler(args: InferArguments<In>, ctx: ToolContext): InferToolOutput<Out> | PromiseLike<InferToolOutput<Out>>;
}

/** A validated, frozen tool: `inputSchema`/`outputSchema` are the JSON Schemas published in tools/list. */
export interface Tool {
  readonly kind: 'sluice/tool';
  readonly name: string;
  readonly title?: string;
  readonly description: string;
  readonly inputSchema: JsonSchema;
  readonly outputSchema?: JsonSchema;
  readonly annotations?: Record<string, unknown>;
  readonly pool?: boolean;
  readonly requires?: Record<string, Record<string, unknown>>;
  readonly taskSupport?: TaskSupport;
  readonly scopes?: readonly string[];
  handler(args: Record<string, unknown>, ctx: ToolContext): ToolOutput | PromiseLike<ToolOutput>;
  /** @internal */
  readonly [kCompiled]: Compiled;
}

const kName = /^[A-Za-z0-9_.-]{1,128}$/;

/** Scope tokens (RFC 6749 §3.3). */
const kScopeToken = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

/**
 * A definition's `scopes`, checked and frozen (as an object to spread: none when absent). Shared by
 * tools, resources, templates and prompts.
 */
export function scopesField(what: string, scopes: unknown): { scopes?: readonly string[] } {
  if (scopes === undefined) return {};
  if (!Array.isArray(scopes) || !scopes.every((s) => typeof s === 'string' && kScopeToken.test(s))) {
    throw new SluiceError('invalid_definition', `${what}: scopes must be an array of scope tokens (printable ASCII, no spaces, quotes or backslashes), got ${JSON.stringify(scopes) ?? String(scopes)}`);
  }
  return { scopes: Object.freeze([...new Set(scopes as string[])]) };
}

function invalid(name: unknown, reason: string): SluiceError {
  return new SluiceError('invalid_definition', typeof name === 'string' ? `tool ${name}: ${reason}` : reason);
}

/**
 * A JSON Schema tool whose arguments are typed by hand, as before Standard Schema support:
 * `defineTool<{ n: number }>({ inputSchema: { type: 'object', … }, handler: ({ n }) => … })`.
 * The schema still checks the arguments at run time; the type is the author's promise.
 */
export type JsonToolDefinition<Args extends Record<string, unknown>> = Omit<ToolDefinition<JsonSchema, JsonSchema>, 'handler'> & {
  handler(args: Args, ctx: ToolContext): ToolOutput | PromiseLike<ToolOutput>;
};

/**
 * Checks a tool definition once, up front (validate at the facade), and compiles its schemas. With
 * a Standard Schema (zod 4, …) the handler's arguments are typed from it; with JSON Schema, give the
 * arguments' type as the type parameter if you want one. Throws a SluiceError with code
 * `invalid_definition`, naming the tool and the reason.
 *
 * ```ts
 * defineTool({ name: 'add', description: 'Adds.', inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   handler: ({ a, b }) => String(a + b) });   // a, b: number
 * ```
 */
export function defineTool<In extends ToolSchema = JsonSchema, Out extends ToolSchema = JsonSchema>(definition: ToolDefinition<In, Out>): Tool;
export function defineTool<Args extends Record<string, unknown>>(definition: JsonToolDefinition<Args>): Tool;
export function defineTool(definition: ToolDefinition<ToolSchema, ToolSchema>): Tool {
  if (definition === null || typeof definition !== 'object') throw invalid(undefined, 'a tool definition must be an object');
  const name = definition.name;
  if (typeof name !== 'string' || !kName.test(name)) {
    throw invalid(undefined, `tool name must be 1-128 characters of [A-Za-z0-9_.-], got ${JSON.stringify(name) ?? String(name)}`);
  }
  if (typeof definition.description !== 'string') throw invalid(name, 'description must be a string');
  if (typeof definition.handler !== 'function') throw invalid(name, 'handler must be a function');
  if (definition.pool !== undefined && typeof definition.pool !== 'boolean') throw invalid(name, 'pool must be a boolean');
  const taskSupport: unknown = definition.taskSupport;
  if (taskSupport !== undefined && taskSupport !== 'forbidden' && taskSupport !== 'optional' && taskSupport !== 'required') {
    throw invalid(name, `taskSupport must be 'forbidden', 'optional' or 'required', got ${JSON.stringify(taskSupport) ?? String(taskSupport)}`);
  }
  const scopes = scopesField(`tool ${name}`, definition.scopes);
  const published = definition.jsonSchema;
  if (published !== undefined && (published === null || typeof published !== 'object')) throw invalid(name, 'jsonSchema must be { input?, output? }');
  let inputSchema: JsonSchema;
  let outputSchema: JsonSchema | undefined;
  let args: Compiled['args'];
  let output: Compiled['output'];
  let headers: readonly HeaderSpec[];
  try {
    ({ schema: inputSchema, check: args } = compileSide(definition.inputSchema, published?.input, 'inputSchema', 'input'));
    headers = scanHeaderAnnotations(inputSchema);
    if (definition.outputSchema !== undefined) {
      const side = compileSide(definition.outputSchema, published?.output, 'outputSchema', 'output');
      outputSchema = side.schema;
      output = side.result;
    }
  } catch (error) {
    if (error instanceof SchemaProblem) throw invalid(name, error.message);
    throw error;
  }
  const tool: Record<string | symbol, unknown> = { ...(definition as object), ...scopes, kind: 'sluice/tool', inputSchema, [kCompiled]: { version: 1, args, output } satisfies Compiled };
  delete tool.jsonSchema;
  if (outputSchema === undefined) delete tool.outputSchema;
  else tool.outputSchema = outputSchema;
  Object.freeze(tool);
  rememberHeaderSpecs(tool, headers);
  return tool as unknown as Tool;
}

/** True for a tool made by this copy of defineTool (anything else is re-checked by collectCatalog). */
export function isDefinedTool(value: unknown): value is Tool {
  return value !== null && typeof value === 'object' && (value as Partial<Tool>)[kCompiled]?.version === 1;
}

/**
 * Checks a call's arguments against the tool's inputSchema: the arguments the handler gets (the
 * same object for JSON Schema; a Standard Schema's parsed value), a Refusal, or a promise of either
 * (a Standard Schema with async checks).
 */
export function checkArguments(tool: Tool, args: Record<string, unknown>): Record<string, unknown> | Refusal | Promise<Record<string, unknown> | Refusal> {
  try {
    return tool[kCompiled].args(args);
  } catch (error) {
    return new Refusal(`the schema threw: ${errorText(error)}`);
  }
}

/**
 * The result a client gets for what a tool's handler returned, the same in the HTTP worker and in a
 * pool thread: structuredContent is a JSON object or absent, matches the outputSchema when there is
 * one, and the whole result is JSON (no BigInt, function, symbol or cycle). Anything else becomes an
 * isError result naming the tool and the problem. Never throws.
 */
export function toToolResult(tool: Tool, returned: ToolOutput): CallToolResult | InputRequired | Promise<CallToolResult | InputRequired> {
  try {
    if (isInputRequired(returned)) return returned;
    const output = sentStructure(returned);
    if (output instanceof StructureProblem) return toolFailure(tool, output.problem);
    const full = isFullResult(output);
    const check = tool[kCompiled].output;
    if (check === undefined || (full && output.isError === true)) {
      if (full) return finish(tool, output, undefined);
      // A returned value: walked first (JSON.stringify drops functions silently), then its JSON is the text.
      const problem = unserialisable(output, '$');
      return problem === undefined ? toCallToolResult(output) : toolFailure(tool, `the result cannot be sent as JSON: ${problem}`);
    }
    const structured = full ? output.structuredContent : isRecord(output) ? wireValue(output) : undefined;
    if (!isRecord(structured)) {
      const what = full ? 'a result without structuredContent' : isRecord(output) ? `an object whose toJSON returns ${kindOf(structured)}` : kindOf(output);
      return toolFailure(tool, `it has an outputSchema, but the handler returned ${what}`);
    }
    // A cycle or a BigInt would make the check itself misbehave: refuse those first.
    const problem = unserialisable(structured, full ? '$.structuredContent' : '$');
    if (problem !== undefined) return toolFailure(tool, `the result cannot be sent as JSON: ${problem}`);
    let checked: ReturnType<NonNullable<Compiled['output']>>;
    try {
      checked = check(structured);
    } catch (error) {
      return toolFailure(tool, `the outputSchema threw: ${errorText(error)}`);
    }
    return checked instanceof Promise
      ? checked.then((c) => afterOutputCheck(tool, output, full, c), (error: unknown) => toolFailure(tool, `the outputSchema threw: ${errorText(error)}`))
      : afterOutputCheck(tool, output, full, checked);
  } catch (error) {
    return toolFailure(tool, `the result cannot be sent: ${errorText(error)}`);
  }
}

/** Why a full result's structuredContent cannot be sent (see `sentStructure`). */
class StructureProblem {
  constructor(readonly problem: string) {}
}

/**
 * A full result whose structuredContent has a toJSON method (a Date) with structuredContent as it
 * will be sent, or the problem when that is not a JSON object, which clients refuse; anything else
 * as it is.
 */
function sentStructure(output: ToolOutput): ToolOutput | StructureProblem {
  if (!isFullResult(output) || output.structuredContent === undefined) return output;
  const sent = wireValue(output.structuredContent);
  if (!isRecord(sent)) return new StructureProblem(`structuredContent must be a JSON object, got ${kindOf(sent)}${sent === output.structuredContent ? '' : ' (what its toJSON returns)'}`);
  return sent === output.structuredContent ? output : { ...output, structuredContent: sent };
}

function afterOutputCheck(tool: Tool, output: ToolOutput, full: boolean, checked: Checked<Record<string, unknown>>): CallToolResult {
  if (checked.problem !== undefined) return toolFailure(tool, `the result does not match its outputSchema: ${checked.problem}`);
  const structured = checked.value;
  if (full) {
    const result = output as CallToolResult;
    return finish(tool, result.structuredContent === structured ? result : { ...result, structuredContent: structured }, structured);
  }
  return finish(tool, { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }, structured);
}

/**
 * The last checks: everything in the result is JSON (a structuredContent already checked is
 * skipped), then it has the shape of a tools/call result (content-shape.ts), which clients check.
 */
function finish(tool: Tool, result: CallToolResult, checked: Record<string, unknown> | undefined): CallToolResult {
  const content = result.content;
  if (!Array.isArray(content)) return toolFailure(tool, 'content must be an array');
  let problem = unserialisable(content, '$.content');
  if (problem === undefined && result.structuredContent !== undefined && result.structuredContent !== checked) {
    problem = unserialisable(result.structuredContent, '$.structuredContent');
  }
  if (problem === undefined && result._meta !== undefined) problem = unserialisable(result._meta, '$._meta');
  if (problem !== undefined) return toolFailure(tool, `the result cannot be sent as JSON: ${problem}`);
  problem = contentBlocksProblem(content, '$.content');
  if (problem === undefined && result.isError !== undefined && typeof result.isError !== 'boolean') problem = `$.isError: must be a boolean, got ${kindOf(result.isError)}`;
  if (problem === undefined && result._meta !== undefined && !isRecord(result._meta)) problem = `$._meta: must be an object, got ${kindOf(result._meta)}`;
  return problem === undefined ? result : toolFailure(tool, `the result is not a valid tools/call result: ${problem}`);
}

