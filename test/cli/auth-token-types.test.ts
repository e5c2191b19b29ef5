/**
 * `sluice serve --auth-token-types <list>`: the comma-separated `typ` values a token may carry
 * (auth.tokenTypes). The flags are mapped by serveOptions and the result served for real: a token
 * typed JWT is refused (401) when only RFC 9068's at+jwt is listed, and served when JWT is too.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { serveOptions } from '../../src/cli/serve.js';
import { UsageError } from '../../src/cli/flags.js';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { modernMeta } from '../helpers/server.js';
import { runCli } from './helpers.js';
import { kAudience, signingKey, startIssuer } from '../auth/helpers.js';
import type { SigningKey, TestIssuer } from '../auth/helpers.js';

const whoami = defineTool({ name: 'whoami', description: 'ctx.auth', inputSchema: { type: 'object' }, handler: (_a, ctx) => ctx.auth?.subject ?? '' });

describe('sluice serve --auth-token-types', () => {
  const base = { 'auth-issuer': ['https://as.example.test'], 'auth-audience': kAudience };

  it('maps a comma-separated list to auth.tokenTypes (spaces around commas allowed); absent, no tokenTypes', () => {
    expect(serveOptions({ ...base, 'auth-token-types': 'at+jwt' }).auth?.tokenTypes).toEqual(['at+jwt']);
    expect(serveOptions({ ...base, 'auth-token-types': 'at+jwt, JWT' }).auth?.tokenTypes).toEqual(['at+jwt', 'JWT']);
    expect(serveOptions(base).auth).not.toHaveProperty('tokenTypes');
  });

  it('an unknown or empty type is a usage error naming the flag; alone it needs --auth-issuer and --auth-audience', () => {
    for (const list of ['dpop+jwt', 'at+jwt,', '']) {
      expect(() => serveOptions({ ...base, 'auth-token-types': list }), list).toThrow(UsageError);
      expect(() => serveOptions({ ...base, 'auth-token-types': list }), list).toThrow(/^--auth-token-types must be/);
    }
    expect(() => serveOptions({ 'auth-token-types': 'at+jwt' })).toThrow(/OAuth needs both --auth-issuer <url> and --auth-audience <uri>/);
  });

  it('sluice serve parses the flag: a bad list is its usage error (exit 2), not an unknown option', async () => {
    const run = await runCli(['serve', '--auth-issuer', 'https://as.example.test', '--auth-audience', kAudience, '--auth-token-types', 'dpop+jwt', '--port', '0']);
    expect(run.code).toBe(2);
    expect(run.stderr).toMatch(/--auth-token-types must be/);
    expect(run.stderr).not.toMatch(/Unknown option/i);
  });

  describe('served', () => {
    let key: SigningKey;
    let as: TestIssuer;
    const servers: Server[] = [];
    beforeAll(async () => {
      key = await signingKey('tt');
      as = await startIssuer([key]);
    });
    afterAll(async () => {
      for (const s of servers) await s.close();
      await as?.close();
    });

    async function serveWith(types: string): Promise<string> {
      const options = serveOptions({ 'auth-issuer': [as.issuer], 'auth-audience': kAudience, 'auth-jwks': as.jwksUrl, 'auth-token-types': types, http: 'node' });
      const server = createServer({ ...options, tools: [whoami], port: 0, janitor: false }, { log: () => {} });
      servers.push(server);
      return (await server.listen()).url;
    }

    async function status(url: string, typ: string | undefined): Promise<number> {
      const now = Math.floor(Date.now() / 1000);
      const header: { alg: string; kid: string; typ?: string } = { alg: key.alg, kid: key.kid };
      if (typ !== undefined) header.typ = typ;
      const bearer = await new SignJWT({}).setProtectedHeader(header).setIssuer(as.issuer).setAudience(kAudience).setSubject('alice')
        .setIssuedAt(now).setExpirationTime(now + 300).sign(key.privateKey);
      const res = await fetch(url, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami', authorization: `Bearer ${bearer}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: modernMeta() } }),
      });
      await res.arrayBuffer();
      return res.status;
    }

    it('at+jwt only: a JWT-typed or untyped token is 401, an at+jwt one served', async () => {
      const url = await serveWith('at+jwt');
      expect(await status(url, 'at+jwt')).toBe(200);
      expect(await status(url, 'JWT')).toBe(401);
      expect(await status(url, undefined)).toBe(401);
    });

    it('at+jwt,JWT: both served', async () => {
      const url = await serveWith('at+jwt,JWT');
      expect(await status(url, 'at+jwt')).toBe(200);
      expect(await status(url, 'JWT')).toBe(200);
    });
  });
});
