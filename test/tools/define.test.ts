// Tool definitions: checked and compiled once by defineTool (and collectCatalog); arguments and
// results checked per call by what was compiled. Unit level; end to end is test/server/definitions.test.ts.
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { collectCatalog } from '../../src/catalog/catalog.js';
import { createServer, defineTool, toCallToolResult } from '../../src/index.js';
import type { StandardSchemaV1, ToolDefinition } from '../../src/index.js';
import { Refusal, checkArguments, toToolResult } from '../../src/tools/define.js';
import type { Tool } from '../../src/tools/define.js';
import { kMaxSchemaDepth, kMaxSchemaNodes } from '../../src/tools/schema.js';
import everything from '../../conformance/fixture/everything.js';

const define = (inputSchema: unknown, extra: Partial<ToolDefinition> = {}) =>
  defineTool({ name: 't', description: 't', inputSchema: inputSchema as Record<string, unknown>, handler: () => 'ok', ...extra });

/** Nested `{ type: 'object', properties: { a: … } }`, `levels` deep. */
function nested(levels: number): Record<string, unknown> {
  let schema: Record<string, unknown> = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema } };
  return schema;
}

function argsOf(tool: Tool, args: Record<string, unknown>): unknown {
  const checked = checkArguments(tool, args);
  if (checked instanceof Promise) throw new Error('unexpected async check');
  return checked instanceof Refusal ? `refused: ${checked.problem}` : checked;
}

describe('defineTool refuses a definition that would break clients, at definition, naming the tool', () => {
  const bigProperties = Object.fromEntries(Array.from({ length: kMaxSchemaNodes }, (_, i) => [`p${i}`, { type: 'string' }]));
  it.each([
    ['no type', { properties: {} }, 'inputSchema must be an object schema (type: "object"'],
    ['a non-object type', { type: 'string' }, 'inputSchema must be an object schema'],
    ['type: numbr', { type: 'object', properties: { n: { type: 'numbr' } } }, 'inputSchema is not a valid JSON Schema: inputSchema/properties/n/type must be equal to one of the allowed values'],
    ['required: "n"', { type: 'object', required: 'n' }, 'inputSchema/required must be array'],
    ['a typo in a keyword', { type: 'object', properties: { s: { type: 'string', minLenght: 1 } } }, 'unknown keyword: "minLenght" (a typo?'],
    ['an unknown format', { type: 'object', properties: { s: { type: 'string', format: 'emial' } } }, 'unknown format "emial" at #/properties/s'],
    ['an invalid pattern', { type: 'object', properties: { s: { type: 'string', pattern: '(' } } }, 'Invalid regular expression'],
    ['a dangling $ref', { type: 'object', properties: { s: { $ref: '#/$defs/missing' } } }, "can't resolve reference #/$defs/missing"],
    ['a remote $ref', { type: 'object', properties: { s: { $ref: 'https://example.com/schema.json' } } }, "can't resolve reference https://example.com/schema.json"],
    ['an unknown $schema', { $schema: 'http://json-schema.org/draft-04/schema#', type: 'object' }, 'unsupported $schema'],
    ['a function inside', { type: 'object', properties: { s: { type: 'string', default: () => 'x' } } }, 'inputSchema is not JSON: a function at inputSchema.properties.s.default'],
    ['a RegExp pattern', { type: 'object', properties: { s: { type: 'string', pattern: /a/ } } }, 'inputSchema is not JSON: a RegExp at inputSchema.properties.s.pattern'],
    ['too deep', nested(kMaxSchemaDepth), `nested too deeply (more than ${kMaxSchemaDepth} levels)`],
    ['too large', { type: 'object', properties: bigProperties }, `too large (more than ${kMaxSchemaNodes} JSON values)`],
    ['the official SDK raw shape', { text: z.string() }, 'looks like a map of schemas'],
    ['a zod schema that is not an object', z.string(), 'inputSchema must be an object schema'],
    ['an array', [], 'inputSchema must be a JSON Schema object, got an array'],
  ])('inputSchema with %s', (_what, schema, reason) => {
    let error: unknown;
    try { define(schema); } catch (e) { error = e; }
    expect(error).toMatchObject({ code: 'invalid_definition' });
    expect((error as Error).message).toMatch(/^tool t: /);
    expect((error as Error).message).toContain(reason);
  });

  it('outputSchema is checked the same way', () => {
    expect(() => define({ type: 'object' }, { outputSchema: { type: 'array' } })).toThrow(/^tool t: outputSchema must be an object schema/);
    expect(() => define({ type: 'object' }, { outputSchema: { type: 'object', required: 'x' } })).toThrow(/outputSchema\/required must be array/);
  });

  it('a Standard Schema that cannot publish JSON Schema needs jsonSchema, and only such schemas take it', () => {
    const plain: StandardSchemaV1<{ x: number }> = { '~standard': { version: 1, vendor: 'hand', validate: (v) => ({ value: v as { x: number } }) } };
    expect(() => define(plain)).toThrow(/a hand schema cannot publish itself as JSON Schema; give the JSON Schema as jsonSchema.input/);
    const tool = defineTool({ name: 't', description: 't', inputSchema: plain, jsonSchema: { input: { type: 'object', properties: { x: { type: 'number' } } } }, handler: (a) => a.x.toFixed() });
    expect(tool.inputSchema).toEqual({ type: 'object', properties: { x: { type: 'number' } } });
    expect(() => define({ type: 'object' }, { jsonSchema: { input: { type: 'object' } } })).toThrow(/jsonSchema.input is only for Standard Schemas/);
  });

  it('bad names and handlers are invalid_definition too', () => {
    expect(() => defineTool({ name: 'a b', description: '', inputSchema: { type: 'object' }, handler: () => '' })).toThrow(expect.objectContaining({ code: 'invalid_definition' }));
    expect(() => defineTool({ name: 'x', description: '', inputSchema: { type: 'object' } } as never)).toThrow('tool x: handler must be a function');
  });

  it('collectCatalog checks tools not made by defineTool (hand-made objects), and createServer with it', () => {
    const handMade = { kind: 'sluice/tool', name: 'raw', description: 'raw', inputSchema: { properties: {} }, handler: () => 'x' };
    expect(() => collectCatalog([handMade])).toThrow(expect.objectContaining({ code: 'invalid_definition', message: expect.stringMatching(/^tool raw: inputSchema must be an object schema/) }));
    expect(() => createServer({ tools: [handMade as never], port: 0 })).toThrow(expect.objectContaining({ code: 'invalid_definition' }));
    const fine = collectCatalog([{ ...handMade, inputSchema: { type: 'object' } }]);
    expect(fine.tools[0]?.inputSchema).toEqual({ type: 'object' });
    expect(argsOf(fine.tools[0]!, {})).toEqual({});
  });
});

describe('what defineTool accepts', () => {
  it('the conformance fixture (draft 2020-12 $defs, $anchor, if/then/else, allOf/anyOf)', () => {
    const catalog = collectCatalog(everything);
    expect(catalog.tools.length).toBeGreaterThan(20);
    const tool = catalog.tools.find((t) => t.name === 'json_schema_2020_12_tool')!;
    expect(argsOf(tool, { name: 'a', contactMethod: 'email', email: 'a@b.c' })).toEqual({ name: 'a', contactMethod: 'email', email: 'a@b.c' });
    expect(argsOf(tool, { contactMethod: 'phone', email: 'a@b.c' })).toBe('refused: $.phone: required');
    expect(argsOf(tool, { email: 'x', address: { street: 1 } })).toBe('refused: $.address.street: must be string');
  });

  it('$anchor references resolve', () => {
    const tool = define({ type: 'object', $defs: { n: { $anchor: 'num', type: 'number' } }, properties: { a: { $ref: '#num' } } });
    expect(argsOf(tool, { a: 'x' })).toBe('refused: $.a: must be number');
    expect(argsOf(tool, { a: 1 })).toEqual({ a: 1 });
  });

  it('draft-07, vendor x- keywords, and the same $id in two tools', () => {
    const draft7 = define({ $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', properties: { a: { type: 'integer' } }, 'x-order': 1 });
    expect(argsOf(draft7, { a: 1.5 })).toBe('refused: $.a: must be integer');
    define({ $id: 'https://example.com/s', type: 'object' });
    define({ $id: 'https://example.com/s', type: 'object' });
  });

  it('publishes a private copy: changing the object given later changes nothing', () => {
    const schema = { type: 'object', properties: { a: { type: 'string' } } };
    const tool = define(schema);
    schema.properties.a.type = 'number';
    expect(tool.inputSchema).toEqual({ type: 'object', properties: { a: { type: 'string' } } });
    expect(argsOf(tool, { a: 'x' })).toEqual({ a: 'x' });
  });

  it('a recursive schema with arguments nested past the stack: refused, not a crash', () => {
    const tool = define({ type: 'object', $defs: { node: { type: 'array', items: { $ref: '#/$defs/node' } } }, properties: { tree: { $ref: '#/$defs/node' } } });
    let deep: unknown[] = [];
    for (let i = 0; i < 200_000; i++) deep = [deep];
    expect(argsOf(tool, { tree: [[[]]] })).toEqual({ tree: [[[]]] });
    expect(argsOf(tool, { tree: deep })).toBe('refused: $: nested too deeply to check');
  });

  it('zod 4: publishes z.toJSONSchema output (input side for arguments, output side for results) and parses', () => {
    const tool = defineTool({
      name: 'z', description: 'z',
      inputSchema: z.object({ n: z.number().int(), tag: z.string().default('none') }),
      outputSchema: z.object({ doubled: z.number() }),
      handler: (args) => ({ doubled: args.n * 2 }),
    });
    expect(tool.inputSchema).toEqual(z.toJSONSchema(z.object({ n: z.number().int(), tag: z.string().default('none') }), { io: 'input' }));
    expect(tool.outputSchema).toMatchObject({ type: 'object', required: ['doubled'], additionalProperties: false });
    expect(argsOf(tool, { n: 2 })).toEqual({ n: 2, tag: 'none' });
    expect(argsOf(tool, { n: 2.5 })).toMatch(/^refused: \$\.n: /);
  });
});

describe('results', () => {
  const plain = define({ type: 'object' });
  const withOutput = define({ type: 'object' }, { outputSchema: { type: 'object', properties: { when: { type: 'string', format: 'date-time' } }, required: ['when'] } });

  it('toCallToolResult: arrays and primitives are text only; objects are structuredContent too', () => {
    expect(toCallToolResult([1, 2])).toEqual({ content: [{ type: 'text', text: '[1,2]' }] });
    expect(toCallToolResult(null)).toEqual({ content: [{ type: 'text', text: 'null' }] });
    expect(toCallToolResult(undefined)).toEqual({ content: [] });
    expect(toCallToolResult({ a: 1 })).toEqual({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } });
    // Judged by what JSON.stringify sends: a Date is a string, an object's toJSON object is the structure.
    expect(toCallToolResult(new Date(0))).toEqual({ content: [{ type: 'text', text: '"1970-01-01T00:00:00.000Z"' }] });
    expect(toCallToolResult({ toJSON: () => ({ b: 2 }) })).toEqual({ content: [{ type: 'text', text: '{"b":2}' }], structuredContent: { b: 2 } });
    expect(toCallToolResult({ toJSON: () => undefined })).toEqual({ content: [{ type: 'text', text: 'null' }] });
  });

  it('values JSON handles (Date via toJSON, undefined properties) pass; others are named', () => {
    expect(toToolResult(plain, { at: new Date(0), gone: undefined })).toEqual({ content: [{ type: 'text', text: '{"at":"1970-01-01T00:00:00.000Z"}' }], structuredContent: { at: new Date(0), gone: undefined } });
    expect(toToolResult(plain, { content: [{ type: 'text', text: 'x', extra: Symbol('s') }] } as never)).toMatchObject({ isError: true, content: [{ text: 'tool t: the result cannot be sent as JSON: a symbol at $.content[0].extra' }] });
    const shared = { a: 1 };
    expect(toToolResult(plain, { x: shared, y: shared })).toMatchObject({ structuredContent: { x: shared, y: shared } }); // shared, not circular
  });

  it('content blocks: the protocol\'s five types pass as given, a type newer than the check passes, wrong fields are named', () => {
    const good = {
      content: [
        { type: 'text', text: 't', annotations: { audience: ['user'] } },
        { type: 'image', data: 'AAAA', mimeType: 'image/png' },
        { type: 'audio', data: 'AAAA', mimeType: 'audio/wav', _meta: { k: 1 } },
        { type: 'resource_link', uri: 'file:///a', name: 'a' },
        { type: 'resource', resource: { uri: 'file:///b', blob: 'AAAA', mimeType: 'application/octet-stream' } },
        { type: 'resource', resource: { uri: 'file:///c', text: 'c' } },
        { type: 'a_type_of_tomorrow', anything: [1] },
      ],
      isError: false,
      _meta: {},
    };
    expect(toToolResult(plain, good as never)).toBe(good);
    const problem = (content: unknown[], extra: Record<string, unknown> = {}) => (toToolResult(plain, { content, ...extra } as never) as { content: Array<{ text: string }> }).content[0].text;
    const prefix = 'tool t: the result is not a valid tools/call result: ';
    expect(problem([null])).toBe(`${prefix}$.content[0]: a content block must be an object, got null`);
    expect(problem([{ text: 'no type' }])).toBe(`${prefix}$.content[0].type: must be a string, got nothing`);
    expect(problem([{ type: 'text', text: 't' }, { type: 'audio', data: 'AAAA', mimeType: 3 }])).toBe(`${prefix}$.content[1].mimeType: must be a string, got a number`);
    expect(problem([{ type: 'image', data: 'AAA=A', mimeType: 'image/png' }])).toBe(`${prefix}$.content[0].data: must be base64 (A–Z, a–z, 0–9, + and /, padded with =), got a string that is not`);
    expect(problem([{ type: 'resource', resource: { uri: 'file:///a', blob: 'A' } }])).toBe(`${prefix}$.content[0].resource.blob: must be base64 (A–Z, a–z, 0–9, + and /, padded with =), got a string that is not`);
    expect(problem([{ type: 'resource_link', uri: 'file:///a' }])).toBe(`${prefix}$.content[0].name: must be a string, got nothing`);
    expect(problem([{ type: 'resource', resource: { uri: 'file:///a', text: 1 } }])).toBe(`${prefix}$.content[0].resource.text: must be a string, got a number`);
    expect(problem([{ type: 'resource', resource: [] }])).toBe(`${prefix}$.content[0].resource: resource contents must be an object, got an array`);
    expect(problem([{ type: 'text', text: 't', annotations: 'high' }])).toBe(`${prefix}$.content[0].annotations: must be an object, got a string`);
    expect(problem([], { isError: 1 })).toBe(`${prefix}$.isError: must be a boolean, got a number`);
    // An error result is checked too: a client refuses it just the same.
    expect(problem([{ type: 'text', text: 2 }], { isError: true })).toBe(`${prefix}$.content[0].text: must be a string, got a number`);
  });

  it('outputSchema: formats are checked on results too; error results are not checked', () => {
    expect(toToolResult(withOutput, { when: '2024-01-01T00:00:00Z' })).toMatchObject({ structuredContent: { when: '2024-01-01T00:00:00Z' } });
    expect(toToolResult(withOutput, { when: 'yesterday' })).toMatchObject({ isError: true, content: [{ text: 'tool t: the result does not match its outputSchema: $.when: must match format "date-time"' }] });
    expect(toToolResult(withOutput, { content: [{ type: 'text', text: 'no' }], isError: true })).toEqual({ content: [{ type: 'text', text: 'no' }], isError: true });
  });
});
