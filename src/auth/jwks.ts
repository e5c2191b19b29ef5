/**
 * Key sets fetched over HTTP(S) and cached (our own fetch around jose's `createLocalJWKSet`, so the
 * refresh policy is ours): fetched on first use; refetched when older than `maxAgeMs`, and on a key
 * id the cached set lacks, at most once per `cooldownMs` (a flood of tokens naming made-up `kid`s
 * costs the authorization server one request per cooldown, not one per token). Issuer metadata
 * (RFC 8414, then OpenID configuration) names the JWKS URL when none is configured; it is fetched
 * once and kept (a failed discovery is retried after the cooldown).
 */
import { createLocalJWKSet, errors } from 'jose';
import type { CryptoKey, JSONWebKeySet, JWSHeaderParameters, FlattenedJWSInput } from 'jose';

/** The JWKS or metadata could not be fetched: the server cannot decide (503), the token is not at fault. */
export class AuthUnavailable extends Error {}

export interface FetchPolicy {
  /** Least time between two refetches forced by an unknown `kid` (or between failed discoveries). */
  readonly cooldownMs: number;
  /** A key set older than this is refetched before use. */
  readonly maxAgeMs: number;
  /** One fetch's time limit. */
  readonly timeoutMs: number;
}

/** Largest JWKS or metadata document read (a key set is a few KiB). */
const kMaxDocumentBytes = 1024 * 1024;

/** GETs a JSON object, bounded in time and size. */
async function fetchJson(url: string, timeoutMs: number): Promise<Record<string, unknown>> {
  let response: Response;
  try {
    response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
  } catch (error) {
    throw new AuthUnavailable(`GET ${url} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
  if (!response.ok) {
    await response.body?.cancel();
    throw new AuthUnavailable(`GET ${url}: HTTP ${response.status}`);
  }
  const length = Number(response.headers.get('content-length') ?? '0');
  if (length > kMaxDocumentBytes) {
    await response.body?.cancel();
    throw new AuthUnavailable(`GET ${url}: document larger than ${kMaxDocumentBytes} bytes`);
  }
  const text = await response.text();
  if (text.length > kMaxDocumentBytes) throw new AuthUnavailable(`GET ${url}: document larger than ${kMaxDocumentBytes} bytes`);
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    throw new AuthUnavailable(`GET ${url}: not JSON`);
  }
  if (value === null || typeof value !== 'object' || Array.isArray(value)) throw new AuthUnavailable(`GET ${url}: not a JSON object`);
  return value as Record<string, unknown>;
}

type KeyGetter = (header: JWSHeaderParameters, input: FlattenedJWSInput) => Promise<CryptoKey>;

/** One JWKS URL's cached key set. */
export class JwksCache {
  readonly url: string;
  readonly #policy: FetchPolicy;
  #keys: ReturnType<typeof createLocalJWKSet> | undefined;
  #fetchedAt = -Infinity;
  /** The fetch under way: concurrent requests share it. */
  #pending: Promise<void> | undefined;
  /** Fetches made (diagnostics, tests). */
  fetches = 0;

  constructor(url: string, policy: FetchPolicy) {
    this.url = url;
    this.#policy = policy;
  }

  /** The key for a token's header: cached, else after a (rate-limited) refetch. */
  readonly getKey: KeyGetter = async (header, input) => {
    if (this.#keys === undefined || performance.now() - this.#fetchedAt > this.#policy.maxAgeMs) await this.#refresh();
    try {
      return await this.#keys!(header, input);
    } catch (error) {
      // An unknown kid may be a key rotated in since the last fetch: look once more, if allowed.
      if (!(error instanceof errors.JWKSNoMatchingKey) || performance.now() - this.#fetchedAt < this.#policy.cooldownMs) throw error;
      await this.#refresh();
      return this.#keys!(header, input);
    }
  };

  #refresh(): Promise<void> {
    this.#pending ??= this.#fetch().finally(() => { this.#pending = undefined; });
    return this.#pending;
  }

  async #fetch(): Promise<void> {
    this.fetches++;
    // Stamped before the fetch: a failing JWKS URL is retried at most once per cooldown too.
    const attempted = performance.now();
    try {
      const document = await fetchJson(this.url, this.#policy.timeoutMs);
      if (!Array.isArray(document.keys)) throw new AuthUnavailable(`GET ${this.url}: no "keys" array`);
      this.#keys = createLocalJWKSet(document as unknown as JSONWebKeySet);
    } finally {
      this.#fetchedAt = attempted;
    }
  }
}

/** Issuer metadata locations to try, in order (RFC 8414 §3.1 path insertion, then OpenID Connect Discovery's suffix). */
export function metadataUrls(issuer: string): readonly string[] {
  const url = new URL(issuer);
  const path = url.pathname === '/' ? '' : url.pathname.replace(/\/$/, '');
  return [
    `${url.origin}/.well-known/oauth-authorization-server${path}`,
    `${url.origin}${path}/.well-known/openid-configuration`,
  ];
}

/** The JWKS URL an issuer's metadata names: fetched once, kept; a failure is retried after the cooldown. */
export class IssuerDiscovery {
  readonly issuer: string;
  readonly #policy: FetchPolicy;
  #jwks: string | undefined;
  #pending: Promise<string> | undefined;
  #failedAt = -Infinity;
  #failure: AuthUnavailable | undefined;

  constructor(issuer: string, policy: FetchPolicy) {
    this.issuer = issuer;
    this.#policy = policy;
  }

  jwksUrl(): Promise<string> {
    if (this.#jwks !== undefined) return Promise.resolve(this.#jwks);
    if (this.#failure !== undefined && performance.now() - this.#failedAt < this.#policy.cooldownMs) return Promise.reject(this.#failure);
    this.#pending ??= this.#discover().finally(() => { this.#pending = undefined; });
    return this.#pending;
  }

  async #discover(): Promise<string> {
    const problems: string[] = [];
    for (const url of metadataUrls(this.issuer)) {
      try {
        const metadata = await fetchJson(url, this.#policy.timeoutMs);
        // RFC 8414 §3.3 / OIDC Discovery §4.3: the metadata must name this very issuer.
        if (metadata.issuer !== this.issuer) throw new AuthUnavailable(`${url} names issuer ${JSON.stringify(metadata.issuer)}, not ${this.issuer}`);
        const jwks = metadata.jwks_uri;
        if (typeof jwks !== 'string' || !/^https?:\/\//.test(jwks)) throw new AuthUnavailable(`${url} has no http(s) jwks_uri`);
        this.#jwks = jwks;
        this.#failure = undefined;
        return jwks;
      } catch (error) {
        problems.push(error instanceof Error ? error.message : String(error));
      }
    }
    this.#failedAt = performance.now();
    this.#failure = new AuthUnavailable(`no JWKS for issuer ${this.issuer}: ${problems.join('; ')}`);
    throw this.#failure;
  }
}
