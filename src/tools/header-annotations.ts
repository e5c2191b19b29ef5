/**
 * `x-mcp-header` (MCP 2026-07-28): an inputSchema property may ask clients to mirror its value in
 * an `Mcp-Param-{Name}` HTTP header, so that proxies and gateways can route on it without parsing
 * the body. This module is a pure JSON Schema walk, with no knowledge of HTTP: it checks the
 * annotations of a tool (defineTool calls it, so a bad one stops the start) and gives each tool's
 * header specs, which the HTTP transport checks against the body (transport/http/param-headers.ts).
 *
 * Rules (spec, server/tools.mdx#x-mcp-header): the value is a non-empty RFC 9110 token, unique
 * within the tool regardless of case; it sits only on a `string`, `integer` or `boolean` property
 * (a `number` has no single text form); and the property is reached from the root through
 * `properties` keys only: a value under `items`, `anyOf`, `not`, `if`, `$ref`, … has no single
 * place in the arguments to read it from.
 */
import { SchemaProblem } from './schema.js';
import type { JsonSchema } from './schema.js';

/** What one `x-mcp-header` annotation asks for. */
export interface HeaderSpec {
  /** The annotation's value as written (`Region`): the header is `Mcp-Param-Region`. */
  readonly name: string;
  /** `mcp-param-` + the lower-case name: how the transport looks the header up. */
  readonly header: string;
  /** Property keys from the arguments object down to the value (`['region']`, `['target', 'zone']`). */
  readonly path: readonly string[];
  readonly type: 'string' | 'integer' | 'boolean';
}

export const kHeaderKeyword = 'x-mcp-header';

/** An RFC 9110 token (`tchar`+). */
const kToken = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const kTypes: ReadonlySet<string> = new Set(['string', 'integer', 'boolean']);

// Where subschemas sit. Only `properties` keeps a property reachable; every other place is walked
// too, to refuse an annotation there instead of silently ignoring it.
const kSchemaMaps = ['properties', 'patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const kSchemaValues = ['additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'items', 'additionalItems', 'contains',
  'propertyNames', 'not', 'if', 'then', 'else'];
const kSchemaLists = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];

const kNone: readonly HeaderSpec[] = Object.freeze([]);
const kByTool = new WeakMap<object, readonly HeaderSpec[]>();

/**
 * The header specs of an input schema (empty when it has none). Throws a SchemaProblem naming the
 * property path when an annotation breaks a rule.
 */
export function scanHeaderAnnotations(schema: JsonSchema): readonly HeaderSpec[] {
  const specs: HeaderSpec[] = [];
  walk(schema, [], true, specs);
  if (specs.length === 0) return kNone;
  const seen = new Map<string, HeaderSpec>();
  for (const spec of specs) {
    const other = seen.get(spec.header);
    if (other !== undefined) {
      throw new SchemaProblem(`inputSchema: x-mcp-header ${JSON.stringify(spec.name)} at ${pathText(spec.path)} repeats ${JSON.stringify(other.name)} at ${pathText(other.path)} (names are case-insensitive)`);
    }
    seen.set(spec.header, spec);
  }
  return Object.freeze(specs.map((s) => Object.freeze(s)));
}

/**
 * The header specs of a tool's published inputSchema, computed once per tool object. defineTool
 * has checked them already; a tool it did not make is re-defined by the catalog, so this never
 * meets a bad annotation in a served tool (it throws if it does).
 */
export function headerSpecsOf(tool: { readonly inputSchema: JsonSchema }): readonly HeaderSpec[] {
  let specs = kByTool.get(tool);
  if (specs === undefined) {
    specs = scanHeaderAnnotations(tool.inputSchema);
    kByTool.set(tool, specs);
  }
  return specs;
}

/** Records a defined tool's specs (defineTool has them at hand), so headerSpecsOf never scans it again. */
export function rememberHeaderSpecs(tool: object, specs: readonly HeaderSpec[]): void {
  kByTool.set(tool, specs);
}

/**
 * The header text of an argument value, as a client must send it: a string as is, a JS-safe
 * integer in decimal, a boolean as `true`/`false`. Undefined for anything else (absent, null, a
 * value of another type: the tool's own argument check reports that one).
 */
export function headerText(value: unknown): string | undefined {
  switch (typeof value) {
    case 'string': return value;
    case 'boolean': return value ? 'true' : 'false';
    case 'number': return Number.isSafeInteger(value) ? String(value) : undefined;
    default: return undefined;
  }
}

/** The value at `path` in an arguments object (undefined when any step is missing or not an object). */
export function valueAt(args: unknown, path: readonly string[]): unknown {
  let value = args;
  for (const key of path) {
    if (value === null || typeof value !== 'object' || Array.isArray(value) || !Object.hasOwn(value, key)) return undefined;
    value = (value as Record<string, unknown>)[key];
  }
  return value;
}

function walk(node: unknown, path: readonly string[], reachable: boolean, out: HeaderSpec[]): void {
  if (node === null || typeof node !== 'object' || Array.isArray(node)) return; // `true`/`false` schemas
  const schema = node as JsonSchema;
  if (Object.hasOwn(schema, kHeaderKeyword)) out.push(specOf(schema, path, reachable));
  for (const key of kSchemaMaps) {
    const map = schema[key];
    if (map === null || typeof map !== 'object' || Array.isArray(map)) continue;
    for (const [name, sub] of Object.entries(map as Record<string, unknown>)) {
      walk(sub, [...path, key === 'properties' ? name : `${key}:${name}`], reachable && key === 'properties', out);
    }
  }
  for (const key of kSchemaValues) if (!Array.isArray(schema[key])) walk(schema[key], [...path, key], false, out);
  for (const key of kSchemaLists) {
    const list = schema[key];
    if (Array.isArray(list)) list.forEach((sub, i) => walk(sub, [...path, `${key}[${i}]`], false, out));
  }
}

function specOf(schema: JsonSchema, path: readonly string[], reachable: boolean): HeaderSpec {
  const at = pathText(path);
  const name = schema[kHeaderKeyword];
  if (typeof name !== 'string' || !kToken.test(name)) {
    throw new SchemaProblem(`inputSchema: x-mcp-header at ${at} must be a non-empty header-name token (letters, digits, !#$%&'*+.^_\`|~-), got ${JSON.stringify(name) ?? String(name)}`);
  }
  if (path.length === 0) throw new SchemaProblem(`inputSchema: x-mcp-header ${JSON.stringify(name)} must sit on a property, not on the root schema`);
  if (!reachable) {
    throw new SchemaProblem(`inputSchema: x-mcp-header ${JSON.stringify(name)} at ${at} must be on a property reached through "properties" only (not items, anyOf/oneOf/allOf, not, if/then/else, $ref, additionalProperties, …)`);
  }
  const type = schema.type;
  if (typeof type !== 'string' || !kTypes.has(type)) {
    throw new SchemaProblem(`inputSchema: x-mcp-header ${JSON.stringify(name)} at ${at} must be on a property of type "string", "integer" or "boolean", got type ${JSON.stringify(type) ?? 'none'}`);
  }
  return { name, header: `mcp-param-${name.toLowerCase()}`, path, type: type as HeaderSpec['type'] };
}

function pathText(path: readonly string[]): string {
  return path.length === 0 ? '$' : `$.${path.join('.')}`;
}
