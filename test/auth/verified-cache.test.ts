/**
 * The per-worker cache of verified tokens: a repeated token is not checked again (and costs no key
 * lookup), but it is never reused past its `exp`; a different token is always checked in full.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resolveAuth } from '../../src/auth/index.js';
import { JwtVerifier } from '../../src/auth/verifier.js';
import { kAudience, signingKey, startIssuer, token } from './helpers.js';
import type { SigningKey, TestIssuer } from './helpers.js';

describe('verified-token cache', () => {
  let key: SigningKey;
  let as: TestIssuer;
  beforeAll(async () => {
    key = await signingKey('k1');
    as = await startIssuer([key]);
  });
  afterAll(async () => { await as?.close(); });

  const verifier = () => new JwtVerifier(resolveAuth({ audience: kAudience, issuers: [as.issuer], jwks: as.jwksUrl, clockToleranceSec: 0 })!);

  it('reuses a verified token until its exp, then checks it again (and refuses it, expired)', async () => {
    const v = verifier();
    const t = await token(key, as.issuer, { expiresIn: 2 });
    expect((await v.verify(t)).subject).toBe('alice');
    // The key leaves the JWKS: a cached token is still accepted (within the cache's bound)…
    as.keys = [];
    expect((await v.verify(t)).subject).toBe('alice');
    as.keys = [key];
    // …but not past its exp: then it is checked in full, and refused.
    await new Promise((r) => setTimeout(r, 2_100));
    await expect(v.verify(t)).rejects.toMatchObject({ description: 'token expired' });
  });

  it('a different token is checked in full (a forged one is refused even after a good one was cached)', async () => {
    const v = verifier();
    const good = await token(key, as.issuer);
    await v.verify(good);
    const [head, body] = good.split('.');
    const forged = `${head}.${body}.${'A'.repeat(342)}`;
    await expect(v.verify(forged)).rejects.toMatchObject({ description: 'signature verification failed' });
  });
});
