/**
 * Sluice as an OAuth 2.1 resource server (MCP authorization): every MCP request over HTTP carries a
 * bearer token that is verified before anything else costs work; the verified token becomes the
 * principal (`principal:<sub>`), which scopes cancellation, sessions and tasks. stdio is unaffected.
 */

/** `createServer({ auth })`; CLI `--auth-issuer URL --auth-audience URI [--auth-jwks URL] [--auth-scope S]...`. */
export interface AuthOptions {
  /**
   * This resource's identifier (RFC 8707, RFC 9728 `resource`): the canonical URL of the MCP
   * endpoint, e.g. `https://mcp.example.com/mcp`. A token's `aud` must contain it.
   */
  readonly audience: string;
  /** Authorization servers (their issuer identifiers); at least one. A token's `iss` must be one of them. */
  readonly issuers: readonly string[];
  /**
   * The JWKS URL. Default: the `jwks_uri` of the (first) issuer's metadata (RFC 8414
   * `/.well-known/oauth-authorization-server`, then OpenID `/.well-known/openid-configuration`).
   */
  readonly jwks?: string | undefined;
  /** Scopes every request needs (besides a tool's, resource's or prompt's own `scopes`). */
  readonly scopes?: readonly string[] | undefined;
  /** The claim that names the principal. Default `sub`. */
  readonly principalClaim?: string | undefined;
  /** Accepted JWS algorithms (asymmetric only). Default RS256, PS256, ES256, EdDSA. */
  readonly algorithms?: readonly string[] | undefined;
  /** Clock skew tolerated for `exp`/`nbf`/`iat`, seconds. Default 30. */
  readonly clockToleranceSec?: number | undefined;
  /** Scope hierarchy: a granted scope implies these (e.g. `{ 'files:admin': ['files:read', 'files:write'] }`). */
  readonly scopeImplies?: Readonly<Record<string, readonly string[]>> | undefined;
  /**
   * Least time between two JWKS refetches forced by a token whose `kid` the cached set lacks (a key
   * rotated in). Default 30 000 ms. (Added beside the original contract.)
   */
  readonly jwksCooldownMs?: number | undefined;
  /** A cached JWKS older than this is refetched before use. Default 600 000 ms (10 min). (Added.) */
  readonly jwksMaxAgeMs?: number | undefined;
  /**
   * Accepted token types, by the JWT's `typ` header: `'at+jwt'` (RFC 9068 access tokens, also
   * written `application/at+jwt`) and `'JWT'` (a plain JWT, or no `typ` at all). Any other `typ`
   * (an ID token's, a DPoP proof's…) is refused with 401. Default both; `['at+jwt']` insists on
   * RFC 9068 access tokens. (Added.)
   */
  readonly tokenTypes?: readonly ('at+jwt' | 'JWT')[] | undefined;
  /**
   * Verifies a token another way (opaque tokens, introspection) instead of as a JWT. In-process
   * servers only; with a tools module, export `verifyToken` from it instead.
   */
  readonly verify?: TokenVerifierFunction | undefined;
}

/** A verified token. */
export interface VerifiedToken {
  /** The principal (the `principalClaim`, default `sub`). */
  readonly subject: string;
  /** Granted scopes (the `scope` claim split on spaces, or `scp`), hierarchy not yet applied. */
  readonly scopes: readonly string[];
  /** Expiry, epoch seconds (required). */
  readonly expiresAt: number;
  /** All claims, for handlers (`ctx.auth`). */
  readonly claims: Readonly<Record<string, unknown>>;
}

/** A user verifier: the token's facts, or undefined (or a throw) for an invalid token. */
export type TokenVerifierFunction = (token: string) => VerifiedToken | undefined | Promise<VerifiedToken | undefined>;

/** What a handler sees of the caller (`ctx.auth`), when the server checks tokens. */
export interface AuthInfo {
  readonly subject: string;
  /** Granted scopes with the hierarchy applied. */
  readonly scopes: readonly string[];
  readonly claims: Readonly<Record<string, unknown>>;
  readonly expiresAt: number;
}
