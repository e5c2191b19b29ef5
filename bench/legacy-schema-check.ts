/**
 * A COPY of the argument checker Sluice used before tool schemas were compiled with Ajv (src/tools/schema.ts
 * at a222717), kept only so bench/validation.ts can compare the two. Not used by the server.
 *
 * A small JSON Schema checker for tool arguments: type, properties, required, additionalProperties,
 * items, enum, const, minimum/maximum, minLength/maxLength, minItems/maxItems. Enough for tool
 * inputs; anything else in a schema is ignored, not rejected. It walks at most `kMaxDepth` levels,
 * so hostile arguments cannot make it recurse without bound.
 */
export type JsonSchema = Record<string, unknown>;

const kMaxDepth = 32;

/** Returns the first problem found, or undefined when `value` conforms. */
export function checkSchema(schema: JsonSchema, value: unknown, path = '$', depth = 0): string | undefined {
  if (depth > kMaxDepth) return `${path}: nested too deeply`;
  const type = schema.type;
  if (type !== undefined) {
    const types = Array.isArray(type) ? type : [type];
    if (!types.some((t) => matchesType(t, value))) return `${path}: expected ${types.join(' or ')}`;
  }
  if (Array.isArray(schema.enum) && !schema.enum.some((e) => sameJson(e, value))) return `${path}: not one of the allowed values`;
  if ('const' in schema && !sameJson(schema.const, value)) return `${path}: not the required constant`;
  if (typeof value === 'number') {
    if (typeof schema.minimum === 'number' && value < schema.minimum) return `${path}: below ${schema.minimum}`;
    if (typeof schema.maximum === 'number' && value > schema.maximum) return `${path}: above ${schema.maximum}`;
  }
  if (typeof value === 'string') {
    if (typeof schema.minLength === 'number' && value.length < schema.minLength) return `${path}: shorter than ${schema.minLength}`;
    if (typeof schema.maxLength === 'number' && value.length > schema.maxLength) return `${path}: longer than ${schema.maxLength}`;
  }
  if (Array.isArray(value)) {
    if (typeof schema.minItems === 'number' && value.length < schema.minItems) return `${path}: fewer than ${schema.minItems} items`;
    if (typeof schema.maxItems === 'number' && value.length > schema.maxItems) return `${path}: more than ${schema.maxItems} items`;
    const items = schema.items;
    if (items !== null && typeof items === 'object' && !Array.isArray(items)) {
      for (let i = 0; i < value.length; i++) {
        const problem = checkSchema(items as JsonSchema, value[i], `${path}[${i}]`, depth + 1);
        if (problem !== undefined) return problem;
      }
    }
  }
  if (value !== null && typeof value === 'object' && !Array.isArray(value)) {
    const object = value as Record<string, unknown>;
    const properties = (schema.properties ?? {}) as Record<string, JsonSchema>;
    if (Array.isArray(schema.required)) {
      for (const name of schema.required) {
        if (typeof name === 'string' && !Object.prototype.hasOwnProperty.call(object, name)) return `${path}.${name}: required`;
      }
    }
    for (const name of Object.keys(object)) {
      const sub = Object.prototype.hasOwnProperty.call(properties, name) ? properties[name] : undefined;
      if (sub !== undefined && sub !== null && typeof sub === 'object') {
        const problem = checkSchema(sub, object[name], `${path}.${name}`, depth + 1);
        if (problem !== undefined) return problem;
      } else if (schema.additionalProperties === false) {
        return `${path}.${name}: not allowed`;
      }
    }
  }
  return undefined;
}

function matchesType(type: unknown, value: unknown): boolean {
  switch (type) {
    case 'object': return value !== null && typeof value === 'object' && !Array.isArray(value);
    case 'array': return Array.isArray(value);
    case 'string': return typeof value === 'string';
    case 'number': return typeof value === 'number' && Number.isFinite(value);
    case 'integer': return typeof value === 'number' && Number.isInteger(value);
    case 'boolean': return typeof value === 'boolean';
    case 'null': return value === null;
    default: return true;
  }
}

function sameJson(a: unknown, b: unknown): boolean {
  if (a === b) return true;
  if (typeof a !== 'object' || typeof b !== 'object' || a === null || b === null) return false;
  try {
    return JSON.stringify(a) === JSON.stringify(b);
  } catch {
    return false;
  }
}
