/**
 * JSON Schema for tool definitions, checked by Ajv 8 (https://ajv.js.org), compiled once per tool
 * when the tool is defined, never per call.
 *
 * Dialect: JSON Schema draft 2020-12 (MCP's default) through `ajv/dist/2020`, or draft-07 when the
 * schema says `$schema: "http://json-schema.org/draft-07/schema#"`; any other `$schema` is refused.
 * Everything the dialect defines is enforced: `pattern`, `format` (ajv-formats, full mode),
 * `anyOf`/`oneOf`/`allOf`/`not`, `if`/`then`/`else`, local `$ref`/`$defs`/`$anchor`,
 * `dependentRequired`, `unevaluatedProperties`, … A `$ref` to anything outside the schema is refused
 * (nothing is fetched).
 *
 * At definition (`defineTool`), a schema is refused, with the reason, when:
 *  - it is not plain JSON, or deeper than kMaxSchemaDepth, or larger than kMaxSchemaNodes values;
 *  - it fails its dialect's meta-schema (`{ type: 'numbr' }`, `required: 'n'`);
 *  - it has a keyword the dialect does not define (Ajv strict mode: a typo such as `requird` or
 *    `minLenght` would otherwise be silently ignored); vendor keywords starting with `x-` are allowed
 *    as annotations; an unknown `format` or an invalid `pattern` is refused too;
 *  - it is not an object schema (`type: "object"` at the root, which MCP clients require).
 *
 * Bounds, and why:
 *  - Schemas: at most kMaxSchemaDepth (64) levels and kMaxSchemaNodes (4,096) JSON values. Ajv's
 *    compile time grows with schema size (measured on this machine: 100 string properties ≈ 75 ms,
 *    1,000 ≈ 570 ms; Ajv's code generator overflowed the stack near 2,000) and every HTTP worker
 *    compiles every tool at start (a pool thread, its outputSchemas); 4,096 values bounds that below about a second per tool,
 *    far above real tool schemas (tens to a few hundred values).
 *  - Arguments: bounded in size by the transport's maxBodyBytes before they are parsed. A recursive
 *    schema (`$ref: "#"`) recurses with the data: arguments nested deeper than the stack allows give
 *    "nested too deeply to check" (the RangeError is caught), never a crash.
 *  - Regular expressions (`pattern`, `patternProperties`) are compiled with the `u` flag (Ajv's
 *    unicodeRegExp) by V8's backtracking engine. Residual risk: a pattern with nested quantifiers
 *    (`^(a+)+$`) backtracks exponentially on a crafted string and stalls the worker for as long as
 *    the string (up to maxBodyBytes) allows. Patterns come from the tool's author, not the client:
 *    keep them free of nested quantifiers, bound the string with `maxLength` (checked before
 *    `pattern` by Ajv's keyword order for strings) or check in the handler. Operators can also start
 *    Node with `--enable-experimental-regexp-engine-on-excessive-backtracks`, which makes V8 fall
 *    back to its linear-time engine for every regular expression that backtracks excessively.
 *    (Ajv's other option, the native `re2` package, is not used: Sluice stays free of native
 *    add-ons besides uWS.)
 */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { newAjv } from './ajv.js';
import type { AjvInstance, Dialect } from './ajv.js';
import { metaValidator } from './meta-validators.js';

export type JsonSchema = Record<string, unknown>;

/** Deepest JSON nesting a tool schema may have. */
export const kMaxSchemaDepth = 64;
/** Most JSON values (objects, arrays, scalars) a tool schema may have. */
export const kMaxSchemaNodes = 4096;

/** A compiled check: undefined when the value conforms, else the first problem (`$.a.b: must be string`). */
export type SchemaCheck = (value: unknown) => string | undefined;

/** A schema that cannot be used; defineTool adds the tool's name. */
export class SchemaProblem extends Error {
  override name = 'SchemaProblem';
}

const kDraft2020 = /^https:\/\/json-schema\.org\/draft\/2020-12\/schema#?$/;
const kDraft7 = /^http:\/\/json-schema\.org\/draft-07\/schema#?$/;

/** This thread's Ajv per dialect, made on first use. */
const instances = new Map<Dialect, AjvInstance>();

let checkedElsewhere = false;

/**
 * Called by a pool thread before it imports the tools module (src/process/pool-thread.ts): the
 * thread that serves requests imported the same module first, refused it if a schema was bad, and
 * checks each call's arguments before a pool thread gets them. So from here on, in this thread, a
 * JSON Schema inputSchema is not compiled (its check hands the arguments on) and no schema is
 * checked against its meta-schema; an outputSchema is still compiled, since results are made here,
 * and a Standard Schema still validates (its parsed value is made here). A pool thread whose tools
 * have no JSON Schema outputSchema then never loads Ajv. Measured (Node 20, one small tool with an
 * outputSchema, fresh process): its definition costs 75-80 ms of CPU (Ajv's load, mostly) checked
 * in full or trusted alike, 0.5 ms trusted without the outputSchema.
 */
export function trustSchemasCheckedElsewhere(): void {
  checkedElsewhere = true;
}

/** True in a thread that called `trustSchemasCheckedElsewhere`. */
export function schemasCheckedElsewhere(): boolean {
  return checkedElsewhere;
}

/** The dialect a schema's `$schema` names: draft 2020-12 (also when it names none) or draft-07. */
function dialectOf(schema: JsonSchema, what: string): Dialect {
  const declared = schema.$schema;
  if (declared === undefined || (typeof declared === 'string' && kDraft2020.test(declared))) return 'draft2020';
  if (typeof declared === 'string' && kDraft7.test(declared)) return 'draft07';
  throw new SchemaProblem(`${what}: unsupported $schema ${JSON.stringify(declared)} (use draft 2020-12, the default, or draft-07)`);
}

/**
 * This thread's Ajv for a dialect. Ajv never checks a schema against its meta-schema itself
 * (`validateSchema: false`): `inspect` does, with the validator the build compiled
 * (meta-validators.ts), or not at all where schemas were checked elsewhere.
 */
function ajvFor(dialect: Dialect): AjvInstance {
  let ajv = instances.get(dialect);
  if (ajv === undefined) instances.set(dialect, ajv = newAjv(dialect, { validateSchema: false }));
  return ajv;
}

/**
 * Checks a schema's shape and bounds: plain JSON, depth, size. Returns the vendor (`x-`) keywords
 * it uses, which Ajv must be told about.
 */
function measure(schema: unknown, what: string): Set<string> {
  const vendor = new Set<string>();
  let nodes = 0;
  const stack: Array<[unknown, number, string]> = [[schema, 0, what]];
  while (stack.length > 0) {
    const [value, depth, path] = stack.pop()!;
    if (++nodes > kMaxSchemaNodes) throw new SchemaProblem(`${what} is too large (more than ${kMaxSchemaNodes} JSON values)`);
    if (depth > kMaxSchemaDepth) throw new SchemaProblem(`${what} is nested too deeply (more than ${kMaxSchemaDepth} levels) at ${path}`);
    switch (typeof value) {
      case 'string': case 'boolean': continue;
      case 'number':
        if (!Number.isFinite(value)) throw new SchemaProblem(`${what} is not JSON: ${String(value)} at ${path}`);
        continue;
      case 'object': break;
      default: throw new SchemaProblem(`${what} is not JSON: a ${typeof value} at ${path}`);
    }
    if (value === null) continue;
    if (Array.isArray(value)) {
      for (let i = 0; i < value.length; i++) stack.push([value[i], depth + 1, `${path}[${i}]`]);
      continue;
    }
    const proto = Object.getPrototypeOf(value) as unknown;
    if (proto !== Object.prototype && proto !== null) throw new SchemaProblem(`${what} is not JSON: a ${(value as object).constructor?.name ?? 'non-plain object'} at ${path}`);
    for (const key of Object.keys(value)) {
      if (key.startsWith('x-')) vendor.add(key);
      stack.push([(value as Record<string, unknown>)[key], depth + 1, `${path}.${key}`]);
    }
  }
  return vendor;
}

/**
 * Checks everything but Ajv's strict compile: bounds, dialect, meta-schema (not where schemas were
 * checked elsewhere), `type: "object"`. Loads Ajv only to word a refusal.
 */
function inspect(schema: unknown, what: string): { snapshot: JsonSchema; dialect: Dialect; vendor: Set<string> } {
  if (schema === null || typeof schema !== 'object' || Array.isArray(schema)) throw new SchemaProblem(`${what} must be a JSON Schema object, got ${schema === null ? 'null' : Array.isArray(schema) ? 'an array' : typeof schema}`);
  const vendor = measure(schema, what);
  // A private copy: what is published in tools/list and what was compiled cannot drift apart.
  const snapshot = JSON.parse(JSON.stringify(schema)) as JsonSchema;
  const dialect = dialectOf(snapshot, what);
  if (!checkedElsewhere) {
    const meta = metaValidator(dialect);
    if (meta(snapshot) !== true) throw new SchemaProblem(`${what} is not a valid JSON Schema: ${ajvFor(dialect).errorsText(meta.errors, { dataVar: what })}`);
  }
  if (snapshot.type !== 'object') {
    throw new SchemaProblem(`${what} must be an object schema (type: "object" at its root, which MCP clients require), got type ${JSON.stringify(snapshot.type) ?? 'undefined'}`);
  }
  return { snapshot, dialect, vendor };
}

/**
 * Vendor keywords each Ajv was told about. Ajv's getKeyword() answers false for a keyword added
 * without a definition, while addKeyword() refuses it a second time ("already defined"): asking
 * Ajv would make the second tool using an `x-` keyword (two tools with `x-mcp-header`) fail.
 */
const kDeclared = new WeakMap<AjvInstance, Set<string>>();

function declareVendorKeywords(ajv: AjvInstance, keywords: ReadonlySet<string>): void {
  let declared = kDeclared.get(ajv);
  if (declared === undefined) kDeclared.set(ajv, declared = new Set());
  for (const keyword of keywords) {
    if (declared.has(keyword)) continue;
    if (ajv.getKeyword(keyword) === false) ajv.addKeyword(keyword);
    declared.add(keyword);
  }
}

/**
 * Checks a JSON Schema given for a tool (see the module comment) and compiles it. Throws a
 * SchemaProblem naming `what` (`inputSchema`, `outputSchema`) and the reason.
 */
export function compileJsonSchema(schema: unknown, what: string): { schema: JsonSchema; check: SchemaCheck } {
  const { snapshot, dialect, vendor } = inspect(schema, what);
  const ajv = ajvFor(dialect);
  declareVendorKeywords(ajv, vendor);
  let validate: ValidateFunction;
  try {
    validate = ajv.compile(snapshot);
  } catch (error) {
    const message = error instanceof Error ? error.message : String(error);
    const hint = /unknown keyword/.test(message) ? ' (a typo? keywords of your own need an "x-" prefix)' : '';
    throw new SchemaProblem(`${what}: ${message.replace(/^strict mode: /, '').replace(/ ignored in schema at path "([^"]*)"/, ' at $1')}${hint}`);
  } finally {
    ajv.removeSchema(snapshot); // keep nothing in Ajv's cache: the compiled function is all we need
  }
  return { schema: snapshot, check: checker(validate) };
}

/**
 * Checks a JSON Schema that is published, not compiled: one a schema library generated (its own
 * validate() does the checking), or an inputSchema where schemas were checked elsewhere. Throws a
 * SchemaProblem like compileJsonSchema; loads no Ajv unless it refuses.
 */
export function checkPublishedSchema(schema: unknown, what: string): JsonSchema {
  return inspect(schema, what).snapshot;
}

function checker(validate: ValidateFunction): SchemaCheck {
  return (value) => {
    try {
      if (validate(value) === true) return undefined;
    } catch (error) {
      if (error instanceof RangeError) return '$: nested too deeply to check';
      throw error;
    }
    const first = validate.errors?.[0];
    return first === undefined ? '$: does not match the schema' : describe(first);
  };
}

/** One Ajv error as `$.path: problem`. */
function describe(error: ErrorObject): string {
  const path = jsonPath(error.instancePath);
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case 'required': return `${path}.${String(params.missingProperty)}: required`;
    case 'additionalProperties': return `${path}.${String(params.additionalProperty)}: not allowed`;
    case 'unevaluatedProperties': return `${path}.${String(params.unevaluatedProperty)}: not allowed`;
    default: return `${path}: ${error.message ?? error.keyword}`;
  }
}

/** A JSON Pointer (`/a/0/b~1c`) as `$.a[0].b/c`. */
export function jsonPath(pointer: string): string {
  if (pointer === '') return '$';
  let out = '$';
  for (const raw of pointer.slice(1).split('/')) {
    const key = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    out += /^(0|[1-9][0-9]*)$/.test(key) ? `[${key}]` : `.${key}`;
  }
  return out;
}
