/**
 * A test authorization server on loopback: real keys (jose generateKeyPair), a JWKS it can rotate,
 * issuer metadata (RFC 8414 or OpenID configuration), fetch counts; and token minting.
 */
import { createServer as createHttpServer } from 'node:http';
import type { Server as HttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { SignJWT, exportJWK, exportSPKI, generateKeyPair } from 'jose';
import type { CryptoKey, JWK } from 'jose';

export const kAudience = 'https://mcp.example.test/mcp';

export interface SigningKey {
  kid: string;
  alg: 'RS256' | 'ES256';
  privateKey: CryptoKey;
  publicKey: CryptoKey;
  jwk: JWK;
}

export async function signingKey(kid: string, alg: 'RS256' | 'ES256' = 'RS256'): Promise<SigningKey> {
  const { privateKey, publicKey } = await generateKeyPair(alg, { extractable: true });
  const jwk = { ...(await exportJWK(publicKey)), kid, alg, use: 'sig' };
  return { kid, alg, privateKey, publicKey, jwk };
}

export interface TestIssuer {
  /** The issuer identifier (`http://127.0.0.1:<port>` + optional path). */
  issuer: string;
  jwksUrl: string;
  /** Keys the JWKS publishes now (replace to rotate). */
  keys: SigningKey[];
  jwksFetches: number;
  metadataFetches: number;
  close(): Promise<void>;
}

/**
 * `metadata`: which discovery document exists ('oauth': RFC 8414 path-inserted; 'openid': the
 * OpenID suffix form only; 'none').
 */
export async function startIssuer(keys: SigningKey[], options: { path?: string; metadata?: 'oauth' | 'openid' | 'none' } = {}): Promise<TestIssuer> {
  const path = options.path ?? '';
  const kind = options.metadata ?? 'oauth';
  const state = { keys, jwksFetches: 0, metadataFetches: 0 };
  let issuer = '';
  const server: HttpServer = createHttpServer((req, res) => {
    const url = req.url ?? '';
    if (url === `${path}/jwks`) {
      state.jwksFetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ keys: state.keys.map((k) => k.jwk) }));
      return;
    }
    const oauth = `/.well-known/oauth-authorization-server${path}`;
    const openid = `${path}/.well-known/openid-configuration`;
    if ((kind === 'oauth' && url === oauth) || (kind === 'openid' && url === openid)) {
      state.metadataFetches++;
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ issuer, jwks_uri: `${issuer}/jwks`, authorization_endpoint: `${issuer}/authorize`, token_endpoint: `${issuer}/token` }));
      return;
    }
    res.writeHead(404).end();
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}${path}`;
  return {
    issuer,
    jwksUrl: `${issuer}/jwks`,
    get keys() { return state.keys; },
    set keys(next: SigningKey[]) { state.keys = next; },
    get jwksFetches() { return state.jwksFetches; },
    get metadataFetches() { return state.metadataFetches; },
    close: () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

export interface TokenOptions {
  sub?: string | undefined;
  scope?: string | undefined;
  scp?: string[] | undefined;
  aud?: string | undefined;
  iss?: string | undefined;
  /** Seconds from now; null: no exp claim. */
  expiresIn?: number | null;
  /** Seconds from now. */
  notBefore?: number | undefined;
}

export async function token(key: SigningKey, issuer: string, o: TokenOptions = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const claims: Record<string, unknown> = {};
  if (o.scope !== undefined) claims.scope = o.scope;
  if (o.scp !== undefined) claims.scp = o.scp;
  const jwt = new SignJWT(claims)
    .setProtectedHeader({ alg: key.alg, kid: key.kid, typ: 'at+jwt' })
    .setIssuer(o.iss ?? issuer)
    .setAudience(o.aud ?? kAudience)
    .setIssuedAt(now);
  if (o.sub !== '') jwt.setSubject(o.sub ?? 'alice');
  if (o.expiresIn !== null) jwt.setExpirationTime(now + (o.expiresIn ?? 300));
  if (o.notBefore !== undefined) jwt.setNotBefore(now + o.notBefore);
  return jwt.sign(key.privateKey);
}

/** An unsigned token (`alg: none`). */
export function noneToken(issuer: string): string {
  const part = (value: unknown) => Buffer.from(JSON.stringify(value)).toString('base64url');
  const now = Math.floor(Date.now() / 1000);
  return `${part({ alg: 'none', typ: 'JWT' })}.${part({ iss: issuer, aud: kAudience, sub: 'mallory', exp: now + 300 })}.`;
}

/** HS256 "signed" with the public key's PEM bytes as the HMAC secret (the classic confusion attack). */
export async function hmacWithPublicKey(key: SigningKey, issuer: string): Promise<string> {
  const pem = await exportSPKI(key.publicKey);
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({}).setProtectedHeader({ alg: 'HS256', kid: key.kid }).setIssuer(issuer).setAudience(kAudience).setSubject('mallory')
    .setExpirationTime(now + 300).sign(new TextEncoder().encode(pem));
}
