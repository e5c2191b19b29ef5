/**
 * `sluice call` and `sluice list` with a bearer token: `--bearer <token>` or SLUICE_BEARER_TOKEN
 * (the flag wins) is sent as `Authorization: Bearer <token>`; a 401 or 403 insufficient_scope is
 * one stderr line naming the resource metadata URL and the scopes, exit 1. Against the scripted
 * resource server of test/client/auth-stub.ts (needs `npm run build`: the CLI runs from dist).
 */
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { kAdminScopes, startAuthStub } from '../client/auth-stub.js';
import type { AuthStub } from '../client/auth-stub.js';
import { runCli } from './helpers.js';

let stub: AuthStub;
beforeAll(async () => { stub = await startAuthStub(); });
afterAll(async () => { await stub.close(); });
afterEach(() => { stub.seen.length = 0; stub.era = 'legacy'; });

/** No token in the environment unless a test puts one there. */
const kNoEnv = { SLUICE_BEARER_TOKEN: undefined };

describe.each(['legacy', 'modern'] as const)('sluice call with a bearer token (%s server)', (era) => {
  it('--bearer is sent on every request and the call succeeds', async () => {
    stub.era = era;
    const run = await runCli(['call', stub.url, 'echo', '{"text":"hi"}', '--bearer', 'good'], { env: kNoEnv });
    expect(run).toMatchObject({ code: 0, stdout: 'hi\n' });
    expect(stub.seen.length).toBeGreaterThan(0);
    for (const request of stub.seen) expect(request.authorization).toBe('Bearer good');
  });

  it('SLUICE_BEARER_TOKEN is used without the flag', async () => {
    stub.era = era;
    const run = await runCli(['call', stub.url, 'echo', '{"text":"env"}'], { env: { SLUICE_BEARER_TOKEN: 'good' } });
    expect(run).toMatchObject({ code: 0, stdout: 'env\n' });
    for (const request of stub.seen) expect(request.authorization).toBe('Bearer good');
  });
});

describe('sluice call: 401 and 403', () => {
  it('the flag wins over the environment variable', async () => {
    const run = await runCli(['call', stub.url, 'echo', '{"text":"x"}', '--bearer', 'good'], { env: { SLUICE_BEARER_TOKEN: 'stale' } });
    expect(run.code).toBe(0);
    expect(new Set(stub.seen.map((r) => r.authorization))).toEqual(new Set(['Bearer good']));
  });

  it('no token: one line naming the metadata URL and how to pass a token, exit 1', async () => {
    const run = await runCli(['call', stub.url, 'echo', '{"text":"x"}'], { env: kNoEnv });
    expect(run.code).toBe(1);
    expect(run.stdout).toBe('');
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('401');
    expect(run.stderr).toContain(stub.metadata);
    expect(run.stderr).toContain('--bearer');
    expect(run.stderr).toContain('SLUICE_BEARER_TOKEN');
  });

  it('a refused token: one line with invalid_token, the description and the metadata URL, exit 1', async () => {
    const run = await runCli(['call', stub.url, 'echo', '{"text":"x"}'], { env: { SLUICE_BEARER_TOKEN: 'tok-SECRET-42' } });
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('401 invalid_token: The access token expired');
    expect(run.stderr).toContain(stub.metadata);
    expect(run.stderr).not.toContain('SECRET'); // the token itself is never printed
  });

  it('missing scopes: one line with insufficient_scope, every scope needed and the metadata URL, exit 1', async () => {
    const run = await runCli(['call', stub.url, 'admin', '--bearer', 'good'], { env: kNoEnv });
    expect(run.code).toBe(1);
    expect(run.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(run.stderr).toContain('403 insufficient_scope');
    expect(run.stderr).toContain(`needs scope ${kAdminScopes}`);
    expect(run.stderr).toContain(stub.metadata);
  });
});

describe('sluice list with a bearer token', () => {
  it('lists with --bearer; without a token it is the 401 line, exit 1', async () => {
    const ok = await runCli(['list', stub.url, '--bearer', 'good'], { env: kNoEnv });
    expect(ok.code).toBe(0);
    expect(ok.stdout).toContain('echo');
    for (const request of stub.seen) expect(request.authorization).toBe('Bearer good');
    const refused = await runCli(['list', stub.url], { env: kNoEnv });
    expect(refused.code).toBe(1);
    expect(refused.stderr.trimEnd().split('\n')).toHaveLength(1);
    expect(refused.stderr).toContain(stub.metadata);
  });
});

describe('--bearer usage errors (exit 2)', () => {
  it.each([
    [['call', 'URL', 'echo', '--bearer', 'Bearer abc'], '--bearer must be a token'],
    [['call', 'URL', 'echo', '--bearer', ''], '--bearer must be a token'],
    [['call', '--stdio', 'true', 'echo', '--bearer', 'abc'], '--bearer goes with a URL'],
    [['serve', '--bearer', 'abc'], '--bearer goes with call and list only'],
  ])('%j', async (args, message) => {
    const run = await runCli(args.map((a) => (a === 'URL' ? stub.url : a)), { env: kNoEnv });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(stub.seen).toEqual([]);
  });

  it('a SLUICE_BEARER_TOKEN with a space is refused by name', async () => {
    const run = await runCli(['call', stub.url, 'echo'], { env: { SLUICE_BEARER_TOKEN: 'two words' } });
    expect(run.code).toBe(2);
    expect(run.stderr).toContain('SLUICE_BEARER_TOKEN must be a token');
  });

  it('--help documents --bearer, SLUICE_BEARER_TOKEN and the exit code', async () => {
    const run = await runCli(['--help']);
    expect(run.stdout).toContain('--bearer <token>');
    expect(run.stdout).toContain('SLUICE_BEARER_TOKEN');
    expect(run.stdout).toMatch(/insufficient_scope[\s\S]*exit 1/);
  });
});
