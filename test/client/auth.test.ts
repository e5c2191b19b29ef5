/**
 * Bearer tokens in sluice/client: `HttpClientTransport({ bearer })` sends `Authorization: Bearer …`
 * on every request of both eras, a token function is called per request, and the server's 401/403
 * challenges (RFC 6750 + RFC 9728, as the MCP authorization spec uses them) reject with
 * UnauthorizedError / InsufficientScopeError carrying the challenge's fields. Against a scripted
 * node:http server (auth-stub.ts) that checks the header and answers with real challenges.
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import {
  Client, HttpClientTransport, InsufficientScopeError, RpcError, SluiceError, UnauthorizedError, parseWwwAuthenticate,
} from '../../src/client/index.js';
import { bearerChallenge } from '../../src/client/www-authenticate.js';
import { kAdminScopes, startAuthStub } from './auth-stub.js';
import type { AuthStub } from './auth-stub.js';

let stub: AuthStub;
beforeAll(async () => { stub = await startAuthStub(); });
afterAll(async () => { await stub.close(); });
afterEach(() => {
  stub.seen.length = 0;
  stub.accept = (token) => token === 'good';
  stub.override = undefined;
  stub.era = 'legacy';
});

async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

async function withClient<T>(options: ConstructorParameters<typeof HttpClientTransport>[0], era: 'auto' | 'legacy' | 'modern', fn: (c: Client) => Promise<T>): Promise<T> {
  const client = new Client(new HttpClientTransport(options), { era });
  try {
    return await fn(client);
  } finally {
    await client.close();
  }
}

describe.each(['legacy', 'modern'] as const)('bearer token, %s era', (era) => {
  it('is sent as "Authorization: Bearer <token>" on every request, and the call succeeds', async () => {
    stub.era = era;
    const text = await withClient({ url: stub.url, bearer: 'good' }, 'auto', async (c) => (await c.callTool('echo', { text: 'hi' })).content);
    expect(text).toEqual([{ type: 'text', text: 'hi' }]);
    expect(stub.seen.length).toBeGreaterThanOrEqual(era === 'legacy' ? 5 : 2); // legacy: discover, initialize, initialized, call, DELETE
    for (const request of stub.seen) expect(request.authorization).toBe('Bearer good');
    if (era === 'legacy') expect(stub.seen.map((r) => r.method ?? r.httpMethod)).toEqual(['server/discover', 'initialize', 'notifications/initialized', 'tools/call', 'DELETE']);
  });

  it('a function is called before each request (a refreshed token is used at once)', async () => {
    stub.era = era;
    let n = 0;
    stub.accept = (token) => /^tok-\d+$/.test(token);
    await withClient({ url: stub.url, bearer: () => `tok-${++n}` }, era, async (c) => {
      await c.callTool('echo', { text: 'a' });
      await c.callTool('echo', { text: 'b' });
    });
    const tokens = stub.seen.map((r) => r.authorization);
    expect(tokens).toEqual(tokens.map((_, i) => `Bearer tok-${i + 1}`));
    expect(n).toBe(stub.seen.length);
  });

  it('an async token function that refreshes after a 401: the next call carries the new token', async () => {
    stub.era = era;
    let current = 'stale';
    const client = new Client(new HttpClientTransport({ url: stub.url, bearer: async () => current }), { era });
    try {
      const error = await rejection(client.callTool('echo', { text: 'x' }));
      expect(error).toBeInstanceOf(UnauthorizedError);
      expect(error).toMatchObject({ code: 'unauthorized', error: 'invalid_token' });
      current = 'good';
      expect((await client.callTool('echo', { text: 'again' })).content).toEqual([{ type: 'text', text: 'again' }]);
      expect(stub.seen.at(-1)?.authorization).toBe('Bearer good');
    } finally {
      await client.close();
    }
  });

  it('no token: 401 → UnauthorizedError naming the resource metadata, without error (none was presented)', async () => {
    stub.era = era;
    const error = await withClient({ url: stub.url }, 'auto', (c) => rejection(c.callTool('echo', { text: 'x' })));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toBeInstanceOf(SluiceError);
    const e = error as UnauthorizedError;
    expect(e.code).toBe('unauthorized');
    expect(e.resourceMetadata).toBe(stub.metadata);
    expect(e.error).toBeUndefined();
    expect(e.description).toBeUndefined();
    expect(e.scopes).toBeUndefined();
    expect(e.message).toContain(stub.metadata);
    // The 401 is final in either era: auto does not fall back from server/discover to initialize.
    expect(stub.seen.map((r) => r.method)).toEqual(['server/discover']);
  });

  it('a refused token: 401 invalid_token → error, description and metadata', async () => {
    stub.era = era;
    const error = await withClient({ url: stub.url, bearer: 'expired' }, era, (c) => rejection(c.callTool('echo', { text: 'x' })));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ code: 'unauthorized', error: 'invalid_token', description: 'The access token expired', resourceMetadata: stub.metadata });
    expect((error as Error).message).toContain('invalid_token');
  });

  it('403 insufficient_scope → InsufficientScopeError listing every required scope', async () => {
    stub.era = era;
    const error = await withClient({ url: stub.url, bearer: 'good' }, era, (c) => rejection(c.callTool('admin', {})));
    expect(error).toBeInstanceOf(InsufficientScopeError);
    const e = error as InsufficientScopeError;
    expect(e.code).toBe('insufficient_scope');
    expect(e.requiredScopes).toEqual(kAdminScopes.split(' '));
    expect(e.resourceMetadata).toBe(stub.metadata);
    expect(e.description).toBe('needs admin');
    expect(e.message).toContain('files:read admin:write');
    expect(e.message).toContain(stub.metadata);
  });
});

describe('bearer token on the legacy cancel', () => {
  it('the notifications/cancelled POST carries the token too', async () => {
    let n = 0;
    stub.accept = (token) => /^tok-\d+$/.test(token);
    const error = await withClient({ url: stub.url, bearer: () => `tok-${++n}` }, 'legacy', (c) => rejection(c.callTool('block', {}, { timeoutMs: 100 })));
    expect(error).toMatchObject({ code: 'request_cancelled' });
    const cancel = stub.seen.find((r) => r.method === 'notifications/cancelled');
    expect(cancel?.authorization).toMatch(/^Bearer tok-\d+$/);
    expect(stub.seen.every((r) => r.authorization !== undefined)).toBe(true);
  });
});

describe('challenges on the wire', () => {
  it('several challenges in one header, quoted commas and escaped quotes: the Bearer one is read', async () => {
    stub.override = (_req, _body, res) => {
      res.writeHead(401, {
        'content-type': 'application/json',
        'www-authenticate': 'Basic realm="a, b", Bearer realm="mcp", error="invalid_token", error_description="bad \\"kid\\", try again", scope="a b", resource_metadata="https://as.example/.well-known/oauth-protected-resource/mcp"',
      }).end('{}');
      return true;
    };
    const error = await withClient({ url: stub.url, bearer: 'good' }, 'modern', (c) => rejection(c.ping()));
    expect(error).toMatchObject({
      code: 'unauthorized', error: 'invalid_token', description: 'bad "kid", try again', scopes: ['a', 'b'],
      resourceMetadata: 'https://as.example/.well-known/oauth-protected-resource/mcp',
    });
  });

  it('challenges in separate WWW-Authenticate header lines', async () => {
    stub.override = (_req, _body, res) => {
      res.setHeader('www-authenticate', ['Basic realm="x"', 'Bearer error="insufficient_scope", scope="tools:call", resource_metadata="https://r.example/m"']);
      res.writeHead(403).end();
      return true;
    };
    const error = await withClient({ url: stub.url, bearer: 'good' }, 'modern', (c) => rejection(c.ping()));
    expect(error).toBeInstanceOf(InsufficientScopeError);
    expect(error).toMatchObject({ requiredScopes: ['tools:call'], resourceMetadata: 'https://r.example/m' });
  });

  it('a 401 without a Bearer challenge is still UnauthorizedError, its fields undefined', async () => {
    stub.override = (_req, _body, res) => { res.writeHead(401, { 'www-authenticate': 'Basic realm="x"' }).end(); return true; };
    const error = await withClient({ url: stub.url }, 'modern', (c) => rejection(c.ping()));
    expect(error).toBeInstanceOf(UnauthorizedError);
    expect(error).toMatchObject({ resourceMetadata: undefined, error: undefined, scopes: undefined });
  });

  it('a 403 that is not insufficient_scope (an Origin refusal) stays a JSON-RPC error', async () => {
    stub.override = (_req, body, res) => {
      res.writeHead(403, { 'content-type': 'application/json' }).end(JSON.stringify({ jsonrpc: '2.0', id: body.id ?? null, error: { code: -32600, message: 'Forbidden: Origin not allowed' } }));
      return true;
    };
    const error = await withClient({ url: stub.url }, 'modern', (c) => rejection(c.ping()));
    expect(error).toBeInstanceOf(RpcError);
    expect(error).not.toBeInstanceOf(InsufficientScopeError);
  });

  it('a 403 insufficient_scope without scope: requiredScopes is empty', async () => {
    stub.override = (_req, _body, res) => { res.writeHead(403, { 'www-authenticate': 'Bearer error="insufficient_scope"' }).end(); return true; };
    const error = await withClient({ url: stub.url, bearer: 'good' }, 'modern', (c) => rejection(c.ping()));
    expect(error).toMatchObject({ code: 'insufficient_scope', requiredScopes: [], resourceMetadata: undefined });
  });
});

describe('bearer option checks', () => {
  it('refuses a token an Authorization header cannot carry, and bearer beside an authorization header', async () => {
    expect(() => new HttpClientTransport({ url: stub.url, bearer: '' })).toThrow(expect.objectContaining({ code: 'invalid_option' }) as Error);
    expect(() => new HttpClientTransport({ url: stub.url, bearer: 'two words' })).toThrow(expect.objectContaining({ code: 'invalid_option' }) as Error);
    expect(() => new HttpClientTransport({ url: stub.url, bearer: 'a\r\nx-evil: 1' })).toThrow(expect.objectContaining({ code: 'invalid_option' }) as Error);
    expect(() => new HttpClientTransport({ url: stub.url, bearer: 't', headers: { Authorization: 'Bearer u' } })).toThrow(expect.objectContaining({ code: 'invalid_option' }) as Error);
    // The message never quotes the token.
    try { new HttpClientTransport({ url: stub.url, bearer: 'secret value' }); } catch (error) { expect((error as Error).message).not.toContain('secret'); }
  });

  it('a token function giving a bad token, or failing, fails that request (nothing is sent)', async () => {
    const bad = await withClient({ url: stub.url, bearer: () => 'has space' }, 'modern', (c) => rejection(c.ping()));
    expect(bad).toMatchObject({ code: 'invalid_option' });
    const failing = await withClient({ url: stub.url, bearer: () => Promise.reject(new Error('refresh failed')) }, 'modern', (c) => rejection(c.ping()));
    expect((failing as Error).message).toBe('refresh failed');
    expect(stub.seen).toEqual([]);
  });
});

describe('parseWwwAuthenticate', () => {
  it('RFC 9110 §11.6.1 example: two challenges, token and quoted values, an escaped quote', () => {
    expect(parseWwwAuthenticate('Newauth realm="apps", type=1, title="Login to \\"apps\\"", Basic realm="simple"')).toEqual([
      { scheme: 'newauth', params: { realm: 'apps', type: '1', title: 'Login to "apps"' } },
      { scheme: 'basic', params: { realm: 'simple' } },
    ]);
  });

  it('MCP 401 and 403 challenges', () => {
    expect(parseWwwAuthenticate('Bearer resource_metadata="https://mcp.example.com/.well-known/oauth-protected-resource/mcp"')).toEqual([
      { scheme: 'bearer', params: { resource_metadata: 'https://mcp.example.com/.well-known/oauth-protected-resource/mcp' } },
    ]);
    expect(parseWwwAuthenticate('Bearer error="insufficient_scope", scope="files:read files:write", resource_metadata="https://m/x"')).toEqual([
      { scheme: 'bearer', params: { error: 'insufficient_scope', scope: 'files:read files:write', resource_metadata: 'https://m/x' } },
    ]);
  });

  it('quoted commas and "=" do not split; escaped backslashes unescape', () => {
    expect(parseWwwAuthenticate('Bearer error_description="a, b=c, Basic x", realm="C:\\\\path"')).toEqual([
      { scheme: 'bearer', params: { error_description: 'a, b=c, Basic x', realm: 'C:\\path' } },
    ]);
  });

  it('token68, a scheme alone, empty list elements, spaces around "=", case-insensitive names', () => {
    expect(parseWwwAuthenticate('Negotiate YWJj==, Bearer, ,DPoP algs="ES256"')).toEqual([
      { scheme: 'negotiate', params: {}, token68: 'YWJj==' },
      { scheme: 'bearer', params: {} },
      { scheme: 'dpop', params: { algs: 'ES256' } },
    ]);
    expect(parseWwwAuthenticate('BEARER Realm = "x" ,, Error=invalid_token')).toEqual([
      { scheme: 'bearer', params: { realm: 'x', error: 'invalid_token' } },
    ]);
  });

  it('the first of a repeated param wins; junk stops parsing but keeps what came before', () => {
    expect(parseWwwAuthenticate('Bearer scope="a", scope="b"')).toEqual([{ scheme: 'bearer', params: { scope: 'a' } }]);
    expect(parseWwwAuthenticate('Bearer realm="x" junk here, Basic realm="y"')).toEqual([{ scheme: 'bearer', params: { realm: 'x' } }]);
    expect(parseWwwAuthenticate('Bearer error="unterminated')).toEqual([{ scheme: 'bearer', params: { error: 'unterminated' } }]);
    expect(parseWwwAuthenticate('')).toEqual([]);
    expect(parseWwwAuthenticate('"not a scheme"')).toEqual([]);
  });

  it('bearerChallenge finds the Bearer one across header lines', () => {
    expect(bearerChallenge(['Basic realm="x", Digest realm="y", nonce="n"', 'Bearer scope="s"'])).toEqual({ scheme: 'bearer', params: { scope: 's' } });
    expect(bearerChallenge(['Basic realm="x"'])).toBeUndefined();
  });
});
