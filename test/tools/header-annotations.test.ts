// x-mcp-header annotations (MCP 2026-07-28): each rule checked at definition (defineTool and
// collectCatalog), the specs a tool gets, and the header value decoding shared with Mcp-Name
// (canonical base64, fatal UTF-8, OWS). Unit level; end to end is test/server/param-headers.test.ts.
import { describe, expect, it } from 'vitest';
import * as z from 'zod';
import { collectCatalog } from '../../src/catalog/catalog.js';
import { defineTool } from '../../src/index.js';
import { headerSpecsOf, headerText, scanHeaderAnnotations, valueAt } from '../../src/tools/header-annotations.js';
import { decodeHeaderValue } from '../../src/transport/http/param-headers.js';

const define = (inputSchema: Record<string, unknown>) => defineTool({ name: 't', description: 't', inputSchema, handler: () => 'ok' });
const prop = (schema: Record<string, unknown>) => ({ type: 'object', properties: { p: schema } });
const b64 = (bytes: string | Uint8Array) => Buffer.from(bytes).toString('base64');

describe('x-mcp-header annotations at definition', () => {
  it('a tool without annotations has no specs', () => {
    expect(headerSpecsOf(define({ type: 'object', properties: { a: { type: 'string' } } }))).toEqual([]);
  });

  it('string, integer and boolean properties, nested through properties, give one spec each (path, type, header)', () => {
    const tool = define({
      type: 'object',
      properties: {
        region: { type: 'string', 'x-mcp-header': 'Region' },
        count: { type: 'integer', 'x-mcp-header': 'Count' },
        dry: { type: 'boolean', 'x-mcp-header': 'Dry-Run' },
        target: { type: 'object', properties: { zone: { type: 'string', 'x-mcp-header': 'Zone' } } },
        plain: { type: 'string' },
      },
    });
    expect(headerSpecsOf(tool)).toEqual([
      { name: 'Region', header: 'mcp-param-region', path: ['region'], type: 'string' },
      { name: 'Count', header: 'mcp-param-count', path: ['count'], type: 'integer' },
      { name: 'Dry-Run', header: 'mcp-param-dry-run', path: ['dry'], type: 'boolean' },
      { name: 'Zone', header: 'mcp-param-zone', path: ['target', 'zone'], type: 'string' },
    ]);
    // The annotation stays in the published schema (clients read it from tools/list).
    expect((tool.inputSchema.properties as Record<string, Record<string, unknown>>).region['x-mcp-header']).toBe('Region');
  });

  it('a property named "x-mcp-header" and the keyword inside const/default data are not annotations', () => {
    const tool = define({ type: 'object', properties: { 'x-mcp-header': { type: 'object', default: { 'x-mcp-header': 'A' } } } });
    expect(headerSpecsOf(tool)).toEqual([]);
  });

  it.each([
    ['an empty name', prop({ type: 'string', 'x-mcp-header': '' }), 'must be a non-empty header-name token'],
    ['a name with a space', prop({ type: 'string', 'x-mcp-header': 'My Region' }), 'must be a non-empty header-name token'],
    ['a name with a colon', prop({ type: 'string', 'x-mcp-header': 'a:b' }), 'must be a non-empty header-name token'],
    ['a non-ASCII name', prop({ type: 'string', 'x-mcp-header': 'Région' }), 'must be a non-empty header-name token'],
    ['a name that is not a string', prop({ type: 'string', 'x-mcp-header': 7 }), 'got 7'],
    ['a number property', prop({ type: 'number', 'x-mcp-header': 'N' }), 'at $.p must be on a property of type "string", "integer" or "boolean", got type "number"'],
    ['an object property', prop({ type: 'object', 'x-mcp-header': 'O' }), 'got type "object"'],
    ['an array property', prop({ type: 'array', 'x-mcp-header': 'A' }), 'got type "array"'],
    ['a property without type', prop({ 'x-mcp-header': 'U' }), 'got type none'],
    ['a type list', prop({ type: ['string', 'null'], 'x-mcp-header': 'L' }), 'got type ["string","null"]'],
    ['the root schema', { type: 'object', 'x-mcp-header': 'Root' }, 'must sit on a property, not on the root schema'],
    ['under items', prop({ type: 'array', items: { type: 'string', 'x-mcp-header': 'I' } }), 'at $.p.items must be on a property reached through "properties" only'],
    ['under items of an object', prop({ type: 'array', items: { type: 'object', properties: { q: { type: 'string', 'x-mcp-header': 'I' } } } }), 'at $.p.items.q must be on a property reached'],
    ['under prefixItems', prop({ type: 'array', prefixItems: [{ type: 'string', 'x-mcp-header': 'I' }] }), 'at $.p.prefixItems[0]'],
    ['under anyOf', prop({ anyOf: [{ type: 'string', 'x-mcp-header': 'A' }] }), 'at $.p.anyOf[0] must be on a property reached'],
    ['under oneOf', { type: 'object', oneOf: [{ properties: { q: { type: 'string', 'x-mcp-header': 'O' } } }] }, 'at $.oneOf[0].q'],
    ['under allOf', { type: 'object', allOf: [{ properties: { q: { type: 'string', 'x-mcp-header': 'A' } } }] }, 'at $.allOf[0].q'],
    ['under not', prop({ not: { type: 'string', 'x-mcp-header': 'N' } }), 'at $.p.not'],
    ['under if/then/else', prop({ if: { type: 'string' }, then: { type: 'string', 'x-mcp-header': 'T' } }), 'at $.p.then'],
    ['under $defs (through $ref)', { type: 'object', $defs: { r: { type: 'string', 'x-mcp-header': 'R' } }, properties: { p: { $ref: '#/$defs/r' } } }, 'at $.$defs:r'],
    ['under additionalProperties', { type: 'object', additionalProperties: { type: 'string', 'x-mcp-header': 'A' } }, 'at $.additionalProperties'],
    ['under patternProperties', { type: 'object', patternProperties: { '^a': { type: 'string', 'x-mcp-header': 'P' } } }, 'at $.patternProperties:^a'],
    ['a name used twice, whatever the case', { type: 'object', properties: { a: { type: 'string', 'x-mcp-header': 'Region' }, b: { type: 'string', 'x-mcp-header': 'REGION' } } },
      'x-mcp-header "REGION" at $.b repeats "Region" at $.a (names are case-insensitive)'],
  ])('refuses %s: invalid_definition naming the tool and the property', (_what, schema, reason) => {
    let error: unknown;
    try { define(schema); } catch (e) { error = e; }
    expect(error).toMatchObject({ code: 'invalid_definition' });
    expect((error as Error).message).toMatch(/^tool t: inputSchema: x-mcp-header /);
    expect((error as Error).message).toContain(reason);
  });

  it('a $ref sibling on a reachable property is fine (the annotation is on the property itself)', () => {
    const tool = define({ type: 'object', $defs: { s: { type: 'string' } }, properties: { p: { $ref: '#/$defs/s', type: 'string', 'x-mcp-header': 'P' } } });
    expect(headerSpecsOf(tool).map((s) => s.name)).toEqual(['P']);
  });

  it('collectCatalog checks hand-made tools the same way', () => {
    const handMade = { kind: 'sluice/tool', name: 'raw', description: 'raw', inputSchema: prop({ type: 'number', 'x-mcp-header': 'N' }), handler: () => 'x' };
    expect(() => collectCatalog([handMade])).toThrow(expect.objectContaining({ code: 'invalid_definition', message: expect.stringMatching(/^tool raw: inputSchema: x-mcp-header "N" at \$\.p must be on a property of type/) }));
  });

  it('a zod schema publishes its annotations through .meta(), and they are checked too', () => {
    const tool = defineTool({ name: 'z', description: 'z', inputSchema: z.object({ region: z.string().meta({ 'x-mcp-header': 'Region' }) }), handler: ({ region }) => region });
    expect(headerSpecsOf(tool)).toEqual([{ name: 'Region', header: 'mcp-param-region', path: ['region'], type: 'string' }]);
    expect(() => defineTool({ name: 'z', description: 'z', inputSchema: z.object({ n: z.number().meta({ 'x-mcp-header': 'N' }) }), handler: () => '' }))
      .toThrow(/tool z: inputSchema: x-mcp-header "N" at \$\.n must be on a property of type/);
  });

  it('scanHeaderAnnotations is pure (no tool needed)', () => {
    expect(scanHeaderAnnotations(prop({ type: 'string', 'x-mcp-header': 'P' }))).toHaveLength(1);
  });
});

describe('header text of argument values', () => {
  it.each([
    ['a string as is', 'Zürich ', 'Zürich '],
    ['an integer in decimal', 42, '42'],
    ['a negative integer', -7, '-7'],
    ['true', true, 'true'],
    ['false', false, 'false'],
    ['no text for a float', 1.5, undefined],
    ['no text for an unsafe integer', 2 ** 53, undefined],
    ['no text for null', null, undefined],
    ['no text for an object', {}, undefined],
  ])('%s', (_what, value, text) => {
    expect(headerText(value)).toBe(text);
  });

  it('valueAt follows own property keys only', () => {
    expect(valueAt({ a: { b: 1 } }, ['a', 'b'])).toBe(1);
    expect(valueAt({ a: [1] }, ['a', '0'])).toBeUndefined();
    expect(valueAt({}, ['toString'])).toBeUndefined();
    expect(valueAt(undefined, ['a'])).toBeUndefined();
  });
});

describe('header value decoding (Mcp-Name, Mcp-Param-*)', () => {
  it.each([
    ['a plain value', 'eu-west', 'eu-west'],
    ['OWS around it trimmed', ' \teu-west \t', 'eu-west'],
    ['inner spaces kept', 'a b', 'a b'],
    ['canonical base64', `=?base64?${b64('Hello')}?=`, 'Hello'],
    ['base64 of non-ASCII UTF-8', `=?base64?${b64('Zürich — 東京')}?=`, 'Zürich — 東京'],
    ['base64 with no padding', `=?base64?${b64('abc')}?=`, 'abc'],
    ['base64 with two padding characters', `=?base64?${b64('a')}?=`, 'a'],
    ['empty base64', '=?base64??=', ''],
    ['base64 inside OWS', `  =?base64?${b64('Hello')}?=  `, 'Hello'],
    ['no prefix: literal', 'SGVsbG8=', 'SGVsbG8='],
    ['no suffix: literal', '=?base64?SGVsbG8=', '=?base64?SGVsbG8='],
    ['a prefix of another case: literal', '=?BASE64?SGVsbG8=?=', '=?BASE64?SGVsbG8=?='],
  ])('accepts %s', (_what, raw, decoded) => {
    expect(decodeHeaderValue(raw)).toBe(decoded);
  });

  it.each([
    ['missing padding', '=?base64?SGVsbG8?='],
    ['too much padding', '=?base64?SGVsbA===?='],
    ['padding inside', '=?base64?SG=sbG8=?='],
    ['characters outside the alphabet', '=?base64?SGVs!!!bG8=?='],
    ['base64url characters', '=?base64?-_-_?='],
    ['whitespace inside', '=?base64?SGVs bG8=?='],
    ['non-canonical trailing bits (one pad)', '=?base64?SGVsbG9=?='],
    ['non-canonical trailing bits (two pads)', '=?base64?YR==?='],
    ['invalid UTF-8', `=?base64?${b64(new Uint8Array([0xff, 0xfe]))}?=`],
    ['a lone surrogate encoded as UTF-8', `=?base64?${b64(new Uint8Array([0xed, 0xa0, 0x80]))}?=`],
  ])('refuses %s', (_what, raw) => {
    expect(decodeHeaderValue(raw)).toBeUndefined();
  });
});

describe('vendor keywords across tools', () => {
  it('two tools may use the same x- keyword (Ajv is told about it once)', () => {
    const a = define({ type: 'object', properties: { r: { type: 'string', 'x-mcp-header': 'R', 'x-other': 1 } } });
    const b = define({ type: 'object', properties: { r: { type: 'string', 'x-mcp-header': 'R', 'x-other': 2 } } });
    expect(headerSpecsOf(a)).toEqual(headerSpecsOf(b));
  });
});
