/**
 * Sluice as an OAuth 2.1 resource server, end to end: real keys and tokens, a JWKS (and issuer
 * metadata) served on loopback by the test, a real Sluice server on each adapter.
 */
import { request } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createServer, defineTool, definePrompt, defineResource } from '../../src/index.js';
import type { AuthInfo, Server, ServerOptions } from '../../src/index.js';
import { adapters } from '../helpers/adapters.js';
import { modernMeta, until } from '../helpers/server.js';
import { hmacWithPublicKey, kAudience, noneToken, signingKey, startIssuer, token } from './helpers.js';
import type { SigningKey, TestIssuer } from './helpers.js';

const kModern = '2026-07-28';

/** What tools saw, for assertions. */
const seen: { auth: AuthInfo | undefined; cancelled: boolean; started: boolean; release: (() => void) | undefined } = { auth: undefined, cancelled: false, started: false, release: undefined };

const tools = [
  defineTool({ name: 'whoami', description: 'ctx.auth', inputSchema: { type: 'object' }, handler: (_args, ctx) => { seen.auth = ctx.auth; return JSON.stringify({ sub: ctx.auth?.subject, scopes: ctx.auth?.scopes }); } }),
  defineTool({ name: 'write', description: 'needs files:write and admin', inputSchema: { type: 'object' }, scopes: ['files:write', 'admin'], handler: () => 'written' }),
  defineTool({
    name: 'hold', description: 'runs until released or cancelled', inputSchema: { type: 'object' },
    handler: (_args, ctx) => new Promise<string>((resolve) => {
      seen.started = true;
      seen.cancelled = false;
      seen.release = () => resolve('released');
      ctx.signal.addEventListener('abort', () => { seen.cancelled = true; resolve('cancelled'); }, { once: true });
    }),
  }),
  defineResource({ uri: 'test://secret', name: 'secret', scopes: ['files:read'], read: () => 'secret text' }),
  definePrompt({ name: 'greet', scopes: ['prompts'], get: () => 'hello' }),
];

interface Reply { status: number; headers: Headers; body: string }

async function modern(url: string, bearer: string | undefined, method: string, params: Record<string, unknown>, name?: string): Promise<Reply> {
  const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': kModern, 'mcp-method': method };
  if (name !== undefined) headers['mcp-name'] = name;
  if (bearer !== undefined) headers.authorization = `Bearer ${bearer}`;
  const res = await fetch(url, { method: 'POST', headers, body: JSON.stringify({ jsonrpc: '2.0', id: 1, method, params: { ...params, _meta: modernMeta() } }) });
  return { status: res.status, headers: res.headers, body: await res.text() };
}

const call = (url: string, bearer: string | undefined, tool: string) => modern(url, bearer, 'tools/call', { name: tool, arguments: {} }, tool);

function challenge(reply: Reply): string {
  return reply.headers.get('www-authenticate') ?? '';
}

describe.each(adapters('OAuth resource server'))('OAuth resource server [%s]', (http) => {
  let rsa: SigningKey;
  let ec: SigningKey;
  let as: TestIssuer;
  let server: Server;
  let url = '';
  let metadataUrl = '';
  const logs: string[] = [];

  async function start(options: Partial<ServerOptions>): Promise<{ server: Server; url: string }> {
    const s = createServer({ tools, port: 0, http, janitor: false, ...options }, { log: (_l, m) => logs.push(m) });
    const address = await s.listen();
    return { server: s, url: address.url };
  }

  beforeAll(async () => {
    rsa = await signingKey('k1', 'RS256');
    ec = await signingKey('e1', 'ES256');
    as = await startIssuer([rsa, ec]);
    ({ server, url } = await start({
      auth: { audience: kAudience, issuers: [as.issuer], jwks: as.jwksUrl, scopes: ['mcp'], scopeImplies: { 'files:admin': ['files:write'], root: ['files:admin', 'admin'] } },
    }));
    metadataUrl = 'https://mcp.example.test/.well-known/oauth-protected-resource/mcp';
  });
  afterAll(async () => {
    await server?.close();
    await as?.close();
  });

  it('a valid token (RS256 or ES256) is served, and the tool sees ctx.auth', async () => {
    for (const key of [rsa, ec]) {
      const reply = await call(url, await token(key, as.issuer, { sub: 'alice', scope: 'mcp extra' }), 'whoami');
      expect(reply.status, reply.body).toBe(200);
      expect(reply.body).toContain('\\"sub\\":\\"alice\\"');
      expect(seen.auth?.subject).toBe('alice');
      expect(seen.auth?.scopes).toEqual(expect.arrayContaining(['mcp', 'extra']));
      expect(seen.auth?.claims.iss).toBe(as.issuer);
      expect(seen.auth?.expiresAt).toBeGreaterThan(Date.now() / 1000);
    }
    // scp (an array) is read too.
    const reply = await call(url, await token(rsa, as.issuer, { scp: ['mcp'] }), 'whoami');
    expect(reply.status).toBe(200);
  });

  it('no token: 401 naming the metadata, without an error', async () => {
    const reply = await call(url, undefined, 'whoami');
    expect(reply.status).toBe(401);
    expect(challenge(reply)).toBe(`Bearer resource_metadata="${metadataUrl}"`);
    // Another scheme is no bearer token at all.
    const basic = await fetch(url, { method: 'POST', headers: { authorization: 'Basic YTpi', 'content-type': 'application/json' }, body: '{}' });
    expect(basic.status).toBe(401);
    expect(basic.headers.get('www-authenticate')).not.toContain('error=');
  });

  it('bad tokens: 401 invalid_token, each', async () => {
    const cases: [string, string][] = [
      ['expired', await token(rsa, as.issuer, { expiresIn: -120 })],
      ['nbf in the future', await token(rsa, as.issuer, { notBefore: 600 })],
      ['wrong audience', await token(rsa, as.issuer, { aud: 'https://other.example.test/mcp' })],
      ['wrong issuer', await token(rsa, as.issuer, { iss: 'https://evil.example.test' })],
      ['alg none', noneToken(as.issuer)],
      ['HS256 with the public key', await hmacWithPublicKey(rsa, as.issuer)],
      ['unknown key', await token(await signingKey('k1', 'RS256'), as.issuer)],
      ['no exp', await token(rsa, as.issuer, { expiresIn: null })],
      ['no sub', await token(rsa, as.issuer, { sub: '' })],
      ['garbage', 'not.a.jwt'],
    ];
    for (const [what, bad] of cases) {
      const reply = await call(url, `${bad}`, 'whoami');
      expect(reply.status, what).toBe(401);
      expect(challenge(reply), what).toMatch(new RegExp(`^Bearer resource_metadata="${metadataUrl.replace(/[.]/g, '\\.')}", error="invalid_token", error_description="[^"]+"$`));
    }
    // Within the 30 s tolerance, a just-expired token still passes.
    expect((await call(url, await token(rsa, as.issuer, { expiresIn: -5, scope: 'mcp' }), 'whoami')).status).toBe(200);
  });

  it('server-wide scope missing: 403 insufficient_scope', async () => {
    const reply = await call(url, await token(rsa, as.issuer, { scope: 'other' }), 'whoami');
    expect(reply.status).toBe(403);
    expect(challenge(reply)).toBe(`Bearer error="insufficient_scope", scope="mcp", resource_metadata="${metadataUrl}"`);
  });

  it('per-item scopes: 403 listing every needed scope; hierarchy honoured', async () => {
    const reply = await call(url, await token(rsa, as.issuer, { scope: 'mcp files:write' }), 'write');
    expect(reply.status).toBe(403);
    expect(challenge(reply)).toBe(`Bearer error="insufficient_scope", scope="mcp files:write admin", resource_metadata="${metadataUrl}"`);
    expect((await call(url, await token(rsa, as.issuer, { scope: 'mcp files:write admin' }), 'write')).status).toBe(200);
    // root → files:admin → files:write (transitive), root → admin.
    expect((await call(url, await token(rsa, as.issuer, { scope: 'mcp root' }), 'write')).status).toBe(200);
    const read = await modern(url, await token(rsa, as.issuer, { scope: 'mcp' }), 'resources/read', { uri: 'test://secret' }, 'test://secret');
    expect(read.status).toBe(403);
    expect(challenge(read)).toContain('scope="mcp files:read"');
    const prompt = await modern(url, await token(rsa, as.issuer, { scope: 'mcp' }), 'prompts/get', { name: 'greet' }, 'greet');
    expect(prompt.status).toBe(403);
    expect(challenge(prompt)).toContain('scope="mcp prompts"');
    expect((await modern(url, await token(rsa, as.issuer, { scope: 'mcp prompts' }), 'prompts/get', { name: 'greet' }, 'greet')).status).toBe(200);
  });

  it('serves Protected Resource Metadata at the path-aware and the root well-known locations, no token needed', async () => {
    const origin = new URL(url).origin;
    for (const path of ['/.well-known/oauth-protected-resource/mcp', '/.well-known/oauth-protected-resource']) {
      const res = await fetch(`${origin}${path}`, { headers: { origin: 'https://elsewhere.example' } });
      expect(res.status, path).toBe(200);
      expect(res.headers.get('access-control-allow-origin')).toBe('*');
      const doc = await res.json() as Record<string, unknown>;
      expect(doc).toMatchObject({ resource: kAudience, authorization_servers: [as.issuer], bearer_methods_supported: ['header'] });
      expect(doc.scopes_supported).toEqual(expect.arrayContaining(['mcp', 'files:write', 'admin', 'files:read', 'prompts']));
    }
  });

  it('a refused token costs no body read: a huge body with a bad token gets 401 before it is sent', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      const req = request(url, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json', authorization: 'Bearer bad.token.here', 'content-length': String(3 * 1024 * 1024) } }, (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
        req.destroy();
      });
      req.on('error', (error) => { if (!req.destroyed) reject(error); });
      // Only the first 16 KiB is ever sent: the answer must not wait for the rest.
      req.write(Buffer.alloc(16 * 1024, 0x20));
    });
    expect(status).toBe(401);
  });

  it('1000 notifications/cancelled from another principal cancel nothing (legacy, no sessions)', async () => {
    const { server: s, url: u } = await start({ sessions: false, auth: { audience: kAudience, issuers: [as.issuer], jwks: as.jwksUrl } });
    try {
      const alice = await token(rsa, as.issuer, { sub: 'alice' });
      const mallory = await token(rsa, as.issuer, { sub: 'mallory' });
      seen.started = false;
      const running = fetch(u, {
        method: 'POST',
        headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${alice}` },
        body: JSON.stringify({ jsonrpc: '2.0', id: 7, method: 'tools/call', params: { name: 'hold', arguments: {} } }),
      }).then((r) => r.text());
      await until(() => seen.started, 5000, 'the tool to start');
      const cancel = JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 7, reason: 'attack' } });
      for (let i = 0; i < 1000; i += 50) {
        const batch = await Promise.all(Array.from({ length: 50 }, () => fetch(u, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${mallory}` }, body: cancel })));
        for (const r of batch) expect(r.status).toBe(202);
      }
      expect(seen.cancelled).toBe(false);
      // The control: the same notification from the request's own principal does cancel it.
      const own = await fetch(u, { method: 'POST', headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${alice}` }, body: cancel });
      expect(own.status).toBe(202);
      await until(() => seen.cancelled, 5000, 'the own cancel');
      await running;
    } finally {
      await s.close();
    }
  });

  it('sessions are bound to the principal: another principal presenting the id gets 404', async () => {
    const alice = await token(rsa, as.issuer, { sub: 'alice', scope: 'mcp' });
    const bob = await token(rsa, as.issuer, { sub: 'bob', scope: 'mcp' });
    const init = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${alice}` },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 't', version: '1' } } }),
    });
    expect(init.status).toBe(200);
    const session = init.headers.get('mcp-session-id')!;
    await init.text();
    const list = (bearer: string) => fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', authorization: `Bearer ${bearer}`, 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/list' }),
    });
    expect((await list(alice)).status).toBe(200);
    expect((await list(bob)).status).toBe(404);
    // DELETE checks the token first, then the binding.
    expect((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session } })).status).toBe(401);
    expect((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, authorization: `Bearer ${bob}` } })).status).toBe(404);
    expect((await fetch(url, { method: 'DELETE', headers: { 'mcp-session-id': session, authorization: `Bearer ${alice}` } })).status).toBe(204);
  });

  it('GET on the endpoint checks the token before its 405', async () => {
    expect((await fetch(url, { headers: { accept: 'text/event-stream' } })).status).toBe(401);
    expect((await fetch(url, { headers: { accept: 'text/event-stream', authorization: `Bearer ${await token(rsa, as.issuer, { scope: 'mcp' })}` } })).status).toBe(405);
  });
});

describe('JWKS: rotation, rate limit, discovery', () => {
  const opened: { close(): Promise<void> }[] = [];
  afterAll(async () => { for (const o of opened.reverse()) await o.close(); });

  async function serve(auth: ServerOptions['auth']): Promise<string> {
    const s = createServer({ tools, port: 0, http: 'node', janitor: false, auth }, { log: () => {} });
    opened.push(s);
    return (await s.listen()).url;
  }

  it('a rotated-in key is accepted after a refresh; refreshes on unknown kids are rate-limited', async () => {
    const k1 = await signingKey('k1');
    const k2 = await signingKey('k2');
    const as = await startIssuer([k1]);
    opened.push(as);
    const url = await serve({ audience: kAudience, issuers: [as.issuer], jwks: as.jwksUrl, jwksCooldownMs: 1500 });
    expect((await call(url, await token(k1, as.issuer), 'whoami')).status).toBe(200);
    expect(as.jwksFetches).toBe(1);
    as.keys = [k2];
    // Within the cooldown: the unknown kid is refused without a refetch, however many arrive.
    const early = await token(k2, as.issuer);
    for (let i = 0; i < 20; i++) expect((await call(url, early, 'whoami')).status).toBe(401);
    expect(as.jwksFetches).toBe(1);
    await new Promise((r) => setTimeout(r, 1600));
    expect((await call(url, await token(k2, as.issuer), 'whoami')).status).toBe(200);
    expect(as.jwksFetches).toBe(2);
    // A flood of made-up kids right after: still at most one fetch per cooldown.
    const stranger = await signingKey('k9');
    const forged = await token(stranger, as.issuer);
    await Promise.all(Array.from({ length: 50 }, () => call(url, forged, 'whoami')));
    expect(as.jwksFetches).toBe(2);
  });

  it('the JWKS URL is discovered from the issuer metadata (RFC 8414), fetched once', async () => {
    const k = await signingKey('d1', 'ES256');
    const as = await startIssuer([k], { metadata: 'oauth' });
    opened.push(as);
    const url = await serve({ audience: kAudience, issuers: [as.issuer] });
    for (let i = 0; i < 5; i++) expect((await call(url, await token(k, as.issuer), 'whoami')).status).toBe(200);
    expect(as.metadataFetches).toBe(1);
    expect(as.jwksFetches).toBe(1);
  });

  it('falls back to the OpenID configuration of an issuer with a path; several issuers each keep their keys', async () => {
    const a = await signingKey('a1');
    const b = await signingKey('b1');
    const asA = await startIssuer([a], { path: '/tenant', metadata: 'openid' });
    const asB = await startIssuer([b], { metadata: 'oauth' });
    opened.push(asA, asB);
    const url = await serve({ audience: kAudience, issuers: [asA.issuer, asB.issuer] });
    expect((await call(url, await token(a, asA.issuer), 'whoami')).status).toBe(200);
    expect((await call(url, await token(b, asB.issuer), 'whoami')).status).toBe(200);
    // A token claiming issuer A but signed with B's key is checked against A's keys: refused.
    expect((await call(url, await token(b, asA.issuer), 'whoami')).status).toBe(401);
    expect(asA.metadataFetches).toBe(1);
  });

  it('JWKS unreachable: 503 with Retry-After, not a 401', async () => {
    const url = await serve({ audience: kAudience, issuers: ['http://127.0.0.1:9'], jwks: 'http://127.0.0.1:9/jwks' });
    const k = await signingKey('x');
    const reply = await call(url, await token(k, 'http://127.0.0.1:9'), 'whoami');
    expect(reply.status).toBe(503);
    expect(reply.headers.get('retry-after')).not.toBeNull();
  });

  it('a user verifier replaces the JWT path; its expiry is enforced', async () => {
    const url = await serve({
      audience: kAudience, issuers: ['https://as.example.test'],
      verify: (t) => t === 'opaque-good' ? { subject: 'carol', scopes: ['mcp'], expiresAt: Date.now() / 1000 + 60, claims: {} }
        : t === 'opaque-stale' ? { subject: 'carol', scopes: [], expiresAt: Date.now() / 1000 - 60, claims: {} } : undefined,
    });
    expect((await call(url, 'opaque-good', 'whoami')).status).toBe(200);
    expect(seen.auth?.subject).toBe('carol');
    expect((await call(url, 'opaque-stale', 'whoami')).status).toBe(401);
    expect((await call(url, 'opaque-bad', 'whoami')).status).toBe(401);
  });
});

describe('auth options', () => {
  const base = { audience: kAudience, issuers: ['https://as.example.test'] };
  it.each([
    ['audience not a URL', { ...base, audience: 'mcp' }],
    ['no issuers', { ...base, issuers: [] }],
    ['issuer not a URL', { ...base, issuers: ['as'] }],
    ['HMAC algorithm', { ...base, algorithms: ['HS256'] }],
    ['none algorithm', { ...base, algorithms: ['none'] }],
    ['scope with a space', { ...base, scopes: ['a b'] }],
  ])('refuses %s', (_what, auth) => {
    expect(() => createServer({ tools, auth: auth as ServerOptions['auth'] })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });

  it('auth and authenticate are exclusive', () => {
    expect(() => createServer({ tools, auth: base, authenticate: () => ({ id: 'x' }) })).toThrow(/exclusive/);
  });

  it('an in-process authenticate with a tools module is refused, as auth.verify is, not dropped', () => {
    // The HTTP workers load the module and take its exports: the function never reached them, so
    // every request was served anonymously, a hook that throws included.
    const module = new URL('../fixtures/server-tools.mjs', import.meta.url);
    expect(() => createServer({ tools: module, authenticate: () => { throw new Error('no'); } })).toThrow(expect.objectContaining({
      code: 'invalid_option', message: expect.stringContaining('export authenticate from the tools module'),
    }));
    expect(() => createServer({ tools: module.href, authenticate: () => ({ id: 'x' }) })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });

  it('a definition with bad scopes is refused', () => {
    expect(() => defineTool({ name: 't', description: '', inputSchema: { type: 'object' }, scopes: ['a"b'], handler: () => '' })).toThrow(expect.objectContaining({ code: 'invalid_definition' }));
  });
});
