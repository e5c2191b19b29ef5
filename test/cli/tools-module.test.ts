import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createServer } from '../../src/index.js';
import { Client, HttpClientTransport } from '../../src/client/index.js';
import { SluiceError } from '../../src/errors.js';
import { catalogDifference } from '../../src/catalog/catalog.js';
import { kSluiceUrl, runCli, serveCli, tempDir } from './helpers.js';

/** A tools module that serves one tool, `hello`. */
const kGood = `import { defineTool } from '${kSluiceUrl}';
export const hello = defineTool({ name: 'hello', description: 'Greets.', inputSchema: { type: 'object', properties: {} }, handler: () => 'hello' });
export default [hello];
`;

/** Every way a tools module fails to load, and what the message must point at (`<dir>` is its directory). */
const kBroken: { what: string; file: string; files: Record<string, string>; expect: string[] }[] = [
  {
    what: 'a syntax error',
    file: 'tools.mjs',
    files: { 'tools.mjs': 'export const a = 1;\nconst = 5;\n' },
    expect: ['<dir>/tools.mjs:2', 'SyntaxError', "Unexpected token '='"],
  },
  {
    what: 'a syntax error in a module it imports',
    file: 'tools.mjs',
    files: { 'tools.mjs': "import './helper.mjs';\nexport default [];\n", 'helper.mjs': '\n\nfunction (\n' },
    expect: ['<dir>/helper.mjs:3', 'SyntaxError'],
  },
  {
    what: 'a throw at import',
    file: 'tools.mjs',
    files: { 'tools.mjs': "export const a = 1;\n\nthrow new Error('no database configured');\n" },
    expect: ['<dir>/tools.mjs:3:7', 'no database configured'],
  },
  {
    what: 'a missing package',
    file: 'tools.mjs',
    files: { 'tools.mjs': `import { defineTool } from '${kSluiceUrl}';\nimport missing from 'no-such-package-anywhere';\nexport default [missing];\n` },
    expect: ['<dir>/tools.mjs:2', "Cannot find package 'no-such-package-anywhere'"],
  },
  {
    what: 'a missing named export',
    file: 'tools.mjs',
    files: { 'tools.mjs': "import { nothing } from './other.mjs';\nexport default [nothing];\n", 'other.mjs': 'export const something = 1;\n' },
    expect: ['<dir>/tools.mjs:1', "does not provide an export named 'nothing'"],
  },
  {
    what: 'no Sluice definitions',
    file: 'tools.mjs',
    files: { 'tools.mjs': 'export const helper = () => 1;\nexport const config = { port: 1 };\nexport default [1, 2];\n' },
    expect: ['<dir>/tools.mjs exports no Sluice tools, resources or prompts', 'default (an array of 2 with no definition in it)', 'helper (a function)', 'config (an object)', 'defineTool'],
  },
];

describe('a tools module that fails to load', () => {
  it.each(kBroken)('$what: `sluice serve` names the file and line and exits 1, never "listen_failed"', async ({ file, files, expect: wanted }) => {
    const dir = tempDir(files);
    const run = await runCli(['serve', '--port', '0', '--tools', file], { cwd: dir }); // relative: resolved against the cwd
    expect(run.code).toBe(1);
    for (const text of wanted) expect(run.stderr).toContain(text.replace('<dir>', dir));
    expect(run.stderr).not.toContain('HTTP worker failed to start');
    expect(run.stderr).not.toContain('listen_failed');
  });

  it.each(kBroken.slice(0, 3))('$what: createServer(...).listen() rejects with code tools_module_failed', async ({ file, files, expect: wanted }) => {
    const dir = tempDir(files);
    const server = createServer({ tools: join(dir, file), port: 0, workers: 2 }, { log: () => {} });
    const error = await server.listen().then(() => undefined, (e: unknown) => e);
    await server.close();
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('tools_module_failed');
    expect((error as SluiceError).message).toContain(wanted[0]!.replace('<dir>', dir));
  });

  it.each(kBroken.filter((b) => b.what !== 'a missing package'))('$what: `sluice serve --stdio` says the same and exits 1', async ({ file, files, expect: wanted }) => {
    const dir = tempDir(files);
    const run = await runCli(['serve', '--stdio', '--tools', join(dir, file)]);
    expect(run.code).toBe(1);
    for (const text of wanted) expect(run.stderr).toContain(text.replace('<dir>', dir));
  });

  it('a relative --tools path that does not exist: the resolved path and the directory it was resolved against', async () => {
    const dir = tempDir({});
    const run = await runCli(['serve', '--port', '0', '--tools', './lib/tools.js'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${dir}/lib/tools.js does not exist`);
    expect(run.stderr).toContain(`current directory ${dir}`);
  });

  it('a relative --tools path resolves against the current directory', async () => {
    const dir = tempDir({ 'tools.mjs': kGood });
    const serving = await serveCli(['--port', '0', '--workers', '1', '--tools', 'tools.mjs'], { cwd: dir });
    try {
      expect(serving.stderr()).toContain('tools (1): hello');
      const run = await runCli(['call', serving.url, 'hello']);
      expect(run).toMatchObject({ code: 0, stdout: 'hello\n' });
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });
});

/** A tools module whose one tool is named after the thread importing it: each HTTP worker defines another. */
const kPerThread = `import { threadId } from 'node:worker_threads';
import { defineTool } from '${kSluiceUrl}';
export const mine = defineTool({ name: \`t\${threadId}\`, description: 'Named after its thread.', inputSchema: { type: 'object', properties: {} }, handler: () => 'hi' });
export const common = defineTool({ name: 'common', description: 'The same everywhere.', inputSchema: { type: 'object', properties: {} }, handler: () => 'hi' });
export default [common, mine];
`;

describe('a tools module that defines different things in different threads', () => {
  it('createServer(...).listen() with 2 HTTP workers rejects with tools_module_failed, naming the module and what differs', async () => {
    const dir = tempDir({ 'tools.mjs': kPerThread });
    const server = createServer({ tools: join(dir, 'tools.mjs'), port: 0, workers: 2 }, { log: () => {} });
    const error = await server.listen().then(() => undefined, (e: unknown) => e);
    await server.close();
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('tools_module_failed');
    const message = (error as SluiceError).message;
    expect(message).toContain(`the tools module ${join(dir, 'tools.mjs')} defines different things in different HTTP workers`);
    expect(message).toMatch(/\(tools: "t\d+" only in the first; "t\d+" only in the other\)/);
    expect(message).not.toContain('"common"');
  });

  it('`sluice serve --workers 2` says so and exits 1; with one worker the same module serves', async () => {
    const dir = tempDir({ 'tools.mjs': kPerThread });
    const run = await runCli(['serve', '--port', '0', '--workers', '2', '--tools', 'tools.mjs'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain('defines different things in different HTTP workers');
    expect(run.stderr).not.toContain('listen_failed');
    const serving = await serveCli(['--port', '0', '--workers', '1', '--tools', 'tools.mjs'], { cwd: dir });
    try {
      expect(serving.stderr()).toMatch(/tools \(2\): common, t\d+/);
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it('catalogDifference: the same names in the same order are no difference; another order, other names and long lists are said', () => {
    const names = (tools: string[], resources: string[] = [], prompts: string[] = []) => ({ tools, resources, prompts });
    expect(catalogDifference(names(['a', 'b'], ['r'], ['p']), names(['a', 'b'], ['r'], ['p']))).toBeUndefined();
    expect(catalogDifference(names(['a', 'b']), names(['b', 'a']))).toBe('tools: the same names in another order ("a", "b" against "b", "a")');
    expect(catalogDifference(names(['a']), names(['a'], [], ['p']))).toBe('prompts: "p" only in the other');
    expect(catalogDifference(names([], ['file:///x']), names([]))).toBe('resources: "file:///x" only in the first');
    const many = Array.from({ length: 8 }, (_, i) => `n${i}`);
    expect(catalogDifference(names(many), names([]))).toBe('tools: "n0", "n1", "n2", "n3", "n4" and 3 more only in the first');
    expect(catalogDifference(names(['a', 'x']), names(['a', 'y']))).toBe('tools: "x" only in the first; "y" only in the other');
    expect(catalogDifference(names(['a', 'x']), names(['a', 'y']), ['this one', 'that one'])).toBe('tools: "x" only in this one; "y" only in that one');
  });
});

/** piscina's own module, as the test's temporary tools modules import it: `isWorkerThread` is true in a pool thread only. */
const kPiscinaUrl = pathToFileURL(createRequire(import.meta.url).resolve('piscina')).href;
const kPoolTool = `export const heavy = defineTool({ name: 'heavy', description: 'Runs in a pool thread.', inputSchema: { type: 'object', properties: {} }, pool: true, handler: () => 'from the pool' });`;

describe('a tools module whose pool threads define something else, or cannot load it', () => {
  it('a pool thread that defines other tools: listen() rejects with tools_module_failed, naming the module, the thread and what differs', async () => {
    const dir = tempDir({ 'tools.mjs': kPerThread.replace('export default [common, mine];', `${kPoolTool}\nexport default [common, mine, heavy];`) });
    const logged: string[] = [];
    const server = createServer({ tools: join(dir, 'tools.mjs'), port: 0, workers: 1 }, { log: (_level, line) => logged.push(line) });
    const error = await server.listen().then(() => undefined, (e: unknown) => e);
    await server.close();
    expect(error).toBeInstanceOf(SluiceError);
    expect((error as SluiceError).code).toBe('tools_module_failed');
    const message = (error as SluiceError).message;
    expect(message).toMatch(new RegExp(`the tools module ${join(dir, 'tools.mjs')} defines different things in pool thread \\d+ than in the thread that serves its calls`));
    expect(message).toMatch(/\(tools: "t\d+" only in the serving thread; "t\d+" only in the pool thread\)/);
  });

  it('a tools module that throws in a pool thread only: `sluice serve` says where and why and exits 1; stdio too', async () => {
    const tools = `import { defineTool } from '${kSluiceUrl}';
import Piscina from '${kPiscinaUrl}';
const isWorkerThread = Piscina.isWorkerThread;
if (isWorkerThread) throw new Error('no database in a pool thread');
${kPoolTool}
export default [heavy];
`;
    const dir = tempDir({ 'tools.mjs': tools });
    const run = await runCli(['serve', '--port', '0', '--workers', '1', '--tools', 'tools.mjs'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toMatch(new RegExp(`the tools module ${join(dir, 'tools.mjs')} failed to load in pool thread \\d+: .*no database in a pool thread`));
    expect(run.stderr).not.toContain('listen_failed');
    const stdio = await runCli(['serve', '--stdio', '--tools', join(dir, 'tools.mjs')]);
    expect(stdio.code).toBe(1);
    expect(stdio.stderr).toContain('no database in a pool thread');
    expect(stdio.stderr).not.toContain('sluice: serving MCP'); // neither start-up line claims a server that is not serving
    expect(run.stderr).not.toContain('sluice: serving MCP');
  });

  it('a replacement pool thread that cannot load it is logged as an error, and the server serves on', async () => {
    // The first pool thread leaves a mark; a later one (after `hog`, which ignores its cancel, has its thread terminated) throws.
    const tools = `import { existsSync, writeFileSync } from 'node:fs';
import { defineTool } from '${kSluiceUrl}';
import Piscina from '${kPiscinaUrl}';
const isWorkerThread = Piscina.isWorkerThread;
const mark = new URL('./pool-started', import.meta.url);
if (isWorkerThread && existsSync(mark)) throw new Error('the second pool thread has no database');
if (isWorkerThread) writeFileSync(mark, '');
export const hog = defineTool({ name: 'hog', description: 'Ignores its cancel.', inputSchema: { type: 'object', properties: {} }, pool: true,
  handler: () => { const end = Date.now() + 10_000; while (Date.now() < end); return 'late'; } });
export const hello = defineTool({ name: 'hello', description: 'Inline.', inputSchema: { type: 'object', properties: {} }, handler: () => 'hello' });
export default [hog, hello];
`;
    const dir = tempDir({ 'tools.mjs': tools });
    const logged: string[] = [];
    const server = createServer({ tools: join(dir, 'tools.mjs'), port: 0, workers: 1, streamCancelTimeoutMs: 100 }, { log: (level, line) => logged.push(`${level} ${line}`) });
    const { url } = await server.listen();
    const client = new Client(new HttpClientTransport({ url }));
    try {
      await expect(client.callTool('hog', {}, { timeoutMs: 200 })).rejects.toThrow();
      const deadline = Date.now() + 20_000;
      while (!logged.some((l) => l.includes('a replacement pool thread')) && Date.now() < deadline) await new Promise((r) => setTimeout(r, 50));
      const line = logged.find((l) => l.includes('a replacement pool thread'));
      expect(line).toMatch(new RegExp(`^error sluice: a replacement pool thread: the tools module ${join(dir, 'tools.mjs')} failed to load in pool thread \\d+: .*the second pool thread has no database`));
      expect(await client.callTool('hello')).toMatchObject({ content: [{ type: 'text', text: 'hello' }] });
    } finally {
      await client.close();
      await server.close();
    }
  });
});

/** Erasable TypeScript only (what Node's type stripping runs): annotations, interfaces, `import type`. */
const kTypeScript = `import { defineTool } from '${kSluiceUrl}';
import type { Tool } from '${kSluiceUrl}';

interface Args { text: string }

export const shout: Tool = defineTool({
  name: 'shout',
  description: 'Upper-cases its text.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler: (args) => String((args as unknown as Args).text).toUpperCase(),
});

export const pooled: Tool = defineTool({
  name: 'pooled',
  description: 'Runs in a pool thread.',
  inputSchema: { type: 'object', properties: {} },
  pool: true,
  handler: (): string => 'from the pool',
});

export default [shout, pooled] satisfies Tool[];
`;

/**
 * A Node that strips types by default (≥ 22.18): the one running the tests, else the Node 22 that
 * CI installs into .ci/node-versions (before `npm test`) or the conformance suite's own.
 */
const [kMajor, kMinor] = process.versions.node.split('.').map(Number);
const kStripsTypes = kMajor > 23 || (kMajor === 23 && kMinor >= 6) || (kMajor === 22 && kMinor >= 18);
const node22 = kStripsTypes ? process.execPath : [
  fileURLToPath(new URL('../../.ci/node-versions/node_modules/node22/bin/node', import.meta.url)),
  fileURLToPath(new URL('../../conformance/node_modules/node/bin/node', import.meta.url)),
].find((path) => existsSync(path));

describe('tools written in TypeScript', () => {
  it.skipIf(node22 === undefined)(`Node 22 serves a .ts tools module with no build step (HTTP workers and the pool)${node22 === undefined ? ' — SKIPPED: no Node ≥ 22.18 here (npm ci in .ci/node-versions installs one)' : ''}`, async () => {
    const dir = tempDir({ 'tools.ts': kTypeScript });
    const serving = await serveCli(['--port', '0', '--tools', 'tools.ts', '--http', 'node'], { cwd: dir, node: node22! });
    try {
      expect(serving.stderr()).toContain('tools (2): shout, pooled');
      expect(await runCli(['call', serving.url, 'shout', '{"text":"hi"}'])).toMatchObject({ code: 0, stdout: 'HI\n' });
      expect(await runCli(['call', serving.url, 'pooled'])).toMatchObject({ code: 0, stdout: 'from the pool\n' });
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });

  it.skipIf(kStripsTypes)(`Node 20 cannot load it: the error says what to do, and the exit code is 1${kStripsTypes ? ` — SKIPPED: Node ${process.versions.node} loads TypeScript itself` : ''}`, async () => {
    const dir = tempDir({ 'tools.ts': kTypeScript });
    const run = await runCli(['serve', '--port', '0', '--tools', 'tools.ts'], { cwd: dir });
    expect(run.code).toBe(1);
    expect(run.stderr).toContain(`${dir}/tools.ts`);
    expect(run.stderr).toContain(`Node ${process.versions.node} cannot load TypeScript`);
    expect(run.stderr).toContain('node --import tsx');
    expect(run.stderr).toContain('Node >= 22.18');
    const stdio = await runCli(['serve', '--stdio', '--tools', join(dir, 'tools.ts')]);
    expect(stdio.code).toBe(1);
    expect(stdio.stderr).toContain('cannot load TypeScript');
  });

  it('a loader given at start (as `node --import tsx` is) reaches the HTTP workers and the pool threads', async () => {
    // ts-register.mjs compiles TypeScript with the TypeScript compiler, so this runs on any Node,
    // and non-erasable syntax (an enum) proves the loader did the work, not Node's type stripping.
    const withEnum = kTypeScript.replace('export default [shout, pooled]', `enum Mode { Loud = 'LOUD' }
export const mode: Tool = defineTool({ name: 'mode', description: 'An enum, in the pool.', inputSchema: { type: 'object', properties: {} }, pool: true, handler: (): string => Mode.Loud });

export default [shout, pooled, mode]`);
    const dir = tempDir({ 'tools.ts': withEnum });
    const register = fileURLToPath(new URL('../fixtures/ts-register.mjs', import.meta.url));
    const serving = await serveCli(['--port', '0', '--workers', '2', '--tools', 'tools.ts'], { cwd: dir, execArgv: ['--import', register] });
    try {
      expect(await runCli(['call', serving.url, 'shout', '{"text":"workers"}'])).toMatchObject({ code: 0, stdout: 'WORKERS\n' });
      expect(await runCli(['call', serving.url, 'mode'])).toMatchObject({ code: 0, stdout: 'LOUD\n' });
    } finally {
      expect(await serving.stop()).toBe(0);
    }
  });
});
