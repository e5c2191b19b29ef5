/**
 * Ajv 8 (https://ajv.js.org) as Sluice uses it: its options, and new instances per dialect. Shared
 * by the schema checks (schema.ts) and the meta-schema validators compiled at build time
 * (meta-validators.ts), which are made with the same options so that both answer alike.
 *
 * Ajv and ajv-formats are required (they are CommonJS, so synchronously) when the first instance is
 * made: a thread that imports Sluice and defines no tool (a server's supervisor, a client, the CLI)
 * never loads them, about 60 ms of CPU. Each module exports its class (the plugin) as `module.exports`.
 */
import { createRequire } from 'node:module';
import type { Ajv2020 } from 'ajv/dist/2020.js';
import type { Ajv as AjvDraft7, Options } from 'ajv';

/** The two JSON Schema dialects a tool schema may use. */
export type Dialect = 'draft2020' | 'draft07';

export type AjvInstance = Ajv2020 | AjvDraft7;

const kOptions: Options = {
  strict: true, // unknown keywords and formats are refused, not ignored
  strictTypes: false, // `properties` without `type` is common and harmless; "log" would print warnings
  strictTuples: false,
  strictRequired: false, // `anyOf: [{ required: ['a'] }]` names properties defined elsewhere
  allowUnionTypes: true,
  allErrors: false, // the first problem is enough, and cheaper
  addUsedSchema: false, // two tools may use the same `$id`
  unicodeRegExp: true,
  validateFormats: true,
  logger: false, // never print: a bad schema is an error at definition
};

/** Requires a CommonJS module (Ajv's, or a validator written by meta-validators.ts) from this folder. */
export const requireCjs = createRequire(import.meta.url);

/** A new Ajv for `dialect`, with ajv-formats and Sluice's options (`extra` on top). */
export function newAjv(dialect: Dialect, extra: Options = {}): AjvInstance {
  const options = { ...kOptions, ...extra };
  const ajv = dialect === 'draft07'
    ? new (requireCjs('ajv') as typeof AjvDraft7)(options)
    : new (requireCjs('ajv/dist/2020.js') as typeof Ajv2020)(options);
  (requireCjs('ajv-formats') as (ajv: AjvInstance) => unknown)(ajv);
  // Ajv resolves `$anchor` (draft 2020-12 core) but does not list it as a keyword, so strict mode
  // would refuse it; declaring it changes nothing else.
  if (dialect === 'draft2020') ajv.addKeyword('$anchor');
  return ajv;
}
