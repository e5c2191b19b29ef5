/**
 * `@opentelemetry/api`, loaded only if it is installed and something registered with it in this
 * thread. The one loader of the optional peer dependency, for the server's tracing and metrics
 * (src/telemetry/) and the client's (src/client/tracing.ts): it sits at the bottom of the tree so
 * that both may use it.
 *
 * The API keeps its registered providers on `globalThis` under a versioned symbol, so the copy
 * loaded here (CommonJS, through `require`) sees a provider that an ES module registered.
 */
import { createRequire } from 'node:module';
import type * as Api from '@opentelemetry/api';

/** The API module, as this file uses it. */
export type OtelApi = typeof Api;

/** A `require` (injectable: tests make the package missing). */
export type Loader = (id: string) => unknown;

let cached: OtelApi | null | undefined;

/**
 * Where API 1.x keeps what was registered with it in this thread (tracer, meter and context
 * providers, propagators, diag): created by the first registration. Any copy of the API, CommonJS or
 * ES module, uses this key, and only a 1.x registration is one our 1.x copy would use.
 */
const kRegistered = Symbol.for('opentelemetry.js.api.1');

/**
 * The API, or undefined when `@opentelemetry/api` is not installed, or when nothing is registered
 * with it in this thread yet: then it is not loaded at all (a CommonJS graph of ~40 ms of CPU per
 * thread), since with no provider it could only answer no-ops. Asked again later (a provider
 * registered meanwhile), it loads then. Other load errors are thrown. `load` (tests): loads now,
 * whatever is registered, and caches nothing.
 */
export function loadOtelApi(load?: Loader): OtelApi | undefined {
  if (load === undefined) {
    if (cached !== undefined) return cached ?? undefined;
    if ((globalThis as Record<symbol, unknown>)[kRegistered] === undefined) return undefined;
  }
  let api: OtelApi | undefined;
  try {
    api = (load ?? createRequire(import.meta.url))('@opentelemetry/api') as OtelApi;
  } catch (error) {
    if ((error as NodeJS.ErrnoException | undefined)?.code !== 'MODULE_NOT_FOUND') throw error;
    api = undefined;
  }
  if (load === undefined) cached = api ?? null;
  return api;
}
