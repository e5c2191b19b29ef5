// The benchmark scripts' command lines, run as a user runs them (node dist/bench/NAME.js …): a
// mistyped option or a bad value ends the script at once with exit code 2 and says why, before any
// server, wrk run or result file; --help prints the usage and exits 0. A script that ignored the
// option would start its bench instead: the time-out below then fails the case.
import { readdirSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { runScript } from '../cli/helpers.js';
import type { Run } from '../cli/helpers.js';

const kRoot = join(import.meta.dirname, '..', '..');
const kDist = join(kRoot, 'dist', 'bench');
const kResults = join(kRoot, 'bench', 'results');

/** Every script under bench/ that is run, not imported (legacy-schema-check.ts is a module). */
const kScripts = ['async-ab', 'auth-verify', 'cluster', 'cluster-codec', 'endpoint', 'http', 'loadgen', 'long-poll-memory', 'node-lines', 'otel-ab', 'profile', 'registry', 'slow-readers', 'soak', 'startup', 'tasks', 'validation'];

/** Runs a built bench script; one that ignored the option and started its bench fails the case at 15 s. */
function run(script: string, args: string[]): Promise<Run> {
  return runScript(join(kDist, `${script}.js`), args, { cwd: kRoot, timeoutMs: 15_000 });
}

/** Name → modification time of every file in bench/results/: a refused run writes none. */
function resultTimes(): Map<string, number> {
  return new Map(readdirSync(kResults).map((f) => [f, statSync(join(kResults, f)).mtimeMs]));
}

describe('the bench scripts\' command lines', () => {
  it('every script is listed here (a new one gets its options declared and checked)', () => {
    const built = readdirSync(join(kRoot, 'bench')).filter((f) => f.endsWith('.ts') && f !== 'legacy-schema-check.ts').map((f) => f.slice(0, -3)).sort();
    expect(built).toEqual([...kScripts].sort());
  });

  it.each(kScripts)('%s: an unknown option is refused with exit code 2 and its name, --help exits 0 with the usage', async (script) => {
    const before = resultTimes();
    const bad = await run(script, ['--no-such-option', '3']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/unknown (option|argument) '--no-such-option'/i);
    const help = await run(script, ['--help']);
    expect(help.code).toBe(0);
    expect(help.stdout).toMatch(/^usage: /i);
    expect(resultTimes()).toEqual(before);
  });

  it.each([
    ['endpoint', ['--reps', '0'], "--reps needs a positive integer, not '0'"],
    ['endpoint', ['--requests', 'lots'], "--requests needs a positive integer, not 'lots'"],
    ['async-ab', ['--seconds', 'x'], "--seconds needs a positive number, not 'x'"],
    ['node-lines', ['--lines', '20'], "--lines takes 22 and 24, not '20'"],
    ['node-lines', ['--reps'], "Option '--reps <value>' argument missing"],
    ['http', ['--only', 'S9'], '--only takes scenarios among S0, S1, S2, S3, S4, S6, S7, S8'],
    ['otel-ab', ['--processor', 'eager'], "--processor must be one of batch, simple, not 'eager'"],
    ['profile', ['--node', '20'], "--node must be one of 22, 24, not '20'"],
    ['slow-readers', ['--flood-mode', 'gentle'], "--flood-mode must be one of burst, tight, not 'gentle'"],
    ['soak', ['stray'], "Unexpected argument 'stray'"],
  ])('%s %j: refused with exit code 2 before anything runs', async (script, args, message) => {
    const bad = await run(script, args);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain(message);
  });

  it('--help lists every option with its default', async () => {
    const help = await run('node-lines', ['--help']);
    for (const line of ['--reps <n>', '[default: 3]', '--lines <value>', '[default: 22,24]', '--no-uws', '--out <value>', '--help']) expect(help.stdout).toContain(line);
  });
});
