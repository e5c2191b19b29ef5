/**
 * Key sets fetched over HTTP(S): jose's `createRemoteJWKSet` does the caching (refetched when
 * older than `maxAgeMs`; on a key id it lacks, at most once per `cooldownMs` after a good fetch;
 * one fetch at a time, shared by every request waiting on it; the time limit). What jose does not
 * do is added here, thinly:
 * - the size cap: our fetch reads a document up to 1 MiB, chunked or not, and cancels past it;
 * - a failure remembered: jose keeps no failure and refetches on every use while it has no (fresh)
 *   key set, so a failing URL would cost a fetch per request. A failed fetch is kept for the
 *   cooldown, from the very first one: meanwhile requests get the same failure at once (one object,
 *   so it is logged once), or the previous key set when there was one (an aged key set still beats
 *   none while its URL fails);
 * - unusable keys: jose imports an RSA key under 2048 bits and only refuses it when verifying (a
 *   TypeError, not a JOSE error), and a JWK that does not import fails with whatever WebCrypto
 *   throws. Both are skipped (no matching key: the token is 401) and reported once per key.
 * Issuer metadata (RFC 8414, then OpenID configuration) names the JWKS URL when none is configured;
 * it is fetched once and kept (a failed discovery is retried after the cooldown).
 */
import { createLocalJWKSet, createRemoteJWKSet, customFetch, errors, jwksCache } from 'jose';
import type { CryptoKey, ExportedJWKSCache, FetchImplementation, FlattenedJWSInput, JSONWebKeySet, JWKSCacheInput, JWSHeaderParameters, RemoteJWKSet } from 'jose';

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
  /** Where a skipped key is reported (once per key). */
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

/**
 * GETs a JSON object, bounded in size and by `signal` (one signal for the whole exchange: a server
 * that sends headers and then trickles its body is cut at the same deadline). Every failure is an
 * AuthUnavailable; redirects are refused.
 */
async function fetchJson(url: string, signal: AbortSignal, headers: Headers | Record<string, string> = { accept: 'application/json' }): Promise<Record<string, unknown>> {
  let text: string;
  try {
    const response = await fetch(url, { headers, signal, redirect: 'manual' });
    if (response.status !== 200) {
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
  if (!isPlainObject(value)) throw new AuthUnavailable(`GET ${url}: not a JSON object`);
  return value;
}

function isPlainObject(value: unknown): value is Record<string, unknown> {
  return value !== null && typeof value === 'object' && !Array.isArray(value);
}

type KeyGetter = (header: JWSHeaderParameters, input: FlattenedJWSInput) => Promise<CryptoKey>;

/** Least RSA modulus jose verifies with (it throws a TypeError, not a JOSE error, below it). */
const kMinRsaBits = 2048;

/** One JWKS URL's key set: jose's remote set, with a remembered failure and unusable keys skipped. */
export class JwksCache {
  readonly url: string;
  readonly #policy: FetchPolicy;
  readonly #remote: RemoteJWKSet;
  /** jose writes each good key set here (and when): what an aged set falls back to. */
  readonly #exported: JWKSCacheInput = {};
  /** The last fetch's failure, while it is the latest outcome, and when that fetch started. */
  #failure: AuthUnavailable | undefined;
  #failedAt = -Infinity;
  /** The last good key set as a local set, for use while its URL fails (made on first need). */
  #lastGood: { readonly uat: number; readonly keys: KeyGetter } | undefined;
  /** Keys already reported unusable (by kid, or alg without one), and the key set they were in. */
  #reported = new Set<string>();
  #reportedUat: number | undefined;
  #reportedIn = '';
  /** Fetches made (diagnostics, tests). */
  fetches = 0;

  constructor(url: string, policy: FetchPolicy) {
    this.url = url;
    this.#policy = policy;
    const fetchKeySet: FetchImplementation = (href, options) => this.#fetch(href, options.signal, options.headers);
    this.#remote = createRemoteJWKSet(new URL(url), {
      cacheMaxAge: policy.maxAgeMs,
      cooldownDuration: policy.cooldownMs,
      timeoutDuration: policy.timeoutMs,
      [customFetch]: fetchKeySet,
      [jwksCache]: this.#exported,
    });
  }

  /** The key for a token's header: from jose's set; while a failure cools down, the last good set or the failure. */
  readonly getKey: KeyGetter = async (header, input) => {
    if (this.#failure !== undefined && performance.now() - this.#failedAt < this.#policy.cooldownMs) return this.#fromLastGood(this.#failure, header, input);
    let key: CryptoKey;
    try {
      key = await this.#remote(header, input);
    } catch (error) {
      // A refetch of an aged set failed: keep using it. A failed refetch for an unknown kid (the
      // set still fresh) is 503, as the key may have rotated in.
      if (error instanceof AuthUnavailable && !this.#remote.fresh) return this.#fromLastGood(error, header, input);
      throw this.#keyError(error, header);
    }
    // A key too short for jose: the key set may have been fixed since, look once more if allowed.
    if (!usable(key) && !this.#remote.coolingDown) {
      await this.#remote.reload();
      key = await this.#remote(header, input).catch((error: unknown) => { throw this.#keyError(error, header); });
    }
    return this.#checked(key, header);
  };

  /** Our fetch for jose: bounded, every failure an AuthUnavailable kept for the cooldown. */
  async #fetch(href: string, signal: AbortSignal, headers: Headers): Promise<Response> {
    this.fetches++;
    const attempted = performance.now();
    try {
      const document = await fetchJson(href, signal, headers);
      // What jose's createLocalJWKSet accepts, checked first so that every failure is ours.
      if (!Array.isArray(document.keys) || !document.keys.every(isPlainObject)) throw new AuthUnavailable(`GET ${href}: no "keys" array of objects`);
      this.#failure = undefined;
      return Response.json(document);
    } catch (error) {
      this.#failure = error instanceof AuthUnavailable ? error : new AuthUnavailable(`JWKS ${href}: ${String(error)}`);
      this.#failedAt = attempted;
      throw this.#failure;
    }
  }

  /** The key from the last good key set, or `failure` when there is none. */
  async #fromLastGood(failure: AuthUnavailable, header: JWSHeaderParameters, input: FlattenedJWSInput): Promise<CryptoKey> {
    const { uat, jwks } = this.#exported as Partial<ExportedJWKSCache>;
    if (uat === undefined || jwks === undefined) throw failure;
    if (this.#lastGood?.uat !== uat) this.#lastGood = { uat, keys: createLocalJWKSet(jwks) };
    let key: CryptoKey;
    try {
      key = await this.#lastGood.keys(header, input);
    } catch (error) {
      throw this.#keyError(error, header);
    }
    return this.#checked(key, header);
  }

  /** jose's refusals as they are; anything else from a key set (a JWK that does not import) skips the key. */
  #keyError(error: unknown, header: JWSHeaderParameters): unknown {
    if (error instanceof errors.JOSEError || error instanceof AuthUnavailable) return error;
    return this.#skip(header, error instanceof Error ? error.message : String(error));
  }

  /** The key, when jose can verify with it; else it is skipped. */
  #checked(key: CryptoKey, header: JWSHeaderParameters): CryptoKey {
    if (usable(key)) return key;
    const { modulusLength } = key.algorithm as { modulusLength?: number };
    throw this.#skip(header, `RSA modulus of ${String(modulusLength)} bits (at least ${kMinRsaBits} needed)`);
  }

  /** Reports the key once (a key set that changes clears what was reported); the refusal to throw (401 no matching key). */
  #skip(header: JWSHeaderParameters, why: string): errors.JWKSNoMatchingKey {
    const { uat, jwks } = this.#exported as Partial<ExportedJWKSCache>;
    if (uat !== this.#reportedUat) {
      // A refetch that brought the same document keeps what was reported.
      this.#reportedUat = uat;
      const set = JSON.stringify(jwks ?? null);
      if (set !== this.#reportedIn) this.#reported = new Set();
      this.#reportedIn = set;
    }
    const id = header.kid ?? `alg ${header.alg ?? '?'}`;
    if (!this.#reported.has(id)) {
      this.#reported.add(id);
      this.#policy.warn?.(`sluice: JWKS ${this.url}: key ${JSON.stringify(id)} skipped: ${why}`);
    }
    return new errors.JWKSNoMatchingKey(`key ${id} is not usable`);
  }
}

/** Whether jose verifies with the key (an RSA modulus under 2048 bits it refuses with a TypeError). */
function usable(key: CryptoKey): boolean {
  const { modulusLength } = key.algorithm as { modulusLength?: number };
  return modulusLength === undefined || modulusLength >= kMinRsaBits;
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
        const metadata = await fetchJson(url, AbortSignal.timeout(this.#policy.timeoutMs));
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
