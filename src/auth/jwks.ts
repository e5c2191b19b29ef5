/**
 * Key sets fetched over HTTP(S) and cached (our own fetch around jose's `createLocalJWKSet`, so the
 * refresh policy is ours; jose's `createRemoteJWKSet` fetches again on every use while it has no
 * key set, which is what a failing authorization server must not cost). One fetch at a time per
 * URL, every request waiting on it shares it; a key set is refetched when older than `maxAgeMs`,
 * and on a key id it lacks, at most once per `cooldownMs` (a flood of tokens naming made-up `kid`s
 * costs the authorization server one request per cooldown, not one per token). A failed fetch is
 * remembered for the cooldown, from the very first one: meanwhile requests get the same failure at
 * once (or the previous key set, when there was one) instead of a fetch each. Documents are read
 * up to 1 MiB, chunked or not. Keys jose cannot use (an RSA modulus under 2048 bits, a JWK that
 * does not import) are skipped, and reported once per key set. Issuer metadata (RFC 8414, then
 * OpenID configuration) names the JWKS URL when none is configured; it is fetched once and kept
 * (a failed discovery is retried after the cooldown).
 */
import { createLocalJWKSet, errors } from 'jose';
import type { CryptoKey, JSONWebKeySet, JWSHeaderParameters, FlattenedJWSInput } from 'jose';

/**
 * The JWKS or metadata could not be fetched: the server cannot decide (503), the token is not at
 * fault. One object stands for one failure, handed to every request during its cooldown: `reported`
 * lets whoever logs it do so once.
 */
export class AuthUnavailable extends Error {
  reported = false;
}

export interface FetchPolicy {
  /** Least time between two fetches of one URL forced by an unknown `kid` or after a failure. */
  readonly cooldownMs: number;
  /** A key set older than this is refetched before use. */
  readonly maxAgeMs: number;
  /** One fetch's time limit (headers and body). */
  readonly timeoutMs: number;
  /** Where a skipped key is reported (once per key and key set). */
  readonly warn?: ((message: string) => void) | undefined;
}

/** Largest JWKS or metadata document read (a key set is a few KiB). */
export const kMaxDocumentBytes = 1024 * 1024;

/** Reads a body up to `limit` bytes, cancelling the stream the moment it goes past (chunked or not). */
async function boundedText(response: Response, url: string, limit: number): Promise<string> {
  const length = Number(response.headers.get('content-length') ?? '0');
  const tooLarge = () => new AuthUnavailable(`GET ${url}: document larger than ${limit} bytes`);
  if (length > limit) {
    await response.body?.cancel();
    throw tooLarge();
  }
  const body = response.body;
  if (body === null) return '';
  const reader = body.getReader();
  const chunks: Uint8Array[] = [];
  let size = 0;
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done) break;
      size += value.byteLength;
      if (size > limit) {
        await reader.cancel();
        throw tooLarge();
      }
      chunks.push(value);
    }
  } finally {
    reader.releaseLock();
  }
  return Buffer.concat(chunks, size).toString('utf8');
}

/** GETs a JSON object, bounded in time and size. */
async function fetchJson(url: string, timeoutMs: number): Promise<Record<string, unknown>> {
  let text: string;
  try {
    // One signal for the whole exchange: a server that sends headers and then trickles its body
    // is cut at the same deadline.
    const response = await fetch(url, { headers: { accept: 'application/json' }, signal: AbortSignal.timeout(timeoutMs), redirect: 'error' });
    if (!response.ok) {
      await response.body?.cancel();
      throw new AuthUnavailable(`GET ${url}: HTTP ${response.status}`);
    }
    text = await boundedText(response, url, kMaxDocumentBytes);
  } catch (error) {
    if (error instanceof AuthUnavailable) throw error;
    throw new AuthUnavailable(`GET ${url} failed: ${error instanceof Error ? error.message : String(error)}`);
  }
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

/** Least RSA modulus jose verifies with (it throws a TypeError, not a JOSE error, below it). */
const kMinRsaBits = 2048;

/** One JWKS URL's cached key set. */
export class JwksCache {
  readonly url: string;
  readonly #policy: FetchPolicy;
  #keys: KeyGetter | undefined;
  /** When the key set in use was fetched. */
  #fetchedAt = -Infinity;
  /** When the last fetch, good or bad, started (the cooldown counts from it). */
  #attemptedAt = -Infinity;
  /** The last fetch's failure, while it is the latest outcome. */
  #failure: AuthUnavailable | undefined;
  /** The fetch under way: concurrent requests share it. */
  #pending: Promise<void> | undefined;
  /** Key ids (or positions) of this key set already reported unusable. */
  #reported = new Set<string>();
  /** Fetches made (diagnostics, tests). */
  fetches = 0;

  constructor(url: string, policy: FetchPolicy) {
    this.url = url;
    this.#policy = policy;
  }

  /** The key for a token's header: cached, else after a (rate-limited) refetch. */
  readonly getKey: KeyGetter = async (header, input) => {
    const now = performance.now();
    if (this.#keys === undefined || now - this.#fetchedAt > this.#policy.maxAgeMs) {
      try {
        await this.#refresh();
      } catch (error) {
        // A key set that has aged still beats none while its URL fails.
        if (this.#keys === undefined) throw error;
      }
    }
    try {
      return this.#usable(await this.#keys!(header, input), header);
    } catch (error) {
      // An unknown kid may be a key rotated in since the last fetch (or an unusable key fixed since):
      // look once more, if allowed.
      if (!(error instanceof errors.JWKSNoMatchingKey) || performance.now() - this.#attemptedAt < this.#policy.cooldownMs) throw error;
      await this.#refresh();
      return this.#usable(await this.#keys!(header, input), header);
    }
  };

  /** The key, or a no-matching-key refusal (401) when jose could not verify with it. */
  #usable(key: CryptoKey, header: JWSHeaderParameters): CryptoKey {
    const { modulusLength } = key.algorithm as { modulusLength?: number };
    if (modulusLength === undefined || modulusLength >= kMinRsaBits) return key;
    this.#unusable(header, `RSA modulus of ${modulusLength} bits (at least ${kMinRsaBits} needed)`);
  }

  #unusable(header: JWSHeaderParameters, why: string): never {
    const id = header.kid ?? `alg ${header.alg ?? '?'}`;
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.#policy.warn?.(`sluice: JWKS ${this.url}: key ${JSON.stringify(id)} skipped: ${why}`);
    }
    throw new errors.JWKSNoMatchingKey(`key ${id} is not usable`);
  }

  /** One fetch at a time; after a failure, the same failure until the cooldown has passed. */
  #refresh(): Promise<void> {
    if (this.#pending !== undefined) return this.#pending;
    if (this.#failure !== undefined && performance.now() - this.#attemptedAt < this.#policy.cooldownMs) return Promise.reject(this.#failure);
    this.#pending = this.#fetch().finally(() => { this.#pending = undefined; });
    return this.#pending;
  }

  async #fetch(): Promise<void> {
    this.fetches++;
    const attempted = performance.now();
    this.#attemptedAt = attempted;
    try {
      const document = await fetchJson(this.url, this.#policy.timeoutMs);
      if (!Array.isArray(document.keys)) throw new AuthUnavailable(`GET ${this.url}: no "keys" array`);
      const local = createLocalJWKSet(document as unknown as JSONWebKeySet);
      // A key that does not import (bad parameters) is skipped like a short RSA key.
      this.#keys = async (header, input) => {
        try {
          return await local(header, input);
        } catch (error) {
          if (error instanceof errors.JOSEError) throw error;
          this.#unusable(header, error instanceof Error ? error.message : String(error));
        }
      };
      this.#fetchedAt = attempted;
      this.#failure = undefined;
      this.#reported = new Set();
    } catch (error) {
      this.#failure = error instanceof AuthUnavailable ? error : new AuthUnavailable(`JWKS ${this.url}: ${String(error)}`);
      throw this.#failure;
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
