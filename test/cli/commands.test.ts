import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { endpointUrl, renderResult } from '../../src/cli/client-commands.js';
import { describeServed, serveOptions } from '../../src/cli/serve.js';
import { startFixture } from '../loadgen/helpers.js';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';
import { kBin, kSluiceUrl, runCli, serveCli, tempDir } from './helpers.js';

let running: TestServer;
let hostPort: string;
beforeAll(async () => {
  running = await startServer();
  hostPort = `127.0.0.1:${running.address.port}`;
});
afterAll(async () => {
  await running.close();
});

describe('sluice call', () => {
  it('takes host:port (http:// and /mcp added) and prints text content as text', async () => {
    expect(await runCli(['call', hostPort, 'echo', '{"text":"hi"}'])).toMatchObject({ code: 0, stdout: 'hi\n' });
    expect(await runCli(['call', `http://${hostPort}`, 'echo', '{"text":"scheme, no path"}'])).toMatchObject({ code: 0, stdout: 'scheme, no path\n' });
  });

  it('prints structured content as indented JSON, without resultType or _meta; --json prints the raw result', async () => {
    const readable = await runCli(['call', hostPort, 'whoami']);
    expect(readable.code).toBe(0);
    expect(readable.stdout).toMatch(/^\{\n {2}"thread": \d+\n\}\n$/);
    const raw = await runCli(['call', '--json', hostPort, 'whoami']);
    expect(raw.code).toBe(0);
    const result = JSON.parse(raw.stdout) as Record<string, unknown>;
    expect(result.structuredContent).toMatchObject({ thread: expect.any(Number) });
    expect(result.content).toBeDefined();
  });

  it('an unknown tool: the error lists the tools that exist', async () => {
    const run = await runCli(['call', hostPort, 'ecco', '{"text":"x"}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('has no tool named ecco');
    expect(run.stderr).toMatch(/Its tools: echo, whoami, block/);
  });

  it('a 404 hints at /mcp', async () => {
    const run = await runCli(['call', `http://${hostPort}/api`, 'echo', '{"text":"x"}']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('answered 404');
    expect(run.stderr).toContain(`try http://${hostPort}/mcp`);
  });

  it('a refused connection says so', async () => {
    const run = await runCli(['call', '127.0.0.1:1', 'echo']);
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('connection refused');
  });

  it.each([
    [['--timeout', 'abc'], '--timeout must be a whole number'],
    [['--timeout', '0'], '--timeout must be a whole number'],
    [['--timeout', '1.5'], '--timeout must be a whole number'],
    [['--era', 'bogus'], '--era must be one of auto, legacy, modern'],
  ])('%j is a usage error (exit 2)', async (flags, message) => {
    const run = await runCli(['call', hostPort, 'echo', '{"text":"x"}', ...flags]);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
    expect(run.stdout).toBe('');
  });

  it('arguments that are not a JSON object are a usage error', async () => {
    expect((await runCli(['call', hostPort, 'echo', '[1]'])).code).toBe(2);
    expect((await runCli(['call', hostPort, 'echo', '{oops'])).code).toBe(2);
  });
});

describe('sluice call | head (the reader closes the pipe early)', () => {
  it('ends with exit 0 and no stack trace, for the text and the --json output', async () => {
    const dir = tempDir({ 'tools.mjs': `import { defineTool } from '${kSluiceUrl}';\nexport const big = defineTool({ name: 'big', description: 'd', inputSchema: { type: 'object', properties: {} }, handler: () => 'x'.repeat(4_000_000) });\n` });
    const serving = await serveCli(['--port', '0', '--workers', '1', '--tools', 'tools.mjs'], { cwd: dir });
    try {
      for (const extra of [[], ['--json']]) {
        const child = spawn(process.execPath, [kBin, 'call', serving.url, 'big', ...extra], { stdio: ['ignore', 'pipe', 'pipe'] });
        let stderr = '';
        child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
        child.stdout.once('data', () => child.stdout.destroy()); // as `| head -c 100` does
        const [code] = (await once(child, 'exit')) as [number | null];
        expect({ extra, code, stderr }).toEqual({ extra, code: 0, stderr: '' });
      }
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });
});

describe('sluice list', () => {
  it('lists tools, resources and prompts of a URL', async () => {
    const run = await runCli(['list', hostPort]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Tools \(\d+\):\n {2}echo +Returns its text\.\n/);
    expect(run.stdout).toMatch(/\nResources \(1\):\n {2}test:\/\/slow/);
    expect(run.stdout).toMatch(/\nPrompts \(1\):\n {2}slow_prompt .*\(arguments: record\)/);
  });

  it('--json prints the lists as JSON', async () => {
    const run = await runCli(['list', '--json', hostPort]);
    expect(run.code).toBe(0);
    const lists = JSON.parse(run.stdout) as Record<string, { name: string }[]>;
    expect(lists.tools!.map((t) => t.name)).toContain('echo');
    expect(lists.prompts!.map((p) => p.name)).toEqual(['slow_prompt']);
    expect(lists.resourceTemplates).toEqual([]);
  });

  it('lists a stdio server', async () => {
    const run = await runCli(['list', '--stdio', `${process.execPath} ${new URL('../../bin/sluice.js', import.meta.url).pathname} serve --stdio`]);
    expect(run.code).toBe(0);
    expect(run.stdout).toMatch(/^Tools \(3\):\n {2}echo .*\n {2}sleep .*\n {2}spin /);
  });

  it('needs a server', async () => {
    expect((await runCli(['list'])).code).toBe(2);
  });

  it('a server whose pages loop, or never end, is an error naming the method, not a list that repeats or stops without a word', async () => {
    const loop = await startFixture('bench-bad-servers.mjs', ['cursor-loop']);
    const endless = await startFixture('bench-bad-servers.mjs', ['endless-list']);
    try {
      for (const json of [[], ['--json']]) {
        const looped = await runCli(['list', ...json, loop.url]);
        expect(looped).toMatchObject({ code: 1, stdout: '' });
        expect(looped.stderr).toBe('sluice: the server\'s tools/list gave the cursor "1" a second time (page 4): its pages loop\n');
      }
      const long = await runCli(['list', endless.url]);
      expect(long).toMatchObject({ code: 1, stdout: '' });
      expect(long.stderr).toBe('sluice: the server\'s tools/list still had more after 1000 pages: stopped there rather than read a list with no end\n');
    } finally {
      await loop.stop();
      await endless.stop();
    }
  });

  it('a list that is not a list of named objects is an error saying which; names and descriptions cannot drive the terminal', async () => {
    const servers = await Promise.all(['list-string', 'list-null', 'list-escapes'].map((kind) => startFixture('bench-bad-servers.mjs', [kind])));
    try {
      const [string, nulled, escapes] = await Promise.all(servers.map((s) => runCli(['list', s.url])));
      expect(string).toMatchObject({ code: 1, stdout: '', stderr: 'sluice: the server\'s tools/list answered tools that is a string, not a list\n' });
      expect(nulled).toMatchObject({ code: 1, stdout: '', stderr: 'sluice: the server\'s tools/list: tools[1] is null, not an object\n' });
      expect(escapes.code).toBe(0);
      expect(escapes.stdout).toBe('Tools (1):\n  red\\u{1b}[31m  \\u{1b}]0;pwned\\u{7}desc \\u{202e}evil\n');
      // Nor can the message of a JSON-RPC error the server sends.
      const failed = await runCli(['call', servers[2]!.url, 'red\u001b[31m']);
      expect(failed).toMatchObject({ code: 1, stdout: '', stderr: 'sluice: the server refused: failed \\u{1b}]0;pwned\\u{7} here (JSON-RPC error -32603)\n' });
      // --json is for programs: the server's strings, as JSON escapes them.
      const json = await runCli(['list', '--json', servers[2]!.url]);
      expect((JSON.parse(json.stdout) as { tools: { name: string }[] }).tools[0]!.name).toBe('red\u001b[31m');
    } finally {
      await Promise.all(servers.map((s) => s.stop()));
    }
  });
});

describe('sluice call: a tool\'s text and progress cannot drive the terminal', () => {
  const kEscaped = 'first\r\n\u001b]52;c;cHduZWQ=\u0007second\rhidden\t\u001b]0;pwned\u0007\u202eevil';
  let server: Awaited<ReturnType<typeof startFixture>>;
  beforeAll(async () => {
    server = await startFixture('bench-bad-servers.mjs', ['call-escapes']);
  });
  afterAll(async () => {
    await server.stop();
  });

  it('piped: the text as sent, byte for byte; progress messages escaped, one line each', async () => {
    const run = await runCli(['call', server.url, 'echo']);
    expect(run).toMatchObject({ code: 0, stdout: `${kEscaped}\n`, stderr: 'progress 1 step \\u{1b}]0;pwned\\u{7}\\u{a}one\n' });
  });

  it('on a terminal (a pseudo-terminal from script(1)): control characters but newline and tab as escapes', async () => {
    const child = spawn('script', ['-qec', `${process.execPath} ${kBin} call ${server.url} echo`, '/dev/null'], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    const [code] = (await once(child, 'close')) as [number];
    expect(code).toBe(0);
    // The terminal itself turns each newline into CRLF.
    const seen = out.replace(/\r\n/g, '\n');
    expect(seen).toContain('first\n\\u{1b}]52;c;cHduZWQ=\\u{7}second\\u{d}hidden\t\\u{1b}]0;pwned\\u{7}\\u{202e}evil\n');
    expect(seen).toContain('progress 1 step \\u{1b}]0;pwned\\u{7}\\u{a}one\n');
    expect(seen).not.toMatch(/[\u001b\u0007\r\u202e]/);
  });
});

describe('sluice --version and usage', () => {
  it('--version prints the version in package.json', async () => {
    const pkg = JSON.parse(readFileSync(new URL('../../package.json', import.meta.url), 'utf8')) as { version: string };
    expect(await runCli(['--version'])).toMatchObject({ code: 0, stdout: `sluice ${pkg.version}\n` });
  });

  it('--help names the new commands and flags', async () => {
    const run = await runCli(['--help']);
    expect(run.code).toBe(0);
    for (const flag of ['sluice list', '--version', '--json', '--log-level', '--cancel-on-disconnect', '--cors-origin', '--shutdown-grace']) expect(run.stdout).toContain(flag);
  });

  it.each([
    [['serve', '--log-level', 'loud'], '--log-level must be one of debug, info, warn, error'],
    [['serve', '--shutdown-grace', 'soon'], '--shutdown-grace must be a whole number'],
    [['serve', '--port', 'http'], '--port must be a whole number from 0 to 65535'],
    [['serve', '--http', 'fast'], '--http must be one of auto, uws, node'],
    [['serve', 'tools.js'], 'serve takes no arguments, got tools.js (to serve a tools module: --tools tools.js)'],
    [['serev'], 'unknown command serev'],
    [['serve', '--bogus'], "Unknown option '--bogus'"],
  ])('%j is a usage error (exit 2)', async (args, message) => {
    const run = await runCli(args);
    expect(run.code).toBe(2);
    expect(run.stderr).toContain(message);
  });
});

describe('sluice serve', () => {
  it('takes --log-level, --cancel-on-disconnect, --cors-origin (repeated) and --shutdown-grace; the start-up line lists what is served', async () => {
    const serving = await serveCli(['--port', '0', '--workers', '1', '--log-level', 'info', '--cancel-on-disconnect', '--cors-origin', 'https://a.example', '--cors-origin', 'https://b.example', '--shutdown-grace', '100']);
    try {
      expect(serving.stderr()).toContain('  tools (3): echo, sleep, spin\n');
      expect(await runCli(['call', serving.url, 'echo', '{"text":"up"}'])).toMatchObject({ code: 0, stdout: 'up\n' });
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('a closed stderr (its reader gone) does not end the server: every debug line meets EPIPE, every call is served, SIGTERM exits 0', async () => {
    const serving = await serveCli(['--port', '0', '--workers', '2', '--log-level', 'debug']);
    try {
      serving.child.stderr.destroy();
      serving.child.stdout.destroy();
      for (let i = 0; i < 4; i++) expect(await runCli(['call', serving.url, 'echo', `{"text":"up ${i}"}`])).toMatchObject({ code: 0, stdout: `up ${i}\n` });
      expect(serving.child.exitCode).toBe(null);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('many tools: the start-up line is truncated with a count', async () => {
    const tools = Array.from({ length: 40 }, (_, i) => `export const t${i} = defineTool({ name: 'tool_number_${i}', description: 'd', inputSchema: { type: 'object', properties: {} }, handler: () => '${i}' });`);
    const dir = tempDir({ 'tools.mjs': `import { defineTool } from '${kSluiceUrl}';\n${tools.join('\n')}\n` });
    const serving = await serveCli(['--port', '0', '--workers', '1', '--tools', 'tools.mjs'], { cwd: dir });
    try {
      const line = /\n {2}tools \(40\): (.*)\n/.exec(serving.stderr())?.[1];
      expect(line).toBeDefined();
      expect(line!.length).toBeLessThan(140);
      expect(line).toMatch(/^tool_number_0, tool_number_1, .*, and \d+ more$/);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });
});

describe('CLI helpers', () => {
  it('serveOptions maps the serve flags to server options', () => {
    const options = serveOptions({
      tools: 'test/fixtures/server-tools.mjs', port: '0', workers: '2', 'log-level': 'debug', 'cancel-on-disconnect': true,
      'cors-origin': ['https://a.example', 'https://b.example'], 'shutdown-grace': '250', 'no-sessions': true,
    });
    expect(options).toMatchObject({
      tools: new URL('../../test/fixtures/server-tools.mjs', import.meta.url).href,
      port: 0, workers: 2, logLevel: 'debug', cancelOnDisconnect: true, sessions: false,
      cors: { origins: ['https://a.example', 'https://b.example'] }, shutdownGraceMs: 250,
    });
    expect(serveOptions({})).toMatchObject({ logLevel: 'warn', cancelOnDisconnect: false, port: 3000 });
    expect(serveOptions({}).cors).toBeUndefined();
    expect(serveOptions({}).shutdownGraceMs).toBeUndefined();
  });

  it('endpointUrl adds what is missing and keeps what is given', () => {
    expect(endpointUrl('127.0.0.1:3000').href).toBe('http://127.0.0.1:3000/mcp');
    expect(endpointUrl('localhost:3000').href).toBe('http://localhost:3000/mcp');
    expect(endpointUrl('http://127.0.0.1:3000/').href).toBe('http://127.0.0.1:3000/mcp');
    expect(endpointUrl('https://example.com/api/mcp').href).toBe('https://example.com/api/mcp');
    expect(endpointUrl('[::1]:8080').href).toBe('http://[::1]:8080/mcp');
    expect(() => endpointUrl('ftp://example.com')).toThrow(/http/);
  });

  it('renderResult: text as text, structured content once as JSON, other content summarised', () => {
    expect(renderResult({ content: [{ type: 'text', text: 'a' }, { type: 'text', text: 'b\n' }], _meta: { x: 1 }, resultType: 'complete' })).toBe('a\nb\n');
    expect(renderResult({ content: [{ type: 'text', text: '{"n":1}' }], structuredContent: { n: 1 } })).toBe('{\n  "n": 1\n}\n');
    expect(renderResult({ content: [{ type: 'image', mimeType: 'image/png', data: 'AAAA' }, { type: 'resource_link', uri: 'x://y', name: 'y' }] })).toBe('[image image/png, 3 bytes]\n[resource x://y (y)]\n');
  });

  it('renderResult: content that is not a list of blocks is invalid_response, not nothing printed or a TypeError', () => {
    expect(() => renderResult({ content: 'hello' })).toThrow(expect.objectContaining({ code: 'invalid_response', message: "the server's tools/call result has content that is a string, not a list" }));
    expect(() => renderResult({ content: [{ type: 'text', text: 'a' }, null] })).toThrow(expect.objectContaining({ code: 'invalid_response', message: "the server's tools/call result: content[1] is null, not a content block" }));
    expect(renderResult({ structuredContent: { n: 1 } })).toBe('{\n  "n": 1\n}\n'); // no content at all: what there is
  });

  it('describeServed names what is served and counts the rest past 100 characters', () => {
    expect(describeServed({ tools: ['a', 'b'], resources: [], prompts: ['p'] })).toBe('  tools (2): a, b\n  prompts (1): p\n');
    expect(describeServed({ tools: [], resources: ['r://x'], prompts: [] })).toBe('  tools (0): none\n  resources (1): r://x\n');
    const many = describeServed({ tools: Array.from({ length: 100 }, (_, i) => `name${i}`), resources: [], prompts: [] });
    expect(many).toMatch(/^ {2}tools \(100\): name0, name1, .*, and \d+ more\n$/);
  });
});
