// The meta-schema validators the build compiles (src/tools/meta-validators.ts) against Ajv's own
// `validateSchema`, compiled at run time with the same options: same verdict and same error text for
// hand-picked schemas and for random ones (fast-check), in both dialects. And the files in dist/
// are what the installed Ajv makes now, so a build after an Ajv upgrade cannot leave stale ones.
import { readFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { newAjv } from '../../src/tools/ajv.js';
import type { Dialect } from '../../src/tools/ajv.js';
import { kMetaValidatorsDir, metaValidator, metaValidatorSource } from '../../src/tools/meta-validators.js';

const kDialects: Dialect[] = ['draft2020', 'draft07'];

/** Ajv's verdict on a schema, compiled at run time, as `inspect` words it. */
function verdicts(dialect: Dialect): (schema: unknown) => { built: string; ajv: string } {
  const ajv = newAjv(dialect);
  const meta = metaValidator(dialect);
  const words = (ok: boolean, errors: Parameters<typeof ajv.errorsText>[0]) => (ok ? 'valid' : ajv.errorsText(errors, { dataVar: 'inputSchema' }));
  return (schema) => {
    const built = words(meta(schema), meta.errors);
    const own = ajv.validateSchema(schema as object) as boolean;
    return { built, ajv: words(own, ajv.errors) };
  };
}

const kExamples: unknown[] = [
  { type: 'object' },
  { type: 'object', properties: { n: { type: 'numbr' } } },
  { type: 'object', required: 'n' },
  { type: 'object', properties: { a: { items: { minLength: 'x' } } } },
  { type: 'object', $defs: { code: { type: 'string', pattern: '^[A-Z]{3}$' } }, properties: { code: { $ref: '#/$defs/code' } } },
  { type: 'object', properties: { id: { anyOf: [{ type: 'integer' }, { type: 'string', format: 'uuid' }] } }, additionalProperties: false },
  { type: 'object', if: { required: ['a'] }, then: { required: ['b'] }, else: { minProperties: -1 } },
  { type: 'object', dependentRequired: { a: ['b', 'b'] } },
  { type: 'object', unevaluatedProperties: { type: ['string', 'nul'] } },
  { type: 'object', prefixItems: [{ type: 'string' }, true, false] },
  { type: 'object', enum: [] },
  { type: 'object', minimum: '1' },
  { type: 'object', $id: 'not a uri ref ::' },
  { type: 'object', properties: { deep: { properties: { deeper: { properties: { deepest: { type: 7 } } } } } } },
  true,
  false,
  [],
];

describe('the build\'s meta-schema validators', () => {
  it.each(kDialects)('%s: the files in dist/ are what the installed Ajv makes now', (dialect) => {
    const file = fileURLToPath(new URL(`${dialect}.cjs`, kMetaValidatorsDir));
    expect(readFileSync(file, 'utf8')).toBe(metaValidatorSource(dialect));
  });

  it.each(kDialects)('%s: hand-picked schemas get Ajv\'s own verdict and error text', (dialect) => {
    const check = verdicts(dialect);
    const invalid = kExamples.filter((schema) => {
      const { built, ajv } = check(schema);
      expect(built, JSON.stringify(schema)).toBe(ajv);
      return built !== 'valid';
    });
    // The corpus exercises both answers, nested subschemas included.
    expect(invalid.length).toBeGreaterThanOrEqual(8);
    expect(check({ type: 'object', properties: { n: { type: 'numbr' } } }).built).toMatch(/inputSchema\/properties\/n\/type must be equal to one of the allowed values/);
  });

  it.each(kDialects)('%s: random schemas get Ajv\'s own verdict and error text', (dialect) => {
    const check = verdicts(dialect);
    const keyword = fc.constantFrom('type', 'properties', 'items', 'required', 'minimum', 'maxLength', 'enum', 'const', 'anyOf', 'oneOf',
      'not', '$ref', '$defs', 'definitions', 'additionalProperties', 'pattern', 'format', 'if', 'then', 'else', 'prefixItems',
      'unevaluatedProperties', 'dependentRequired', 'dependencies', '$id', '$anchor', 'minItems', 'uniqueItems', 'title', 'default', 'x-vendor');
    const { schema } = fc.letrec((tie) => ({
      schema: fc.oneof({ depthSize: 'small', withCrossShrink: true }, fc.boolean(), fc.dictionary(keyword, tie('value'), { maxKeys: 4 })),
      value: fc.oneof({ depthSize: 'small' },
        fc.constantFrom('object', 'string', 'numbr', 'integer', ['string', 'null'], '#/$defs/a', '^a+$', '(', 'uri', 'email', -1, 0, 3.5),
        fc.jsonValue({ maxDepth: 1 }),
        tie('schema'),
        fc.array(tie('schema'), { maxLength: 3 }),
        fc.dictionary(fc.string({ maxLength: 4 }), tie('schema'), { maxKeys: 3 })),
    }));
    let invalid = 0;
    fc.assert(fc.property(schema, (s) => {
      const { built, ajv } = check(s);
      if (built !== 'valid') invalid++;
      return built === ajv;
    }), { numRuns: 500, seed: 42 });
    expect(invalid).toBeGreaterThan(50);
  });
});
