/**
 * `auth` options checked once at the facade and resolved into plain data (structured-cloneable, so
 * every HTTP worker builds its own verifier and JWKS cache from it). `verify`, a function, stays
 * with the raw options of an in-process server.
 */
import { SluiceError } from '../errors.js';
import { integer } from '../validate.js';
import type { AuthOptions } from './contract.js';

/** `auth` with defaults applied, scope hierarchy closed transitively. */
export interface ResolvedAuth {
  readonly audience: string;
  readonly issuers: readonly string[];
  readonly jwks: string | undefined;
  readonly scopes: readonly string[];
  readonly principalClaim: string;
  readonly algorithms: readonly string[];
  readonly clockToleranceSec: number;
  /** Each scope that implies others → every scope it implies, directly or not (itself excluded). */
  readonly scopeImplies: Readonly<Record<string, readonly string[]>>;
  readonly jwksCooldownMs: number;
  readonly jwksMaxAgeMs: number;
  /** Accepted `typ` headers, lower case without `application/` ('at+jwt', 'jwt'). */
  readonly tokenTypes: readonly string[];
}

/** The `typ` values `auth.tokenTypes` may list: RFC 9068 access tokens, and plain JWTs (or no `typ`). */
export const kTokenTypes: readonly string[] = Object.freeze(['at+jwt', 'JWT']);

/** Asymmetric JWS algorithms jose verifies; HMAC and `none` are never accepted (a public key is no secret). */
export const kAsymmetricAlgorithms: readonly string[] = Object.freeze([
  'RS256', 'RS384', 'RS512', 'PS256', 'PS384', 'PS512', 'ES256', 'ES384', 'ES512', 'EdDSA', 'Ed25519',
]);

const kDefaultAlgorithms: readonly string[] = Object.freeze(['RS256', 'PS256', 'ES256', 'EdDSA']);

/** Scope tokens (RFC 6749 §3.3: %x21 / %x23-5B / %x5D-7E). */
const kScopeToken = /^[\x21\x23-\x5b\x5d-\x7e]+$/;

function invalid(message: string): SluiceError {
  return new SluiceError('invalid_option', message);
}

function show(value: unknown): string {
  return JSON.stringify(value) ?? String(value);
}

/** An absolute http(s) URL without a fragment; `name` is the option. */
function httpUrl(name: string, value: unknown): string {
  if (typeof value !== 'string') throw invalid(`${name} must be an absolute http(s) URL, got ${show(value)}`);
  let url: URL;
  try {
    url = new URL(value);
  } catch {
    throw invalid(`${name} must be an absolute http(s) URL, got ${show(value)}`);
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hash !== '') throw invalid(`${name} must be an absolute http(s) URL without a fragment, got ${show(value)}`);
  return value;
}

function scopeList(name: string, value: unknown): readonly string[] {
  if (value === undefined) return Object.freeze([]);
  if (!Array.isArray(value) || !value.every((s) => typeof s === 'string' && kScopeToken.test(s))) {
    throw invalid(`${name} must be an array of scope tokens (printable ASCII, no spaces, quotes or backslashes), got ${show(value)}`);
  }
  return Object.freeze([...new Set(value as string[])]);
}

/** The `auth` option of createServer, checked; undefined when absent. */
export function resolveAuth(auth: unknown): ResolvedAuth | undefined {
  if (auth === undefined) return undefined;
  if (auth === null || typeof auth !== 'object') throw invalid(`auth must be { audience, issuers, jwks?, scopes?, … }, got ${String(auth)}`);
  const o = auth as Partial<Record<keyof AuthOptions, unknown>>;
  const audience = httpUrl('auth.audience', o.audience);
  if (!Array.isArray(o.issuers) || o.issuers.length === 0) throw invalid(`auth.issuers must be a non-empty array of issuer URLs, got ${show(o.issuers)}`);
  const issuers = Object.freeze(o.issuers.map((issuer: unknown, i) => httpUrl(`auth.issuers[${i}]`, issuer)));
  const jwks = o.jwks === undefined ? undefined : httpUrl('auth.jwks', o.jwks);
  const principalClaim = o.principalClaim ?? 'sub';
  if (typeof principalClaim !== 'string' || principalClaim === '') throw invalid(`auth.principalClaim must be a non-empty string, got ${show(principalClaim)}`);
  let algorithms = kDefaultAlgorithms;
  if (o.algorithms !== undefined) {
    if (!Array.isArray(o.algorithms) || o.algorithms.length === 0 || !o.algorithms.every((a) => typeof a === 'string' && kAsymmetricAlgorithms.includes(a))) {
      throw invalid(`auth.algorithms must be a non-empty array of ${kAsymmetricAlgorithms.join(', ')} (no HMAC, no none), got ${show(o.algorithms)}`);
    }
    algorithms = Object.freeze([...(o.algorithms as string[])]);
  }
  let tokenTypes: readonly string[] = Object.freeze(['at+jwt', 'jwt']);
  if (o.tokenTypes !== undefined) {
    if (!Array.isArray(o.tokenTypes) || o.tokenTypes.length === 0 || !o.tokenTypes.every((t) => typeof t === 'string' && kTokenTypes.includes(t))) {
      throw invalid(`auth.tokenTypes must be a non-empty array of ${kTokenTypes.map((t) => JSON.stringify(t)).join(', ')}, got ${show(o.tokenTypes)}`);
    }
    tokenTypes = Object.freeze([...new Set((o.tokenTypes as string[]).map((t) => t.toLowerCase()))]);
  }
  if (o.verify !== undefined && typeof o.verify !== 'function') throw invalid(`auth.verify must be a function, got ${show(o.verify)}`);
  return {
    audience,
    issuers,
    jwks,
    scopes: scopeList('auth.scopes', o.scopes),
    principalClaim,
    algorithms,
    clockToleranceSec: integer('auth.clockToleranceSec', o.clockToleranceSec, 30, 0, 3600),
    scopeImplies: closeHierarchy(o.scopeImplies),
    jwksCooldownMs: integer('auth.jwksCooldownMs', o.jwksCooldownMs, 30_000, 0, 2 ** 31 - 1),
    jwksMaxAgeMs: integer('auth.jwksMaxAgeMs', o.jwksMaxAgeMs, 600_000, 1000, 2 ** 31 - 1),
    tokenTypes,
  };
}

/** `scopeImplies` closed transitively (a cycle is allowed: each scope then implies the others). */
function closeHierarchy(value: unknown): Readonly<Record<string, readonly string[]>> {
  if (value === undefined) return Object.freeze({});
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw invalid(`auth.scopeImplies must be an object of scope → scopes, got ${show(value)}`);
  const direct = new Map<string, readonly string[]>();
  for (const [scope, implied] of Object.entries(value)) {
    if (!kScopeToken.test(scope)) throw invalid(`auth.scopeImplies: ${show(scope)} is not a scope token`);
    direct.set(scope, scopeList(`auth.scopeImplies[${show(scope)}]`, implied));
  }
  const closed: Record<string, readonly string[]> = {};
  for (const scope of direct.keys()) {
    const seen = new Set<string>();
    const stack = [...direct.get(scope)!];
    while (stack.length > 0) {
      const next = stack.pop()!;
      if (seen.has(next)) continue;
      seen.add(next);
      for (const more of direct.get(next) ?? []) stack.push(more);
    }
    seen.delete(scope);
    closed[scope] = Object.freeze([...seen]);
  }
  return Object.freeze(closed);
}

/** `verify` of the raw options, when a function. */
export function verifyOption(auth: unknown): AuthOptions['verify'] {
  if (auth === null || typeof auth !== 'object') return undefined;
  const verify = (auth as { verify?: unknown }).verify;
  return typeof verify === 'function' ? (verify as AuthOptions['verify']) : undefined;
}
