import { render } from '../registry/reason.js';
import { SluiceError } from '../errors.js';
import { isInputRequired } from './context.js';
import type { InputRequired, ToolContext } from './context.js';
import { rememberHeaderSpecs, scanHeaderAnnotations } from './header-annotations.js';
import type { HeaderSpec } from './header-annotations.js';
import { SchemaProblem, checkPublishedSchema, compileJsonSchema, jsonPath } from './schema.js';
import type { JsonSchema, SchemaCheck } from './schema.js';
import { isStandardSchema, jsonSchemaConverter } from './standard-schema.js';
import type { StandardSchemaV1 } from './standard-schema.js';

/** MCP content blocks a tool may return (the common ones; others pass through as given). */
export type ContentBlock =
  | { type: 'text'; text: string }
  | { type: 'image'; data: string; mimeType: string }
  | { type: 'audio'; data: string; mimeType: string }
  | { type: 'resource_link'; uri: string; name: string; [key: string]: unknown }
  | { type: 'resource'; resource: Record<string, unknown> };

/** A tools/call result. `structuredContent`, when present, is always a JSON object. */
export interface CallToolResult {
  content: ContentBlock[];
  structuredContent?: Record<string, unknown>;
  isError?: boolean;
  _meta?: Record<string, unknown>;
}

/**
 * What a handler may return:
 *  - a full CallToolResult (sent as given, once checked);
 *  - a string: one text block;
 *  - a JSON object: `structuredContent`, plus its JSON text as a text block;
 *  - an array, number, boolean or null: its JSON text as a text block only. MCP's
 *    `structuredContent` must be an object (the official SDK clients reject anything else), and
 *    Sluice does not invent a wrapper key the tool never declared: return `{ items: [...] }` (and
 *    declare it in `outputSchema`) to give clients structured data.
 */
export type ToolOutput = CallToolResult | InputRequired | string | number | boolean | null | Record<string, unknown> | unknown[];

/** A schema for arguments or results: JSON Schema (an object schema), or any Standard Schema (zod 4, …). */
export type ToolSchema = JsonSchema | StandardSchemaV1;

/** The arguments a handler gets: the schema's output type for a Standard Schema, else a plain record. */
export type InferArguments<S> = S extends StandardSchemaV1<unknown, infer Out> ? Out : Record<string, unknown>;

/** What a handler may return: with a Standard Schema `outputSchema`, that schema's input type (or a full result). */
export type InferToolOutput<S> = CallToolResult | InputRequired | StructuredOutput<S>;

/** The non-result values a handler may return (kept apart so full results keep their literal types). */
type StructuredOutput<S> = [S] extends [StandardSchemaV1<infer In, unknown>] ? In : string | number | boolean | null | Record<string, unknown> | unknown[];

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
  handler(args: InferArguments<In>, ctx: ToolContext): InferToolOutput<Out> | Promise<InferToolOutput<Out>>;
}

/** How a tool checks its arguments and results: made once by defineTool. */
interface Compiled {
  /** The shape of this record: another copy of Sluice (same shape) may have compiled the tool. */
  readonly version: 1;
  /** Arguments: the value the handler gets, a Refusal, or (async Standard Schema) a promise of either. */
  readonly args: (args: Record<string, unknown>) => Record<string, unknown> | Refusal | Promise<Record<string, unknown> | Refusal>;
  /** Structured results: undefined when there is no outputSchema. */
  readonly output: ((value: Record<string, unknown>) => Checked<Record<string, unknown>> | Promise<Checked<Record<string, unknown>>>) | undefined;
}

type Checked<T> = { readonly value: T; readonly problem?: undefined } | { readonly problem: string };

/**
 * Where a Tool keeps its compiled checks (internal: not exported from the package). A registered
 * symbol, so a tool defined through another copy of Sluice (a tools module resolving `sluice` to
 * another path) keeps its own checks, a zod schema's transforms included.
 */
export const kCompiled: unique symbol = Symbol.for('sluice.tool.compiled.v1');

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
  handler(args: Record<string, unknown>, ctx: ToolContext): ToolOutput | Promise<ToolOutput>;
  /** @internal */
  readonly [kCompiled]: Compiled;
}

/** Arguments that failed the tool's inputSchema (a value, not an Error: refusals cost no stack). */
export class Refusal {
  readonly problem: string;
  constructor(problem: string) {
    this.problem = problem;
  }

  /** The isError result the client gets. */
  result(): CallToolResult {
    return { content: [{ type: 'text', text: `Invalid arguments: ${this.problem}` }], isError: true };
  }
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
 * Checks a tool definition once, up front (piscina's "validate at the facade"), and compiles its
 * schemas. Throws a SluiceError with code `invalid_definition`, naming the tool and the reason.
 *
 * ```ts
 * defineTool({ name: 'add', description: 'Adds.', inputSchema: z.object({ a: z.number(), b: z.number() }),
 *   handler: ({ a, b }) => String(a + b) });   // a, b: number
 * ```
 */
/**
 * A JSON Schema tool whose arguments are typed by hand, as before Standard Schema support:
 * `defineTool<{ n: number }>({ inputSchema: { type: 'object', … }, handler: ({ n }) => … })`.
 * The schema still checks the arguments at run time; the type is the author's promise.
 */
export type JsonToolDefinition<Args extends Record<string, unknown>> = Omit<ToolDefinition<JsonSchema, JsonSchema>, 'handler'> & {
  handler(args: Args, ctx: ToolContext): ToolOutput | Promise<ToolOutput>;
};

/**
 * Checks a tool definition once, up front, and compiles its schemas. With a Standard Schema (zod 4,
 * …) the handler's arguments are typed from it; with JSON Schema, give the arguments' type as the
 * type parameter if you want one.
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

/** One schema of a definition: its published JSON Schema, an argument check and a result check. */
function compileSide(schema: unknown, given: JsonSchema | undefined, what: 'inputSchema' | 'outputSchema', io: 'input' | 'output'): {
  schema: JsonSchema; check: Compiled['args']; result: NonNullable<Compiled['output']>;
} {
  if (isStandardSchema(schema)) {
    const json = checkPublishedSchema(given ?? standardJsonSchema(schema, what, io), what);
    const validate = schema['~standard'].validate;
    const check = (value: Record<string, unknown>) => {
      const out = validate(value);
      return out instanceof Promise ? out.then(toArgs) : toArgs(out);
    };
    const result = (value: Record<string, unknown>) => {
      const out = validate(value);
      return out instanceof Promise ? out.then(toChecked) : toChecked(out);
    };
    return { schema: json, check, result };
  }
  if (given !== undefined) throw new SchemaProblem(`jsonSchema.${io} is only for Standard Schemas; ${what} is already JSON Schema`);
  if (schema !== null && typeof schema === 'object' && !Array.isArray(schema) && (schema as JsonSchema).type === undefined) {
    const values = Object.values(schema);
    if (values.length > 0 && values.every(isStandardSchema)) {
      throw new SchemaProblem(`${what} looks like a map of schemas (the official SDK's raw shape): wrap it, e.g. z.object({ ... })`);
    }
  }
  const { schema: json, check } = compileJsonSchema(schema, what);
  return { schema: json, check: (value) => argsOf(check, value), result: (value) => checkedOf(check, value) };
}

function argsOf(check: SchemaCheck, value: Record<string, unknown>): Record<string, unknown> | Refusal {
  const problem = check(value);
  return problem === undefined ? value : new Refusal(problem);
}

function checkedOf(check: SchemaCheck, value: Record<string, unknown>): Checked<Record<string, unknown>> {
  const problem = check(value);
  return problem === undefined ? { value } : { problem };
}

/** A Standard Schema's own JSON Schema: `~standard.jsonSchema` (Standard JSON Schema), or zod 4's toJSONSchema(). */
function standardJsonSchema(schema: StandardSchemaV1, what: string, io: 'input' | 'output'): unknown {
  const converter = jsonSchemaConverter(schema);
  try {
    if (converter !== undefined) return converter[io]({ target: 'draft-2020-12' });
    // zod 4 before Standard JSON Schema: the schema's own method (no import of zod here).
    const zod = schema as { _zod?: unknown; toJSONSchema?: (params: Record<string, unknown>) => unknown };
    if (zod._zod !== undefined && typeof zod.toJSONSchema === 'function') return zod.toJSONSchema({ io, target: 'draft-2020-12' });
  } catch (error) {
    throw new SchemaProblem(`${what}: the ${schema['~standard'].vendor} schema cannot be converted to JSON Schema (${error instanceof Error ? error.message : String(error)}); give it as jsonSchema.${io}`);
  }
  throw new SchemaProblem(`${what}: a ${schema['~standard'].vendor} schema cannot publish itself as JSON Schema; give the JSON Schema as jsonSchema.${io}`);
}

function issueText(issues: ReadonlyArray<StandardSchemaV1.Issue>): string {
  const issue = issues[0];
  if (issue === undefined) return '$: does not match the schema';
  let pointer = '';
  for (const segment of issue.path ?? []) {
    const key = typeof segment === 'object' && segment !== null ? segment.key : segment;
    pointer += `/${String(key).replace(/~/g, '~0').replace(/\//g, '~1')}`;
  }
  return `${jsonPath(pointer)}: ${issue.message}`;
}

function toArgs(result: StandardSchemaV1.Result<unknown>): Record<string, unknown> | Refusal {
  if (result.issues !== undefined) return new Refusal(issueText(result.issues));
  const value = result.value;
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? value as Record<string, unknown> : new Refusal('$: the schema did not produce an object');
}

function toChecked(result: StandardSchemaV1.Result<unknown>): Checked<Record<string, unknown>> {
  if (result.issues !== undefined) return { problem: issueText(result.issues) };
  const value = result.value;
  return value !== null && typeof value === 'object' && !Array.isArray(value) ? { value: value as Record<string, unknown> } : { problem: '$: the schema did not produce an object' };
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

/** Turns whatever a handler returned into a CallToolResult, without a tool's outputSchema (an input-required result passes through). */
export function toCallToolResult(output: ToolOutput): CallToolResult | InputRequired {
  if (isInputRequired(output)) return output;
  if (typeof output === 'string') return { content: [{ type: 'text', text: output }] };
  if (isFullResult(output)) return output;
  const text = JSON.stringify(output) ?? 'null';
  return isRecord(output) ? { content: [{ type: 'text', text }], structuredContent: output } : { content: [{ type: 'text', text }] };
}

/**
 * The result a client gets for what a tool's handler returned, the same in the HTTP worker and in a
 * pool thread: structuredContent is a JSON object or absent, matches the outputSchema when there is
 * one, and the whole result is JSON (no BigInt, function, symbol or cycle). Anything else becomes an
 * isError result naming the tool and the problem. Never throws.
 */
export function toToolResult(tool: Tool, output: ToolOutput): CallToolResult | InputRequired | Promise<CallToolResult | InputRequired> {
  try {
    if (isInputRequired(output)) return output;
    const full = isFullResult(output);
    if (full && output.structuredContent !== undefined && !isRecord(output.structuredContent)) {
      return toolFailure(tool, `structuredContent must be a JSON object, got ${kindOf(output.structuredContent)}`);
    }
    const check = tool[kCompiled].output;
    if (check === undefined || (full && output.isError === true)) {
      if (full) return finish(tool, output, undefined);
      // A returned value: walked first (JSON.stringify drops functions silently), then its JSON is the text.
      const problem = unserialisable(output, '$');
      return problem === undefined ? toCallToolResult(output) : toolFailure(tool, `the result cannot be sent as JSON: ${problem}`);
    }
    const structured = full ? output.structuredContent : isRecord(output) ? output : undefined;
    if (structured === undefined) {
      return toolFailure(tool, `it has an outputSchema, but the handler returned ${full ? 'a result without structuredContent' : kindOf(output)}`);
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

function afterOutputCheck(tool: Tool, output: ToolOutput, full: boolean, checked: Checked<Record<string, unknown>>): CallToolResult {
  if (checked.problem !== undefined) return toolFailure(tool, `the result does not match its outputSchema: ${checked.problem}`);
  const structured = checked.value;
  if (full) {
    const result = output as CallToolResult;
    return finish(tool, result.structuredContent === structured ? result : { ...result, structuredContent: structured }, structured);
  }
  return finish(tool, { content: [{ type: 'text', text: JSON.stringify(structured) }], structuredContent: structured }, structured);
}

/** The last check: everything in the result is JSON (a structuredContent already checked is skipped). */
function finish(tool: Tool, result: CallToolResult, checked: Record<string, unknown> | undefined): CallToolResult {
  const content = result.content;
  if (!Array.isArray(content)) return toolFailure(tool, 'content must be an array');
  let problem = unserialisable(content, '$.content');
  if (problem === undefined && result.structuredContent !== undefined && result.structuredContent !== checked) {
    problem = unserialisable(result.structuredContent, '$.structuredContent');
  }
  if (problem === undefined && result._meta !== undefined) problem = unserialisable(result._meta, '$._meta');
  return problem === undefined ? result : toolFailure(tool, `the result cannot be sent as JSON: ${problem}`);
}

/** An isError result about the tool itself (not its arguments), naming it. */
export function toolFailure(tool: Pick<Tool, 'name'>, problem: string): CallToolResult {
  return { content: [{ type: 'text', text: `tool ${tool.name}: ${problem}` }], isError: true };
}

function isFullResult(output: unknown): output is CallToolResult {
  return output !== null && typeof output === 'object' && !Array.isArray(output) && Array.isArray((output as CallToolResult).content);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (value === undefined) return 'nothing';
  return `a ${typeof value}`;
}

/** Deepest result nesting walked (JSON.stringify itself would overflow the stack not much deeper). */
const kMaxResultDepth = 1000;
/**
 * Objects on the current path (a cycle is an object met again below itself); reused, emptied after
 * each walk. The first kNear levels are an array scanned by identity: a Set would give every fresh
 * result object an identity hash, which costs more than scanning a short path. Deeper levels go to the Set.
 */
const kNear = 32;
const near: object[] = [];
const ancestors = new Set<object>();

/**
 * Why `value` cannot be sent as JSON (a BigInt, a function, a symbol, a cycle), with where, or
 * undefined. Walks without allocating unless it finds something; objects with toJSON (Date, Buffer)
 * are left to JSON.stringify.
 */
export function unserialisable(value: unknown, root: string): string | undefined {
  const path = walk(value, 0);
  near.length = 0;
  if (ancestors.size > 0) ancestors.clear();
  return path === undefined ? undefined : `${path.what} at ${root}${path.at.reverse().join('')}`;
}

interface Found { what: string; at: string[] }

function walk(value: unknown, depth: number): Found | undefined {
  switch (typeof value) {
    case 'string': case 'number': case 'boolean': case 'undefined': return undefined;
    case 'bigint': return { what: 'a BigInt', at: [] };
    case 'function': return { what: 'a function', at: [] };
    case 'symbol': return { what: 'a symbol', at: [] };
    default: break;
  }
  if (value === null) return undefined;
  const object = value as Record<string, unknown>;
  if (typeof object.toJSON === 'function') return undefined;
  for (let i = 0; i < depth && i < kNear; i++) if (near[i] === object) return { what: 'a circular reference', at: [] };
  if (depth > kNear && ancestors.has(object)) return { what: 'a circular reference', at: [] };
  if (depth >= kMaxResultDepth) return { what: `nesting deeper than ${kMaxResultDepth} levels`, at: [] };
  if (depth < kNear) near[depth] = object;
  else ancestors.add(object);
  if (Array.isArray(object)) {
    for (let i = 0; i < object.length; i++) {
      const found = walk(object[i], depth + 1);
      if (found !== undefined) {
        found.at.push(`[${i}]`);
        return found;
      }
    }
  } else {
    for (const key in object) {
      if (!Object.prototype.hasOwnProperty.call(object, key)) continue;
      const item = object[key];
      if (item === undefined) continue; // JSON leaves the property out
      const found = walk(item, depth + 1);
      if (found !== undefined) {
        found.at.push(`.${key}`);
        return found;
      }
    }
  }
  if (depth >= kNear) ancestors.delete(object);
  return undefined;
}

/**
 * The text of anything a handler threw: an Error's message, a string, or a short rendering of any
 * other value (`Object.create(null)`, an object whose toString throws, a Symbol), never a throw.
 */
export function errorText(error: unknown): string {
  if (typeof error === 'string') return error;
  try {
    if (error instanceof Error && typeof error.message === 'string') return error.message;
  } catch {
    // a Proxy or a getter that throws: rendered below
  }
  return render(error, 500);
}
