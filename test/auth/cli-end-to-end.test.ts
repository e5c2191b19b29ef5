/**
 * The resource server as deployments run it: `sluice serve --auth-issuer … --auth-audience …
 * --auth-jwks … --auth-scope …` (HTTP worker threads, each verifying on its own), and the client
 * side as users run it: `sluice call --bearer` / SLUICE_BEARER_TOKEN. Real keys, a JWKS served on
 * loopback by the test, real processes.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kSluiceUrl, runCli, serveCli, tempDir } from '../cli/helpers.js';
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
    // Who the tools think is calling: inline in the HTTP worker, and in a pool thread.
    const dir = tempDir({ 'tools.mjs': `import { defineTool } from '${kSluiceUrl}';
const who = (_args, ctx) => \`\${ctx.auth?.subject} [\${ctx.auth?.scopes.join(' ')}]\`;
export const echo = defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: ({ text }) => String(text) });
export const whoami = defineTool({ name: 'whoami', description: 'the caller', inputSchema: { type: 'object', properties: {} }, handler: who });
export const poolWhoami = defineTool({ name: 'pool_whoami', description: 'the caller, from the pool', pool: true, inputSchema: { type: 'object', properties: {} }, handler: who });
` });
    serving = await serveCli(['--port', String(port), '--workers', '2', '--tools', 'tools.mjs', '--auth-issuer', as.issuer, '--auth-audience', audience, '--auth-jwks', as.jwksUrl, '--auth-scope', 'mcp'], { cwd: dir });
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

  it('ctx.auth names the verified caller and its scopes, inline and in a pool thread', async () => {
    const good = await token(key, as.issuer, { aud: audience, scope: 'mcp files:read', sub: 'carol' });
    expect(await runCli(['call', serving.url, 'whoami', '--bearer', good])).toMatchObject({ code: 0, stdout: 'carol [mcp files:read]\n' });
    expect(await runCli(['call', serving.url, 'pool_whoami', '--bearer', good])).toMatchObject({ code: 0, stdout: 'carol [mcp files:read]\n' });
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
