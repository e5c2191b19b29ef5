/**
 * JWT access tokens checked with jose: signature against the issuer's JWKS, `exp` required,
 * `exp`/`nbf` with the clock tolerance, `iss` one of the issuers, `aud` containing this resource
 * (RFC 8707), the algorithm on an asymmetric allow-list, the principal claim a string.
 */
import { decodeJwt, errors, jwtVerify } from 'jose';
import type { JWTPayload } from 'jose';
import type { VerifiedToken } from './contract.js';
import { IssuerDiscovery, JwksCache } from './jwks.js';
import type { FetchPolicy } from './jwks.js';
import type { ResolvedAuth } from './options.js';

/** The token is not acceptable (401 invalid_token); `description` is safe to put in a challenge. */
export class TokenRejected extends Error {
  readonly description: string;
  constructor(description: string) {
    super(description);
    this.description = description;
  }
}

/** One JWKS or metadata fetch's time limit. */
const kFetchTimeoutMs = 5_000;
/**
 * Verified tokens kept per worker: a client sends the same token on every request, and a signature
 * check costs 60–120 µs (bench/results/auth.md). An entry lives until the token's `exp` but at most
 * this long, so a key removed from the JWKS stops vouching for its tokens within it.
 */
const kVerifiedTtlMs = 60_000;
/** At most this many verified tokens kept per worker (oldest dropped first). */
const kMaxVerified = 4096;

/** Scopes of a claims set: `scope` (space-separated, RFC 8693/9068) or `scp` (an array, or a string). */
export function scopesOf(claims: Readonly<Record<string, unknown>>): readonly string[] {
  const scope = claims.scope;
  if (typeof scope === 'string') return scope.split(' ').filter((s) => s !== '');
  const scp = claims.scp;
  if (typeof scp === 'string') return scp.split(' ').filter((s) => s !== '');
  if (Array.isArray(scp)) return scp.filter((s): s is string => typeof s === 'string');
  return [];
}

/** Why jose refused a token, in words fit for `error_description` (no token content echoed). */
function describe(error: unknown): string {
  if (error instanceof errors.JWTExpired) return 'token expired';
  if (error instanceof errors.JWTClaimValidationFailed) {
    if (error.claim === 'exp') return 'token has no exp claim';
    return `${error.claim} claim check failed`;
  }
  if (error instanceof errors.JOSEAlgNotAllowed) return 'algorithm not allowed';
  if (error instanceof errors.JWKSNoMatchingKey) return 'no matching key';
  if (error instanceof errors.JWKSMultipleMatchingKeys) return 'ambiguous key';
  if (error instanceof errors.JWSSignatureVerificationFailed) return 'signature verification failed';
  if (error instanceof errors.JWTInvalid || error instanceof errors.JWSInvalid) return 'malformed token';
  if (error instanceof errors.JOSENotSupported) return 'unsupported token';
  return 'invalid token';
}

/** Verifies JWTs for one server (each HTTP worker has its own: its own JWKS cache). */
export class JwtVerifier {
  readonly #auth: ResolvedAuth;
  readonly #policy: FetchPolicy;
  /** The configured JWKS (then every issuer's tokens are checked against it). */
  readonly #configured: JwksCache | undefined;
  /** Without a configured JWKS: each issuer's own, found through its metadata. */
  readonly #discovery = new Map<string, IssuerDiscovery>();
  readonly #byUrl = new Map<string, JwksCache>();
  /** Token text → its verified facts and until when they may be reused (see kVerifiedTtlMs). */
  readonly #verified = new Map<string, { readonly token: VerifiedToken; readonly until: number }>();

  /** `warn`: where a JWKS key that cannot be used is reported (once per key set). */
  constructor(auth: ResolvedAuth, warn?: (message: string) => void) {
    this.#auth = auth;
    const policy: FetchPolicy = { cooldownMs: auth.jwksCooldownMs, maxAgeMs: auth.jwksMaxAgeMs, timeoutMs: kFetchTimeoutMs, warn };
    this.#policy = policy;
    this.#configured = auth.jwks === undefined ? undefined : new JwksCache(auth.jwks, policy);
    if (auth.jwks === undefined) for (const issuer of auth.issuers) this.#discovery.set(issuer, new IssuerDiscovery(issuer, policy));
  }

  /** JWKS fetches made so far, every key set together (diagnostics, tests). */
  get jwksFetches(): number {
    let n = this.#configured?.fetches ?? 0;
    for (const cache of this.#byUrl.values()) n += cache.fetches;
    return n;
  }

  /** The token's facts; throws TokenRejected (401) or AuthUnavailable (the keys could not be fetched). */
  async verify(token: string): Promise<VerifiedToken> {
    const now = Date.now();
    const known = this.#verified.get(token);
    if (known !== undefined) {
      if (known.until > now) return known.token;
      this.#verified.delete(token);
    }
    const verified = await this.#verifyNow(token);
    // Reused only while unexpired (no clock tolerance here) and for at most kVerifiedTtlMs.
    const until = Math.min(verified.expiresAt * 1000, now + kVerifiedTtlMs);
    if (until > now) {
      if (this.#verified.size >= kMaxVerified) this.#verified.delete(this.#verified.keys().next().value as string);
      this.#verified.set(token, { token: verified, until });
    }
    return verified;
  }

  async #verifyNow(token: string): Promise<VerifiedToken> {
    let unverified: JWTPayload;
    try {
      unverified = decodeJwt(token);
    } catch {
      throw new TokenRejected('malformed token');
    }
    // The claimed issuer only picks the key set (and must be one we accept before anything is
    // fetched); jwtVerify then checks `iss` equals it, under that issuer's signature.
    const issuer = unverified.iss;
    if (typeof issuer !== 'string' || !this.#auth.issuers.includes(issuer)) throw new TokenRejected('iss claim check failed');
    const keys = this.#configured ?? await this.#issuerKeys(issuer);
    let payload: JWTPayload;
    let typ: string | undefined;
    try {
      ({ payload, protectedHeader: { typ } } = await jwtVerify(token, keys.getKey, {
        issuer,
        audience: this.#auth.audience,
        algorithms: this.#auth.algorithms as string[],
        clockTolerance: this.#auth.clockToleranceSec,
        requiredClaims: ['exp'],
      }));
    } catch (error) {
      if (error instanceof errors.JOSEError) throw new TokenRejected(describe(error));
      throw error; // AuthUnavailable, or a bug: not the token's fault
    }
    // RFC 7515 §4.1.9: `typ` is a media type, `application/` may be left out, case does not
    // matter. No `typ` at all counts as a plain JWT (RFC 7519 §5.1).
    const type = typ === undefined ? 'jwt' : typ.toLowerCase().replace(/^application\//, '');
    if (!this.#auth.tokenTypes.includes(type)) throw new TokenRejected('typ header not accepted');
    // jose checks `iat` only against a maximum age; one in the future names a token not yet issued.
    if (payload.iat !== undefined && payload.iat > Date.now() / 1000 + this.#auth.clockToleranceSec) throw new TokenRejected('iat claim check failed');
    const subject = payload[this.#auth.principalClaim];
    if (typeof subject !== 'string' || subject === '') throw new TokenRejected(`${this.#auth.principalClaim} claim missing`);
    return { subject, scopes: scopesOf(payload), expiresAt: payload.exp!, claims: payload };
  }

  async #issuerKeys(issuer: string): Promise<JwksCache> {
    const url = await this.#discovery.get(issuer)!.jwksUrl();
    let cache = this.#byUrl.get(url);
    if (cache === undefined) {
      cache = new JwksCache(url, this.#policy);
      this.#byUrl.set(url, cache);
    }
    return cache;
  }
}
