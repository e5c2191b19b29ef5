/**
 * The client's side of x-mcp-header (MCP 2026-07-28): the annotated arguments of a tool, learned
 * from tools/list, and the `Mcp-Param-{Name}` headers a tools/call mirrors them in. The client
 * imports nothing of the server, so this is its own small walk of `properties` (where annotations
 * may sit); a tool with an annotation that breaks the rules there gets no headers at all.
 */

/** `[header name, property path]` of each annotation of a tool. */
export type ParamHeaderSpecs = readonly (readonly [string, readonly string[]])[];

const kToken = /^[!#$%&'*+.^_`|~0-9A-Za-z-]+$/;
const kTypes: readonly unknown[] = ['string', 'integer', 'boolean'];

/** The annotations of an inputSchema (reached through `properties`); undefined when there are none or one is invalid. */
export function paramHeaderSpecs(schema: unknown): ParamHeaderSpecs | undefined {
  const out: Array<readonly [string, readonly string[]]> = [];
  const walk = (node: unknown, path: readonly string[]): boolean => {
    const properties = (node as { properties?: unknown } | null)?.properties;
    if (properties === null || typeof properties !== 'object') return true;
    for (const [key, sub] of Object.entries(properties as Record<string, Record<string, unknown> | null>)) {
      const name = sub?.['x-mcp-header'];
      if (name !== undefined) {
        if (typeof name !== 'string' || !kToken.test(name) || !kTypes.includes(sub?.type)) return false;
        if (out.some(([n]) => n.toLowerCase() === name.toLowerCase())) return false;
        out.push([name, [...path, key]]);
      }
      if (!walk(sub, [...path, key])) return false;
    }
    return true;
  };
  return walk(schema, []) && out.length > 0 ? out : undefined;
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
