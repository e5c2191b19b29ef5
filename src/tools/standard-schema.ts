/**
 * The Standard Schema interfaces (https://standardschema.dev, spec v1.1), copied as the spec asks
 * ("copy the types into your project") so that Sluice needs no schema library at run time: zod 4,
 * Valibot, ArkType and the rest are recognised by duck typing (a `~standard` property with
 * `version: 1` and a `validate` function).
 */

/** A Standard Schema: validates (and may transform) a value. */
export interface StandardSchemaV1<Input = unknown, Output = Input> {
  readonly '~standard': StandardSchemaV1.Props<Input, Output>;
}

// eslint-disable-next-line @typescript-eslint/no-namespace -- the spec's own shape
export declare namespace StandardSchemaV1 {
  interface Props<Input = unknown, Output = Input> {
    readonly version: 1;
    readonly vendor: string;
    readonly validate: (value: unknown, options?: Options | undefined) => Result<Output> | Promise<Result<Output>>;
    readonly types?: Types<Input, Output> | undefined;
  }
  interface Options {
    readonly libraryOptions?: Record<string, unknown> | undefined;
  }
  type Result<Output> = SuccessResult<Output> | FailureResult;
  interface SuccessResult<Output> {
    readonly value: Output;
    readonly issues?: undefined;
  }
  interface FailureResult {
    readonly issues: ReadonlyArray<Issue>;
  }
  interface Issue {
    readonly message: string;
    readonly path?: ReadonlyArray<PropertyKey | PathSegment> | undefined;
  }
  interface PathSegment {
    readonly key: PropertyKey;
  }
  interface Types<Input = unknown, Output = Input> {
    readonly input: Input;
    readonly output: Output;
  }
  type InferInput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['input'];
  type InferOutput<Schema extends StandardSchemaV1> = NonNullable<Schema['~standard']['types']>['output'];
}

/**
 * Standard JSON Schema (spec v1.1): a schema that can publish itself as JSON Schema. zod 4 (from
 * 4.2) implements it on every schema; Sluice uses it to publish `inputSchema`/`outputSchema`.
 */
export interface StandardJSONSchemaConverter {
  readonly input: (options: { readonly target: string; readonly libraryOptions?: Record<string, unknown> }) => Record<string, unknown>;
  readonly output: (options: { readonly target: string; readonly libraryOptions?: Record<string, unknown> }) => Record<string, unknown>;
}

/** True for anything that implements Standard Schema v1 (no library is imported to decide). */
export function isStandardSchema(value: unknown): value is StandardSchemaV1 {
  if (value === null || (typeof value !== 'object' && typeof value !== 'function')) return false;
  const props = (value as { '~standard'?: unknown })['~standard'];
  return props !== null && typeof props === 'object' && (props as { version?: unknown }).version === 1
    && typeof (props as { validate?: unknown }).validate === 'function';
}

/** The `~standard.jsonSchema` converter, when the library offers one. */
export function jsonSchemaConverter(schema: StandardSchemaV1): StandardJSONSchemaConverter | undefined {
  const converter = (schema['~standard'] as { jsonSchema?: unknown }).jsonSchema;
  return converter !== null && typeof converter === 'object' && typeof (converter as StandardJSONSchemaConverter).input === 'function'
    && typeof (converter as StandardJSONSchemaConverter).output === 'function'
    ? converter as StandardJSONSchemaConverter
    : undefined;
}
