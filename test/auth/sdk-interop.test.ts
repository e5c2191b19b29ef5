/**
 * The official SDK clients against a Sluice resource server: v1 (@modelcontextprotocol/sdk, legacy
 * sessions) and v2 (@modelcontextprotocol/client, 2026-07-28) connect with a bearer token and
 * list, call and cancel; without one they get the 401 whose challenge their auth flow reads.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport as HttpTransportV1, StreamableHTTPError } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { discoverOAuthProtectedResourceMetadata, extractWWWAuthenticateParams } from '@modelcontextprotocol/sdk/client/auth.js';
import { Client as ClientV2, StreamableHTTPClientTransport as HttpTransportV2, UnauthorizedError } from '@modelcontextprotocol/client';
import { createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { until } from '../helpers/server.js';
import { kAudience, signingKey, startIssuer, token } from './helpers.js';
import type { SigningKey, TestIssuer } from './helpers.js';

const state = { started: 0, cancelled: 0 };
const tools = [
  defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: (args, ctx) => `${ctx.auth?.subject}: ${String(args.text)}` }),
  defineTool({
    name: 'hold', description: 'until cancelled', inputSchema: { type: 'object' },
    handler: (_args, ctx) => new Promise<string>((resolve) => {
      state.started++;
      ctx.signal.addEventListener('abort', () => { state.cancelled++; resolve('cancelled'); }, { once: true });
    }),
  }),
];

describe('official SDK clients with bearer tokens', () => {
  let key: SigningKey;
  let as: TestIssuer;
  let server: Server;
  let url: URL;
  let bearer = '';

  beforeAll(async () => {
    key = await signingKey('k1');
    as = await startIssuer([key]);
    server = createServer({ tools, port: 0, http: 'node', janitor: false, auth: { audience: kAudience, issuers: [as.issuer], jwks: as.jwksUrl, scopes: ['mcp'] } }, { log: () => {} });
    url = new URL((await server.listen()).url);
    bearer = await token(key, as.issuer, { sub: 'alice', scope: 'mcp' });
  });
  afterAll(async () => {
    await server?.close();
    await as?.close();
  });

  it('v1: connects with a bearer token, lists, calls, cancels', async () => {
    const client = new ClientV1({ name: 'v1', version: '1' });
    await client.connect(new HttpTransportV1(url, { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }));
    try {
      const { tools: listed } = await client.listTools();
      expect(listed.map((t) => t.name)).toEqual(['echo', 'hold']);
      const result = await client.callTool({ name: 'echo', arguments: { text: 'hi' } });
      expect(result.content).toEqual([{ type: 'text', text: 'alice: hi' }]);
      const abort = new AbortController();
      const before = state.cancelled;
      const pending = client.callTool({ name: 'hold', arguments: {} }, undefined, { signal: abort.signal });
      await until(() => state.started > 0, 5000, 'hold to start');
      abort.abort('stop');
      await expect(pending).rejects.toThrow();
      await until(() => state.cancelled > before, 5000, 'the cancel to reach the tool');
    } finally {
      await client.close();
    }
  });

  it('v1: without a token, connect fails with the 401, whose challenge the SDK parses and follows to the metadata', async () => {
    const client = new ClientV1({ name: 'v1', version: '1' });
    const failure = await client.connect(new HttpTransportV1(url)).then(() => undefined, (error: unknown) => error);
    expect(failure).toBeInstanceOf(StreamableHTTPError);
    expect((failure as StreamableHTTPError).code).toBe(401);
    const res = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json' }, body: '{}' });
    const { resourceMetadataUrl } = extractWWWAuthenticateParams(res);
    expect(resourceMetadataUrl?.href).toBe('https://mcp.example.test/.well-known/oauth-protected-resource/mcp');
    // The SDK's own discovery from the server URL finds the path-aware document.
    const metadata = await discoverOAuthProtectedResourceMetadata(url);
    expect(metadata.resource).toBe(kAudience);
    expect(metadata.authorization_servers).toEqual([as.issuer]);
    // A token without the server-wide scope: 403, and the SDK reads the scope to ask for.
    const weak = await fetch(url, { method: 'POST', headers: { 'content-type': 'application/json', authorization: `Bearer ${await token(key, as.issuer, { scope: 'other' })}` }, body: '{}' });
    expect(weak.status).toBe(403);
    expect(extractWWWAuthenticateParams(weak)).toMatchObject({ error: 'insufficient_scope', scope: 'mcp' });
  });

  it('v2: connects with a bearer token (2026-07-28), lists, calls, cancels', async () => {
    const client = new ClientV2({ name: 'v2', version: '2' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    await client.connect(new HttpTransportV2(url, { requestInit: { headers: { Authorization: `Bearer ${bearer}` } } }));
    try {
      expect(client.getProtocolEra()).toBe('modern');
      const { tools: listed } = await client.listTools();
      expect(listed.map((t) => t.name)).toEqual(['echo', 'hold']);
      const result = await client.callTool({ name: 'echo', arguments: { text: 'yo' } });
      expect(result.content).toEqual([{ type: 'text', text: 'alice: yo' }]);
      const abort = new AbortController();
      const before = state.cancelled;
      const started = state.started;
      const pending = client.callTool({ name: 'hold', arguments: {} }, { signal: abort.signal });
      await until(() => state.started > started, 5000, 'hold to start');
      abort.abort('stop');
      await expect(pending).rejects.toThrow();
      await until(() => state.cancelled > before, 5000, 'the cancel to reach the tool');
    } finally {
      await client.close();
    }
  });

  it('v2: without a token, connect surfaces UnauthorizedError', async () => {
    const client = new ClientV2({ name: 'v2', version: '2' }, { versionNegotiation: { mode: { pin: '2026-07-28' } } });
    const failure = await client.connect(new HttpTransportV2(url, { authProvider: { token: async () => undefined } })).then(() => undefined, (error: unknown) => error);
    await client.close();
    expect(failure).toBeInstanceOf(UnauthorizedError);
  });
});
