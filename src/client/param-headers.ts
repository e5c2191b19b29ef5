/**
 * The client's side of x-mcp-header (MCP 2026-07-28): the annotated arguments of a tool, learned
 * from tools/list, and the `Mcp-Param-{Name}` headers a tools/call mirrors them in. The client
 * imports nothing of the server, so this is its own small walk of the schema; a tool with an
 * annotation that breaks the rules gets no headers, and the client drops it from its tool lists.
 */

/** `[header name, property path]` of each annotation of a tool. */
export type ParamHeaderSpecs = readonly (readonly [string, readonly string[]])[];

const kToken = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const kTypes: readonly unknown[] = ['string', 'integer', 'boolean'];

// Where subschemas sit besides `properties`: an annotation in any of them has no single place in
// the arguments to be read from, so it makes the tool's annotations invalid.
const kSchemaMaps = ['patternProperties', '$defs', 'definitions', 'dependentSchemas'];
const kSchemaValues = ['additionalProperties', 'unevaluatedProperties', 'unevaluatedItems', 'items', 'additionalItems', 'contains',
  'propertyNames', 'not', 'if', 'then', 'else'];
const kSchemaLists = ['allOf', 'anyOf', 'oneOf', 'prefixItems', 'items'];
/** Subschema levels walked (a server's schema can be hostile too). */
const kMaxDepth = 64;

/** A tool's annotations break the rules: a client must drop the tool (not list it, not call it). */
export const kInvalidAnnotations = 'invalid';

/**
 * The annotations of an inputSchema: their specs, undefined when there are none, or
 * `kInvalidAnnotations` when one breaks a rule (not a non-empty header token; not on a `string`,
 * `integer` or `boolean` property; reached other than through `properties`; on the root; a name
 * repeated regardless of case).
 */
export function checkParamHeaders(schema: unknown): ParamHeaderSpecs | typeof kInvalidAnnotations | undefined {
  const out: Array<readonly [string, readonly string[]]> = [];
  const isSchema = (node: unknown): node is Record<string, unknown> => node !== null && typeof node === 'object' && !Array.isArray(node);
  const walk = (node: unknown, path: readonly string[] | undefined, depth = 0): boolean => {
    if (!isSchema(node)) return true;
    // A schema nested past any real one's depth is not walked further, nor trusted.
    if (depth > kMaxDepth) return false;
    if (Object.hasOwn(node, 'x-mcp-header')) {
      const name = node['x-mcp-header'];
      if (path === undefined || path.length === 0 || typeof name !== 'string' || !kToken.test(name) || !kTypes.includes(node.type)) return false;
      if (out.some(([n]) => n.toLowerCase() === name.toLowerCase())) return false;
      out.push([name, path]);
    }
    const properties = node.properties;
    if (isSchema(properties)) {
      for (const [key, sub] of Object.entries(properties)) if (!walk(sub, path === undefined ? undefined : [...path, key], depth + 1)) return false;
    }
    for (const key of kSchemaMaps) {
      const map = node[key];
      if (isSchema(map) && !Object.values(map).every((sub) => walk(sub, undefined, depth + 1))) return false;
    }
    for (const key of kSchemaValues) if (!Array.isArray(node[key]) && !walk(node[key], undefined, depth + 1)) return false;
    for (const key of kSchemaLists) {
      const list = node[key];
      if (Array.isArray(list) && !list.every((sub) => walk(sub, undefined, depth + 1))) return false;
    }
    return true;
  };
  if (!walk(schema, [])) return kInvalidAnnotations;
  return out.length > 0 ? out : undefined;
}

/** The annotations of an inputSchema; undefined when there are none or one is invalid. */
export function paramHeaderSpecs(schema: unknown): ParamHeaderSpecs | undefined {
  const specs = checkParamHeaders(schema);
  return specs === kInvalidAnnotations ? undefined : specs;
}

/** The headers of a tools/call's annotated arguments (those present, as strings, integers or booleans). */
export function paramHeaders(specs: ParamHeaderSpecs, args: unknown, into: Record<string, string>): void {
  for (const [name, path] of specs) {
    let value = args;
    for (const key of path) value = value !== null && typeof value === 'object' && Object.hasOwn(value, key) ? (value as Record<string, unknown>)[key] : undefined;
    const text = typeof value === 'string' ? value : typeof value === 'boolean' || Number.isSafeInteger(value) ? String(value) : undefined;
    if (text !== undefined) into[`mcp-param-${name.toLowerCase()}`] = headerValue(text);
  }
}

/** A value as a header carries it: as is when it is printable ASCII without spaces at its ends, else `=?base64?…?=`. */
export function headerValue(value: string): string {
  return /^(?:[\x21-\x7e](?:[\x20-\x7e]*[\x21-\x7e])?)?$/.test(value) ? value : `=?base64?${Buffer.from(value).toString('base64')}?=`;
}
