/**
 * The resource server as deployments run it: `sluice serve --auth-issuer … --auth-audience …
 * --auth-jwks … --auth-scope …` (HTTP worker threads, each verifying on its own), and the client
 * side as users run it: `sluice call --bearer` / SLUICE_BEARER_TOKEN. Real keys, a JWKS served on
 * loopback by the test, real processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli, serveCli } from '../cli/helpers.js';
import type { Serving } from '../cli/helpers.js';
import { signingKey, startIssuer, token } from './helpers.js';
import type { SigningKey, TestIssuer } from './helpers.js';

describe('sluice serve --auth-* with sluice call --bearer', () => {
  let key: SigningKey;
  let as: TestIssuer;
  let serving: Serving;
  let audience: string;
  beforeAll(async () => {
    key = await signingKey('cli');
    as = await startIssuer([key]);
    // The audience is this server's own MCP URL; the port is picked first so the URL is known.
    const { freePort } = await import('../helpers/redis.js');
    const port = await freePort();
    audience = `http://127.0.0.1:${port}/mcp`;
    serving = await serveCli(['--port', String(port), '--workers', '2', '--auth-issuer', as.issuer, '--auth-audience', audience, '--auth-jwks', as.jwksUrl, '--auth-scope', 'mcp']);
  });
  afterAll(async () => {
    await serving?.stop();
    await as?.close();
  });

  it('a valid token with the scope is served, by flag and by environment variable', async () => {
    const good = await token(key, as.issuer, { aud: audience, scope: 'mcp' });
    expect(await runCli(['call', serving.url, 'echo', '{"text":"hi"}', '--bearer', good])).toMatchObject({ code: 0, stdout: 'hi\n' });
    expect(await runCli(['call', serving.url, 'echo', '{"text":"env"}'], { env: { SLUICE_BEARER_TOKEN: good } })).toMatchObject({ code: 0, stdout: 'env\n' });
  });

  it('no token, a wrong audience, or a missing scope: one line naming the metadata URL (and the scope), exit 1', async () => {
    const metadata = `${new URL(audience).origin}/.well-known/oauth-protected-resource/mcp`;
    const none = await runCli(['call', serving.url, 'echo', '{"text":"x"}'], { env: { SLUICE_BEARER_TOKEN: undefined } });
    expect(none.code).toBe(1);
    expect(none.stderr).toContain(metadata);
    const wrongAudience = await runCli(['call', serving.url, 'echo', '{"text":"x"}', '--bearer', await token(key, as.issuer, { aud: 'https://elsewhere.example/mcp', scope: 'mcp' })]);
    expect(wrongAudience.code).toBe(1);
    expect(wrongAudience.stderr).toContain('invalid_token');
    const noScope = await runCli(['call', serving.url, 'echo', '{"text":"x"}', '--bearer', await token(key, as.issuer, { aud: audience, scope: 'other' })]);
    expect(noScope.code).toBe(1);
    expect(noScope.stderr).toContain('insufficient_scope');
    expect(noScope.stderr).toContain('mcp');
  });

  it('the protected resource metadata is served at the path-aware and root well-known locations', async () => {
    const origin = new URL(serving.url).origin;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(`${origin}${path}`);
      expect(res.status, path).toBe(200);
      expect(await res.json()).toMatchObject({ resource: audience, authorization_servers: [as.issuer] });
    }
  });
});
