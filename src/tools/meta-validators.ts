/**
 * The validators of the two meta-schemas (JSON Schema draft 2020-12 and draft-07), compiled by Ajv
 * when Sluice is built instead of in every thread that checks tool schemas. Compiling the 2020-12
 * meta-schema is most of what checking the first schema costs (about 65 ms of CPU, against about
 * 5 ms to load the compiled code), and every HTTP worker and stdio server checks its tools at start.
 *
 * `npm run build` (and `prepare`) runs scripts/build-meta-validators.mjs, which calls
 * `writeMetaValidators`: Ajv's standalone code for each meta-schema, made with the options of
 * ajv.ts, written next to this module's build. test/tools/meta-validators.test.ts checks that they
 * answer as Ajv's own `validateSchema` does, error texts included, and that they are current.
 */
import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { ErrorObject, ValidateFunction } from 'ajv';
import { SluiceError } from '../errors.js';
import { newAjv, requireCjs } from './ajv.js';
import type { Dialect } from './ajv.js';

/** A compiled meta-schema: true when the schema conforms, else false with `errors`. */
export interface MetaValidator {
  (schema: unknown): boolean;
  errors?: ErrorObject[] | null;
}

const kMetaSchema: Readonly<Record<Dialect, string>> = {
  draft2020: 'https://json-schema.org/draft/2020-12/schema',
  draft07: 'http://json-schema.org/draft-07/schema',
};

/** Where the build writes them: dist/src/tools/meta-validators/. */
export const kMetaValidatorsDir = new URL('./meta-validators/', import.meta.url);

/** The file a dialect's validator is written to and loaded from. */
function validatorFile(dialect: Dialect, dir: URL): string {
  return fileURLToPath(new URL(`${dialect}.cjs`, dir));
}

/** The build's validator for `dialect` (`require` keeps it per thread); a clear error if the build did not make it. */
export function metaValidator(dialect: Dialect, dir: URL = kMetaValidatorsDir): MetaValidator {
  const file = validatorFile(dialect, dir);
  try {
    return requireCjs(file) as MetaValidator;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'MODULE_NOT_FOUND' || existsSync(file)) throw error;
    throw new SluiceError('build_incomplete', `${file} is missing: the meta-schema validators are made by \`npm run build\` (scripts/build-meta-validators.mjs after tsc)`);
  }
}

/** Ajv's standalone code for a dialect's meta-schema (CommonJS: `module.exports` is the validator). */
export function metaValidatorSource(dialect: Dialect): string {
  const ajv = newAjv(dialect, { code: { source: true } });
  const validate = ajv.getSchema(kMetaSchema[dialect]) as ValidateFunction | undefined;
  if (validate === undefined) throw new Error(`Ajv has no meta-schema ${kMetaSchema[dialect]}`);
  const standalone = (requireCjs('ajv/dist/standalone/index.js') as { default: (ajv: unknown, validate: ValidateFunction) => string }).default;
  return `// Made by scripts/build-meta-validators.mjs (src/tools/meta-validators.ts): Ajv's standalone code for ${kMetaSchema[dialect]}.\n${standalone(ajv, validate)}`;
}

/**
 * Writes both validators into `dir`. A file whose content would not change is left alone, and a new
 * one replaces the old by a rename: threads loading them while a build runs (the tests' `npm pack`
 * runs `prepare`) never read half a file.
 */
export function writeMetaValidators(dir: URL = kMetaValidatorsDir): string[] {
  mkdirSync(dir, { recursive: true });
  const written: string[] = [];
  for (const dialect of Object.keys(kMetaSchema) as Dialect[]) {
    const file = validatorFile(dialect, dir);
    const source = metaValidatorSource(dialect);
    if (existsSync(file) && readFileSync(file, 'utf8') === source) continue;
    const partial = `${file}.${process.pid}.partial`;
    writeFileSync(partial, source);
    renameSync(partial, file);
    written.push(file);
  }
  return written;
}
