/**
 * A tool's compiled checks: each schema of a definition (JSON Schema, or a Standard Schema such as
 * zod 4) made once into an argument check and a result check, and the refusal a failed argument
 * check gives. defineTool stores them on the tool under `kCompiled`.
 */
import { SchemaProblem, checkPublishedSchema, compileJsonSchema, jsonPath, schemasCheckedElsewhere } from './schema.js';
import type { JsonSchema, SchemaCheck } from './schema.js';
import { isStandardSchema, jsonSchemaConverter } from './standard-schema.js';
import type { StandardSchemaV1 } from './standard-schema.js';
import type { CallToolResult } from './result.js';

/** How a tool checks its arguments and results: made once by defineTool. */
export interface Compiled {
  /** The shape of this record: another copy of Sluice (same shape) may have compiled the tool. */
  readonly version: 1;
  /** Arguments: the value the handler gets, a Refusal, or (async Standard Schema) a promise of either. */
  readonly args: (args: Record<string, unknown>) => Record<string, unknown> | Refusal | Promise<Record<string, unknown> | Refusal>;
  /** Structured results: undefined when there is no outputSchema. */
  readonly output: ((value: Record<string, unknown>) => Checked<Record<string, unknown>> | Promise<Checked<Record<string, unknown>>>) | undefined;
}

export type Checked<T> = { readonly value: T; readonly problem?: undefined } | { readonly problem: string };

/**
 * Where a Tool keeps its compiled checks (internal: not exported from the package). A registered
 * symbol, so a tool defined through another copy of Sluice (a tools module resolving `sluice` to
 * another path) keeps its own checks, a zod schema's transforms included.
 */
export const kCompiled: unique symbol = Symbol.for('sluice.tool.compiled.v1');

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

/** One schema of a definition: its published JSON Schema, an argument check and a result check. */
export function compileSide(schema: unknown, given: JsonSchema | undefined, what: 'inputSchema' | 'outputSchema', io: 'input' | 'output'): {
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
  // A pool thread gets arguments the serving thread checked against the same schema.
  if (io === 'input' && schemasCheckedElsewhere()) return { schema: checkPublishedSchema(schema, what), check: handedOn, result: (value) => ({ value }) };
  const { schema: json, check } = compileJsonSchema(schema, what);
  return { schema: json, check: (value) => argsOf(check, value), result: (value) => checkedOf(check, value) };
}

function handedOn(value: Record<string, unknown>): Record<string, unknown> {
  return value;
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

