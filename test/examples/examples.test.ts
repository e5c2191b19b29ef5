/**
 * Runs every example under examples/ exactly as its README says (see test/helpers/readme.ts for the
 * README convention): `npm install` in the example's folder (sluice comes from the repository root
 * through `file:../..`, so the root must be built first: `npm test` builds it), `npm run build`,
 * the server, and the calls with the expectations written in the README.
 */
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import { basename, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { checkFiles, exampleDirs, parseBlocks, parseCommands, parseExpectation, runReadme } from '../helpers/readme.js';
import { scratchDir } from '../helpers/scratch.js';

const examplesDir = fileURLToPath(new URL('../../examples/', import.meta.url));
const examples = exampleDirs(examplesDir);
/** What one command may take; one example takes 12–26 s here (npm install is most of it). */
const kCommandTimeoutMs = 60_000;
const kExampleTimeoutMs = 90_000;

describe('the README convention', () => {
  it('parses file, run, serve and call blocks with their expectations', () => {
    const blocks = parseBlocks([
      '# Title', '', '```ts file=src/a.ts', 'export {};', '```', '', '````md', '```sh run', 'not a block', '```', '````',
      '```sh run', '# a comment', 'npm install', 'echo a \\', '  b', '```',
      '```sh serve', 'npx sluice serve', '```',
      '```sh call', '# expect: exit 1, output contains "a, \\"b\\""', 'false', 'true', '```',
      '```json', '{}', '```',
    ].join('\n'));
    expect(blocks.map((b) => b.kind)).toEqual(['file', 'prose', 'run', 'serve', 'call', 'prose']);
    expect(blocks[0]).toMatchObject({ lang: 'ts', attrs: { file: 'src/a.ts' }, body: 'export {};\n', line: 3 });
    expect(parseCommands(blocks[2]).map((c) => c.command)).toEqual(['npm install', 'echo a b']);
    expect(parseCommands(blocks[4])).toEqual([
      { command: 'false', expect: { exit: 1, contains: ['a, "b"'] }, line: 23 },
      { command: 'true', expect: { exit: 0, contains: [] }, line: 24 },
    ]);
    expect(parseExpectation('output contains "x"')).toEqual({ exit: 0, contains: ['x'] });
    expect(() => parseExpectation('exits 0')).toThrow(/cannot parse/);
    expect(() => parseExpectation('exit 0 output contains "x"')).toThrow(/cannot parse/);
  });

  it('file blocks: a file that differs from its block is reported; `create` writes the file', () => {
    const dir = scratchDir('sluice-readme-');
    mkdirSync(join(dir, 'src'));
    writeFileSync(join(dir, 'src', 'same.ts'), 'export const a = 1;\n');
    writeFileSync(join(dir, 'src', 'drifted.ts'), 'export const b = 3;\n');
    writeFileSync(join(dir, 'README.md'), [
      '```ts file=src/same.ts', 'export const a = 1;', '```',
      '```ts file=src/drifted.ts', 'export const b = 2;', '```',
      '```ts file=src/missing.ts', '```',
      '```ts file=src/new/made.ts create', 'export const c = 3;', '```',
    ].join('\n'));
    expect(checkFiles(join(dir, 'README.md'))).toEqual([
      'src/drifted.ts (README line 4): differs from the README\'s block',
      'src/missing.ts (README line 7): no such file',
    ]);
    expect(readFileSync(join(dir, 'src', 'new', 'made.ts'), 'utf8')).toBe('export const c = 3;\n');
  });

  it('runs a README: serve, calls with expectations, SIGTERM to the server; failures are reported', async () => {
    const dir = scratchDir('sluice-readme-');
    const server = `node -e "console.error('fake: serving'); process.on('SIGTERM', () => { console.error('bye'); process.exit(0); }); setInterval(() => {}, 1000)"`;
    const write = (call: string[]) => writeFileSync(join(dir, 'README.md'), [
      '```sh run', 'echo made > made.txt', '```', '```sh serve', server, '```', '```sh call', ...call, '```',
    ].join('\n'));
    write(['# expect: exit 0, output contains "made"', 'cat made.txt', '# expect: exit 3', 'exit 3']);
    const log: string[] = [];
    await runReadme(join(dir, 'README.md'), { log: (l) => log.push(l) });
    expect(log.at(-1)).toMatch(/^stopped .*: exit 0$/);
    write(['# expect: exit 0, output contains "nope"', 'echo yes']);
    await expect(runReadme(join(dir, 'README.md'))).rejects.toThrow(/output lacks "nope"/);
    write(['false']);
    await expect(runReadme(join(dir, 'README.md'))).rejects.toThrow(/exited 1, expected 0/);
  });
});

describe('examples', () => {
  it('there are examples to run', () => {
    expect(examples.map((d) => basename(d))).toEqual(expect.arrayContaining(['quickstart', 'cpu-pool', 'resources-prompts', 'client-abort', 'stdio-desktop']));
  });

  // Side by side (the project's maxConcurrency): each example has its own folder and port, and
  // its own clean-up (onTestFinished), so one example's end cannot stop another's server.
  for (const dir of examples) {
    it.concurrent(`${basename(dir)}: runs as its README says`, async ({ onTestFinished }) => {
      const started = Date.now();
      const log: string[] = [];
      try {
        await runReadme(join(dir, 'README.md'), {
          commandTimeoutMs: kCommandTimeoutMs,
          log: (line) => log.push(line),
          onServer: (server) => onTestFinished(() => { server.kill(); }),
        });
      } catch (error) {
        throw new Error(`${(error as Error).message}\n--- steps so far:\n${log.join('\n')}`);
      }
      process.stderr.write(`examples/${basename(dir)}: ${Date.now() - started} ms\n  ${log.join('\n  ')}\n`);
    }, kExampleTimeoutMs);
  }
});
