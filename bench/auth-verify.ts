/**
 * Bearer-token verification cost (issue 16). Part 1: N checks of one RS256 and one ES256 token
 * through the AuthGate (header parse, jose jwtVerify with the JWKS key cached, scope set), p50/p99
 * µs. Part 2: an HTTP A/B with wrk: echo (2026-07-28 tools/call) with `auth` on vs off, in-process
 * server, node:http or uWS as `auto` picks. Results: bench/results/auth.md.
 */
import { createServer as createHttpServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { mkdtempSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { SignJWT, exportJWK, generateKeyPair } from 'jose';
import type { CryptoKey } from 'jose';
import { AuthGate, resolveAuth } from '../src/auth/index.js';
import { createServer, defineTool } from '../src/index.js';
import { collect } from './http/wrk.js';
import type { AuthOptions } from '../src/index.js';

const kAudience = 'https://mcp.example.test/mcp';
const N = Number(process.env.N ?? 20_000);

function pct(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor(sorted.length * p))];
}

async function main(): Promise<void> {
  const rsa = await generateKeyPair('RS256', { extractable: true });
  const ec = await generateKeyPair('ES256', { extractable: true });
  const jwks = { keys: [{ ...(await exportJWK(rsa.publicKey)), kid: 'r', alg: 'RS256' }, { ...(await exportJWK(ec.publicKey)), kid: 'e', alg: 'ES256' }] };
  const as = createHttpServer((_req, res) => { res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(jwks)); });
  await new Promise<void>((r) => as.listen(0, '127.0.0.1', r));
  const issuer = `http://127.0.0.1:${(as.address() as AddressInfo).port}`;
  const auth: AuthOptions = { audience: kAudience, issuers: [issuer], jwks: `${issuer}/jwks`, scopes: ['mcp'] };
  const mint = (key: CryptoKey, alg: string, kid: string) => new SignJWT({ scope: 'mcp tools' }).setProtectedHeader({ alg, kid }).setIssuer(issuer).setAudience(kAudience)
    .setSubject('bench').setIssuedAt().setExpirationTime('1h').sign(key);
  const tokens = { RS256: await mint(rsa.privateKey, 'RS256', 'r'), ES256: await mint(ec.privateKey, 'ES256', 'e') };
  const gate = new AuthGate(resolveAuth(auth)!, undefined, (m) => process.stderr.write(`${m}\n`));
  let report = `# Bearer-token verification cost\n\nNode ${process.version}, ${new Date().toISOString().slice(0, 10)}. \`node dist/bench/auth-verify.js\` (N=${N}).\n\n## Per request, JWKS key cached (AuthGate.check: header parse + verification + scopes)\n\n| token | p50 µs | p99 µs | JWKS fetches |\n|---|---|---|---|\n`;
  const unique = Number(process.env.UNIQUE ?? 2000);
  for (const [alg, token] of Object.entries(tokens)) {
    const header = `Bearer ${token}`;
    for (let i = 0; i < 1000; i++) await gate.check(header); // warm-up (and the one JWKS fetch)
    // First sight of a token: a full signature check (each token is distinct, so none is cached).
    const key = alg === 'RS256' ? rsa.privateKey : ec.privateKey;
    const fresh: string[] = [];
    for (let i = 0; i < unique; i++) {
      fresh.push(await new SignJWT({ scope: 'mcp tools', jti: `t${i}` }).setProtectedHeader({ alg, kid: alg === 'RS256' ? 'r' : 'e' }).setIssuer(issuer).setAudience(kAudience)
        .setSubject('bench').setIssuedAt().setExpirationTime('1h').sign(key));
    }
    const first: number[] = [];
    for (const t of fresh) {
      const h = `Bearer ${t}`;
      const start = performance.now();
      const r = await gate.check(h);
      first.push((performance.now() - start) * 1000);
      if (!('subject' in r)) throw new Error(`bench token refused: ${r.message}`);
    }
    first.sort((a, b) => a - b);
    // The same token again (what every request after a client's first costs): the verified-token cache.
    const times: number[] = [];
    for (let i = 0; i < N; i++) {
      const t = performance.now();
      const r = await gate.check(header);
      times.push((performance.now() - t) * 1000);
      if (!('subject' in r)) throw new Error(`bench token refused: ${r.message}`);
    }
    times.sort((a, b) => a - b);
    report += `| ${alg}, first sight (full check, ${unique} distinct tokens) | ${pct(first, 0.5).toFixed(1)} | ${pct(first, 0.99).toFixed(1)} | ${gate.jwksFetches} |\n`;
    report += `| ${alg}, repeated (verified-token cache) | ${pct(times, 0.5).toFixed(1)} | ${pct(times, 0.99).toFixed(1)} | ${gate.jwksFetches} |\n`;
  }
  as.close();
  // HTTP A/B
  const echo = defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object' }, handler: () => 'ok' });
  const dir = mkdtempSync(join(tmpdir(), 'sluice-auth-bench-'));
  const body = JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: {}, _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } });
  const rows: string[] = [];
  const rps: Record<string, number> = {};
  as.listen(0, '127.0.0.1');
  await new Promise((r) => as.once('listening', r));
  const issuer2 = `http://127.0.0.1:${(as.address() as AddressInfo).port}`;
  const tokenRs = await new SignJWT({ scope: 'mcp' }).setProtectedHeader({ alg: 'RS256', kid: 'r' }).setIssuer(issuer2).setAudience(kAudience).setSubject('bench').setExpirationTime('1h').sign(rsa.privateKey);
  for (const mode of ['off', 'on', 'off', 'on'] as const) {
    const server = createServer({ tools: [echo], port: 0, janitor: false, ...(mode === 'on' ? { auth: { audience: kAudience, issuers: [issuer2], jwks: `${issuer2}/jwks` } } : {}) }, { log: () => {} });
    const { port } = await server.listen();
    const headers: Record<string, string> = { 'content-type': 'application/json', accept: 'application/json', 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'echo' };
    if (mode === 'on') headers.authorization = `Bearer ${tokenRs}`;
    const script = join(dir, `${mode}.lua`);
    writeFileSync(script, `wrk.method = "POST"\nwrk.body = ${JSON.stringify(body)}\n${Object.entries(headers).map(([k, v]) => `wrk.headers[${JSON.stringify(k)}] = ${JSON.stringify(v)}`).join('\n')}\n`);
    // Asynchronously: the server runs in this process's event loop.
    const out = await collect(['wrk', ['-t1', '-c32', '-d8s', '--latency', '-s', script, `http://127.0.0.1:${port}/mcp`]], 'wrk');
    await server.close();
    if (process.env.DEBUG !== undefined) process.stderr.write(out);
    const r = Number(/Requests\/sec:\s+([\d.]+)/.exec(out)?.[1]);
    const p50 = /^\s+50%\s+(\S+)/m.exec(out)?.[1] ?? '?';
    const non2xx = /Non-2xx or 3xx responses: (\d+)/.exec(out)?.[1] ?? '0';
    rps[mode] = Math.max(rps[mode] ?? 0, r);
    rows.push(`| ${mode} | ${r.toFixed(0)} | ${p50} | ${non2xx} |`);
  }
  as.close();
  report += `\n## HTTP A/B: echo (2026-07-28 tools/call), in-process server, wrk -t1 -c32 -d8s, alternating runs\n\n| auth | req/s | p50 | non-2xx |\n|---|---|---|---|\n${rows.join('\n')}\n\nBest on ÷ best off: **${(rps.on / rps.off).toFixed(3)}**\n`;
  process.stdout.write(report);
  writeFileSync(new URL('../../bench/results/auth.md', import.meta.url), report);
}

await main();
