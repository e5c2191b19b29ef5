/**
 * The resource server's decisions, free of HTTP: the bearer token of a request → its AuthInfo or a
 * refusal (status + `WWW-Authenticate` challenge); scope checks (hierarchy applied) for the server
 * and for one item; the Protected Resource Metadata document (RFC 9728) and where it is served.
 */
import type { AuthInfo, TokenVerifierFunction, VerifiedToken } from './contract.js';
import { AuthUnavailable } from './jwks.js';
import type { ResolvedAuth } from './options.js';
import { metadataLocation } from './metadata.js';
import { AuthRefusal } from './refusal.js';
import { JwtVerifier, TokenRejected } from './verifier.js';

/** A verified caller: what `ctx.auth` shows, and a set for scope checks. */
class Granted implements AuthInfo {
  readonly subject: string;
  readonly scopes: readonly string[];
  readonly claims: Readonly<Record<string, unknown>>;
  readonly expiresAt: number;
  readonly #set: ReadonlySet<string>;
  constructor(token: VerifiedToken, set: ReadonlySet<string>) {
    this.subject = token.subject;
    this.scopes = Object.freeze([...set]);
    this.claims = token.claims;
    this.expiresAt = token.expiresAt;
    this.#set = set;
  }

  has(scope: string): boolean {
    return this.#set.has(scope);
  }
}

export type { Granted };
export { AuthRefusal } from './refusal.js';
export { kRootMetadataPath, metadataLocation } from './metadata.js';

/** `error_description` is a quoted-string: keep printable ASCII without `"` and `\`. */
function quotable(text: string): string {
  return text.replace(/[^\x20-\x21\x23-\x5b\x5d-\x7e]/g, '').slice(0, 200);
}

const kBearer = /^Bearer +([A-Za-z0-9\-._~+/]+=*) *$/i;

export class AuthGate {
  readonly auth: ResolvedAuth;
  /** The metadata URL named in every challenge, and the path-aware path it is served at. */
  readonly metadataUrl: string;
  readonly metadataPath: string;
  readonly #verify: (token: string) => Promise<VerifiedToken>;
  readonly #jwt: JwtVerifier | undefined;
  readonly #missing: AuthRefusal;
  readonly #serverScopes: AuthRefusal | undefined;
  /** Refusals by description (a small fixed set for JWTs) and by needed-scope list: made once each. */
  readonly #invalid = new Map<string, AuthRefusal>();
  readonly #insufficient = new Map<readonly string[], AuthRefusal>();
  readonly #log: (message: string) => void;

  /** `verify`: a user verifier replacing the JWT path. `log`: where JWKS/verifier failures are reported. */
  constructor(auth: ResolvedAuth, verify: TokenVerifierFunction | undefined, log: (message: string) => void) {
    this.auth = auth;
    this.#log = log;
    ({ url: this.metadataUrl, path: this.metadataPath } = metadataLocation(auth.audience));
    if (verify === undefined) {
      const jwt = new JwtVerifier(auth, log);
      this.#jwt = jwt;
      this.#verify = (token) => jwt.verify(token);
    } else {
      this.#jwt = undefined;
      this.#verify = (token) => userVerify(verify, token);
    }
    this.#missing = new AuthRefusal(401, `Bearer resource_metadata="${this.metadataUrl}"`, 'Unauthorized: a bearer token is required');
    this.#serverScopes = auth.scopes.length === 0 ? undefined : this.#scopeRefusal(auth.scopes);
  }

  /** JWKS fetches made by this gate's verifier (0 with a user verifier). */
  get jwksFetches(): number {
    return this.#jwt?.jwksFetches ?? 0;
  }

  /** The caller of a request with this Authorization header, or why not (server-wide scopes included). */
  async check(authorization: string | undefined): Promise<Granted | AuthRefusal> {
    if (authorization === undefined) return this.#missing;
    const match = kBearer.exec(authorization);
    if (match === null) return authorization.trim() === '' || !/^bearer\b/i.test(authorization) ? this.#missing : this.#invalidToken('malformed bearer credentials');
    let token: VerifiedToken;
    try {
      token = await this.#verify(match[1]);
    } catch (error) {
      if (error instanceof TokenRejected) return this.#invalidToken(error.description);
      if (error instanceof AuthUnavailable) {
        // One failure object stands for a whole cooldown (see JwksCache): logged once.
        if (!error.reported) {
          error.reported = true;
          this.#log(`sluice: cannot verify tokens: ${error.message}`);
        }
        return new AuthRefusal(503, undefined, 'Service Unavailable: the authorization server\'s keys cannot be fetched');
      }
      // A user verifier that throws refuses the token (its contract): say nothing of why.
      if (this.#jwt === undefined) return this.#invalidToken('token rejected');
      throw error;
    }
    const granted = this.grant(token);
    if (this.#serverScopes !== undefined && !this.auth.scopes.every((s) => granted.has(s))) return this.#serverScopes;
    return granted;
  }

  /** A verified token's AuthInfo: granted scopes with the hierarchy applied. */
  grant(token: VerifiedToken): Granted {
    const set = new Set<string>();
    const implies = this.auth.scopeImplies;
    for (const scope of token.scopes) {
      set.add(scope);
      const more = Object.hasOwn(implies, scope) ? implies[scope] : undefined;
      if (more !== undefined) for (const s of more) set.add(s);
    }
    return new Granted(token, set);
  }

  /**
   * The 403 for an item needing `itemScopes` (besides the server's) that `granted` lacks; undefined
   * when every one is granted. `itemScopes` should be the item's own (frozen) array: the refusal is
   * made once per array.
   */
  checkItem(granted: Granted, itemScopes: readonly string[]): AuthRefusal | undefined {
    if (itemScopes.every((s) => granted.has(s))) return undefined;
    let refusal = this.#insufficient.get(itemScopes);
    if (refusal === undefined) {
      refusal = this.#scopeRefusal([...new Set([...this.auth.scopes, ...itemScopes])]);
      this.#insufficient.set(itemScopes, refusal);
    }
    return refusal;
  }

  /** The Protected Resource Metadata document; `itemScopes`: scopes items need, advertised too. */
  metadata(itemScopes: Iterable<string>): string {
    const scopes = [...new Set([...this.auth.scopes, ...itemScopes])];
    return JSON.stringify({
      resource: this.auth.audience,
      authorization_servers: this.auth.issuers,
      scopes_supported: scopes,
      bearer_methods_supported: ['header'],
    });
  }

  #scopeRefusal(needed: readonly string[]): AuthRefusal {
    return new AuthRefusal(403, `Bearer error="insufficient_scope", scope="${needed.join(' ')}", resource_metadata="${this.metadataUrl}"`, `Forbidden: needs scope ${needed.join(' ')}`);
  }

  #invalidToken(description: string): AuthRefusal {
    let refusal = this.#invalid.get(description);
    if (refusal === undefined) {
      refusal = new AuthRefusal(401, `Bearer resource_metadata="${this.metadataUrl}", error="invalid_token", error_description="${quotable(description)}"`, `Unauthorized: ${description}`);
      // Descriptions come from a fixed set; the bound only guards against a future unbounded one.
      if (this.#invalid.size < 64) this.#invalid.set(description, refusal);
    }
    return refusal;
  }
}

/** A user verifier's answer, checked: undefined or a throw refuses; `expiresAt` is required and must be ahead. */
async function userVerify(verify: TokenVerifierFunction, token: string): Promise<VerifiedToken> {
  const answer = await verify(token);
  if (answer === undefined || answer === null) throw new TokenRejected('token rejected');
  if (typeof answer.subject !== 'string' || answer.subject === '') throw new TokenRejected('token has no subject');
  if (typeof answer.expiresAt !== 'number' || !Number.isFinite(answer.expiresAt)) throw new TokenRejected('token has no expiry');
  if (answer.expiresAt * 1000 <= Date.now()) throw new TokenRejected('token expired');
  if (!Array.isArray(answer.scopes) || !answer.scopes.every((s) => typeof s === 'string')) throw new TokenRejected('token scopes invalid');
  return { subject: answer.subject, scopes: answer.scopes, expiresAt: answer.expiresAt, claims: answer.claims ?? {} };
}
