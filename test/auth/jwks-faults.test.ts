/**
 * The authorization server as a fault source (issue 31, findings 4–7), played on loopback by the
 * test: a JWKS URL that fails every way it can, a key set too large to read, a key jose refuses,
 * and token checks (`iat` in the future, `typ`). A real Sluice server on each adapter.
 */
import { createPrivateKey, createPublicKey, createSign, generateKeyPairSync } from 'node:crypto';
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { SignJWT } from 'jose';
import { createServer, defineTool } from '../../src/index.js';
import type { Server, ServerOptions } from '../../src/index.js';
import { adapters } from '../helpers/adapters.js';
import { modernMeta } from '../helpers/server.js';
import { kAudience, signingKey } from './helpers.js';
import type { SigningKey } from './helpers.js';

const tools = [defineTool({ name: 'whoami', description: 'ctx.auth', inputSchema: { type: 'object' }, handler: (_a, ctx) => ctx.auth?.subject ?? '' })];

type Behaviour = (req: IncomingMessage, res: ServerResponse) => void;

/** A hostile authorization server: its JWKS answer is whatever `behave` does now; it counts what it was asked and what it sent. */
async function hostileIssuer(): Promise<{ url: string; issuer: string; fetches: number; bytesSent: number; behave: Behaviour; close(): Promise<void> }> {
  const state = {
    url: '', issuer: '', fetches: 0, bytesSent: 0,
    behave: ((_req, res) => { res.writeHead(404).end(); }) as Behaviour,
    close: async () => {},
  };
  const server = createHttpServer((req, res) => {
    if (req.url !== '/jwks') return void res.writeHead(404).end();
    state.fetches++;
    state.behave(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  state.issuer = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  state.url = `${state.issuer}/jwks`;
  state.close = () => new Promise<void>((resolve) => { server.closeAllConnections(); server.close(() => resolve()); });
  return state;
}

const serveKeys = (keys: readonly object[]): Behaviour => (_req, res) => {
  res.writeHead(200, { 'content-type': 'application/json' });
  res.end(JSON.stringify({ keys }));
};

/** Streams `total` bytes of a never-valid JSON array, 1 MiB a write, stopping when the client goes. */
function flood(state: { bytesSent: number }, total: number, chunked: boolean): Behaviour {
  return (_req, res) => {
    res.writeHead(200, chunked ? { 'content-type': 'application/json' } : { 'content-type': 'application/json', 'content-length': String(total) });
    const chunk = Buffer.alloc(1024 * 1024, 0x20);
    let sent = 0;
    const pump = () => {
      while (sent < total && !res.destroyed) {
        sent += chunk.length;
        state.bytesSent += chunk.length;
        if (!res.write(chunk)) return void res.once('drain', pump);
      }
      if (!res.destroyed) res.end();
    };
    res.on('close', () => { sent = total; });
    pump();
  };
}

async function call(url: string, bearer: string): Promise<{ status: number; challenge: string; body: string }> {
  const res = await fetch(url, {
    method: 'POST',
    headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'whoami', authorization: `Bearer ${bearer}` },
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'whoami', arguments: {}, _meta: modernMeta() } }),
  });
  return { status: res.status, challenge: res.headers.get('www-authenticate') ?? '', body: await res.text() };
}

interface Claims { typ?: string | undefined; iat?: number | undefined; kid?: string }

async function mint(key: SigningKey, issuer: string, o: Claims = {}): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  const header: { alg: string; kid: string; typ?: string } = { alg: key.alg, kid: o.kid ?? key.kid };
  if (o.typ !== undefined) header.typ = o.typ;
  return new SignJWT({}).setProtectedHeader(header).setIssuer(issuer).setAudience(kAudience).setSubject('alice')
    .setIssuedAt(o.iat ?? now).setExpirationTime(now + 300).sign(key.privateKey);
}

/** An RS256 token signed with a 1024-bit key (jose refuses to make one, so node:crypto signs it). */
function weakRsa(kid: string): { jwk: object; sign(issuer: string): string } {
  const { privateKey } = generateKeyPairSync('rsa', { modulusLength: 1024 });
  const jwk = { ...createPublicKey(createPrivateKey(privateKey.export({ type: 'pkcs8', format: 'pem' }))).export({ format: 'jwk' }), kid, alg: 'RS256', use: 'sig' };
  return {
    jwk,
    sign(issuer) {
      const part = (v: unknown) => Buffer.from(JSON.stringify(v)).toString('base64url');
      const now = Math.floor(Date.now() / 1000);
      const input = `${part({ alg: 'RS256', kid, typ: 'at+jwt' })}.${part({ iss: issuer, aud: kAudience, sub: 'alice', iat: now, exp: now + 300 })}`;
      return `${input}.${createSign('RSA-SHA256').update(input).sign(privateKey).toString('base64url')}`;
    },
  };
}

const unavailable = (logs: string[]) => logs.filter((l) => l.includes('cannot verify tokens'));

describe.each(adapters('JWKS faults'))('JWKS faults [%s]', (http) => {
  let rsa: SigningKey;
  let as: Awaited<ReturnType<typeof hostileIssuer>>;
  let server: Server | undefined;
  const logs: string[] = [];

  async function start(auth: Partial<NonNullable<ServerOptions['auth']>> = {}): Promise<string> {
    server = createServer({ tools, port: 0, http, janitor: false, auth: { audience: kAudience, issuers: [as.issuer], jwks: as.url, jwksCooldownMs: 60_000, ...auth } },
      { log: (l, m) => logs.push(`${l} ${m}`) });
    return (await server.listen()).url;
  }

  beforeAll(async () => { rsa = await signingKey('k1', 'RS256'); });
  afterEach(async () => {
    await server?.close();
    server = undefined;
    await as?.close();
    logs.length = 0;
  });

  const faults: [string, Behaviour][] = [
    ['HTTP 500', (_q, r) => { r.writeHead(500).end('down'); }],
    ['a reset', (q) => { q.socket.destroy(); }],
    ['garbage', (_q, r) => { r.writeHead(200, { 'content-type': 'application/json' }).end('{"keys": [ not json'); }],
    ['a JSON array', (_q, r) => { r.writeHead(200, { 'content-type': 'application/json' }).end('[1, 2]'); }],
    ['an object without keys', (_q, r) => { r.writeHead(200, { 'content-type': 'application/json' }).end('{"kid": 1}'); }],
    ['a redirect loop', (_q, r) => { r.writeHead(302, { location: '/jwks' }).end(); }],
  ];
  for (const [what, behave] of faults) {
    it(`4: a JWKS URL that never answered (${what}): one fetch and one log line for 30 requests, each 503`, async () => {
      as = await hostileIssuer();
      as.behave = behave;
      const url = await start();
      const bearer = await mint(rsa, as.issuer);
      // Ten at once (they share one fetch), then twenty one after another (the failure is remembered).
      const first = await Promise.all(Array.from({ length: 10 }, () => call(url, bearer)));
      const rest = [];
      for (let i = 0; i < 20; i++) rest.push(await call(url, bearer));
      expect([...first, ...rest].map((r) => r.status)).toEqual(Array(30).fill(503));
      expect(as.fetches).toBe(1);
      expect(unavailable(logs)).toHaveLength(1);
    });
  }

  it('4: a JWKS URL that stalls: requests share one bounded wait, then are answered without waiting again', async () => {
    as = await hostileIssuer();
    const held: ServerResponse[] = [];
    as.behave = (_q, r) => { held.push(r); }; // never answers
    const url = await start();
    const bearer = await mint(rsa, as.issuer);
    const first = await Promise.all(Array.from({ length: 5 }, () => call(url, bearer)));
    expect(first.map((r) => r.status)).toEqual(Array(5).fill(503));
    const fetchesAfterFirst = as.fetches;
    const second = await Promise.all(Array.from({ length: 10 }, () => call(url, bearer)));
    expect(second.map((r) => r.status)).toEqual(Array(10).fill(503));
    expect(fetchesAfterFirst).toBe(1);
    expect(as.fetches).toBe(1); // the second wave waited on no fetch at all
    expect(unavailable(logs)).toHaveLength(1);
    for (const r of held) r.destroy();
  }, 20_000);

  it('4: after the cooldown a failing JWKS URL is tried again, and a fixed one serves', async () => {
    as = await hostileIssuer();
    as.behave = (_q, r) => { r.writeHead(500).end(); };
    const url = await start({ jwksCooldownMs: 300 });
    const bearer = await mint(rsa, as.issuer);
    expect((await call(url, bearer)).status).toBe(503);
    expect((await call(url, bearer)).status).toBe(503);
    expect(as.fetches).toBe(1);
    as.behave = serveKeys([rsa.jwk]);
    await new Promise((r) => setTimeout(r, 400));
    expect((await call(url, bearer)).status).toBe(200);
    expect(as.fetches).toBe(2);
  });

  it('4: a key set past its max age keeps serving while its refresh fails, refetched at most once per cooldown', async () => {
    as = await hostileIssuer();
    as.behave = serveKeys([rsa.jwk]);
    const url = await start({ jwksMaxAgeMs: 1000, jwksCooldownMs: 60_000 });
    let minted = 0;
    const bearer = () => mint(rsa, as.issuer, { iat: Math.floor(Date.now() / 1000) - ++minted });
    expect((await call(url, await bearer())).status).toBe(200);
    expect(as.fetches).toBe(1);
    as.behave = (_q, r) => { r.writeHead(500).end('down'); };
    await new Promise((r) => setTimeout(r, 1100));
    // Fresh tokens each time (the verified-token cache would answer a repeated one without keys).
    const replies = [];
    for (let i = 0; i < 5; i++) replies.push(await call(url, await bearer()));
    expect(replies.map((r) => r.status)).toEqual(Array(5).fill(200));
    expect(as.fetches).toBe(2);
  });

  for (const chunked of [true, false]) {
    it(`5: a ${chunked ? 'chunked' : 'length-framed'} 256 MiB JWKS is not read past 1 MiB (503, the stream cut)`, async () => {
      as = await hostileIssuer();
      as.behave = flood(as, 256 * 1024 * 1024, chunked);
      const url = await start();
      const reply = await call(url, await mint(rsa, as.issuer));
      expect(reply.status).toBe(503);
      expect(unavailable(logs).join('\n')).toContain('larger than 1048576 bytes');
      await new Promise((r) => setTimeout(r, 200));
      // What the socket buffers took before the reader stopped, not the whole document.
      expect(as.bytesSent).toBeLessThan(64 * 1024 * 1024);
    }, 60_000);
  }

  it('6: an RSA key under 2048 bits is skipped (logged once at warn), its tokens 401 invalid_token, a fixed JWKS picked up at the next refresh', async () => {
    as = await hostileIssuer();
    const weak = weakRsa('k1');
    as.behave = serveKeys([weak.jwk]);
    const url = await start({ jwksCooldownMs: 300 });
    for (let i = 0; i < 5; i++) {
      const reply = await call(url, weak.sign(as.issuer));
      expect(reply.status, reply.body).toBe(401);
      expect(reply.challenge).toContain('error="invalid_token"');
    }
    expect(logs.filter((l) => l.startsWith('warn ') && l.includes('skipped') && l.includes('1024 bits'))).toHaveLength(1);
    // The authorization server fixes its key set (same kid, a 2048-bit key).
    as.behave = serveKeys([rsa.jwk]);
    await new Promise((r) => setTimeout(r, 400));
    const fixed = await call(url, await mint(rsa, as.issuer));
    expect(fixed.status, fixed.body).toBe(200);
  });

  it('6: a key that does not import (bad parameters) is skipped the same way: 401, not 500', async () => {
    as = await hostileIssuer();
    as.behave = serveKeys([{ ...rsa.jwk, n: 'AAAA', e: '' }]);
    const url = await start();
    const reply = await call(url, await mint(rsa, as.issuer));
    expect(reply.status, reply.body).toBe(401);
    expect(reply.challenge).toContain('error="invalid_token"');
  });

  it('6: an EC key WebCrypto will not import (a point not on the curve) is skipped: 401, logged once at warn', async () => {
    as = await hostileIssuer();
    const ec = await signingKey('e1', 'ES256');
    as.behave = serveKeys([{ ...ec.jwk, x: 'AAAA' }]);
    const url = await start();
    for (let i = 0; i < 3; i++) {
      const reply = await call(url, await mint(ec, as.issuer, { iat: Math.floor(Date.now() / 1000) - i }));
      expect(reply.status, reply.body).toBe(401);
      expect(reply.challenge).toContain('error="invalid_token"');
    }
    expect(logs.filter((l) => l.startsWith('warn ') && l.includes('"e1" skipped'))).toHaveLength(1);
  });

  it('7: iat in the future beyond the clock skew is refused; within it, accepted', async () => {
    as = await hostileIssuer();
    as.behave = serveKeys([rsa.jwk]);
    const url = await start();
    const now = Math.floor(Date.now() / 1000);
    const future = await call(url, await mint(rsa, as.issuer, { iat: now + 600 }));
    expect(future.status).toBe(401);
    expect(future.challenge).toContain('iat claim check failed');
    expect((await call(url, await mint(rsa, as.issuer, { iat: now + 10 }))).status).toBe(200);
  });

  it('7: typ: at+jwt, application/at+jwt, JWT and none accepted by default; others refused; tokenTypes [at+jwt] insists on RFC 9068', async () => {
    as = await hostileIssuer();
    as.behave = serveKeys([rsa.jwk]);
    let url = await start();
    for (const typ of ['at+jwt', 'application/at+jwt', 'JWT', undefined]) expect((await call(url, await mint(rsa, as.issuer, { typ }))).status, String(typ)).toBe(200);
    for (const typ of ['dpop+jwt', 'id_token+jwt', 'JOSE', 'secevent+jwt']) {
      const reply = await call(url, await mint(rsa, as.issuer, { typ }));
      expect(reply.status, typ).toBe(401);
      expect(reply.challenge).toContain('typ header not accepted');
    }
    await server!.close();
    url = await start({ tokenTypes: ['at+jwt'] });
    expect((await call(url, await mint(rsa, as.issuer, { typ: 'at+jwt' }))).status).toBe(200);
    for (const typ of ['JWT', undefined]) expect((await call(url, await mint(rsa, as.issuer, { typ }))).status, String(typ)).toBe(401);
  });
});
