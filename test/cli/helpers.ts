import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { once } from 'node:events';
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { until } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

export const kBin = fileURLToPath(new URL('../../bin/sluice.js', import.meta.url));
/** The built package, for tools modules written outside it (they cannot import 'sluice' by name). */
export const kSluiceUrl = pathToFileURL(fileURLToPath(new URL('../../dist/src/index.js', import.meta.url))).href;

export interface Run {
  code: number | null;
  stdout: string;
  stderr: string;
}

export interface RunOptions {
  cwd?: string;
  /** The node binary (default: the one running the tests). */
  node?: string;
  /** Node options before the script (e.g. --import). */
  execArgv?: readonly string[];
  /** Environment variables added to (or, when undefined, removed from) the test's own. */
  env?: Record<string, string | undefined>;
  /** Kill the child (SIGKILL) and reject if it has not exited within this many ms. */
  timeoutMs?: number;
}

/** The child's environment: the test's own with `env` applied. */
function childEnv(env: Record<string, string | undefined> | undefined): NodeJS.ProcessEnv | undefined {
  if (env === undefined) return undefined;
  const merged: NodeJS.ProcessEnv = { ...process.env };
  for (const [name, value] of Object.entries(env)) {
    if (value === undefined) delete merged[name];
    else merged[name] = value;
  }
  return merged;
}

/** Runs `sluice <args>` to completion. */
export function runCli(args: readonly string[], options: RunOptions = {}): Promise<Run> {
  return runScript(kBin, args, options);
}

/** Runs `node <script> <args>` to completion. */
export async function runScript(script: string, args: readonly string[], options: RunOptions = {}): Promise<Run> {
  const child = spawn(options.node ?? process.execPath, [...(options.execArgv ?? []), script, ...args], { cwd: options.cwd, env: childEnv(options.env), stdio: ['ignore', 'pipe', 'pipe'] });
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (c: Buffer) => { stdout += c.toString(); });
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  let timedOut = false;
  const timer = options.timeoutMs === undefined ? undefined : setTimeout(() => { timedOut = true; child.kill('SIGKILL'); }, options.timeoutMs);
  try {
    const [code] = (await once(child, 'close')) as [number | null];
    if (timedOut) throw new Error(`${script} ${args.join(' ')} still running after ${options.timeoutMs} ms (stderr: ${stderr.slice(0, 300)})`);
    return { code, stdout, stderr };
  } finally {
    clearTimeout(timer);
  }
}

export interface Serving {
  readonly url: string;
  readonly child: ChildProcessWithoutNullStreams;
  stderr(): string;
  /** SIGTERM, then the exit code. */
  stop(): Promise<number | null>;
}

/** Starts `sluice serve <args>` and waits for its start-up line. */
export async function serveCli(args: readonly string[], options: RunOptions = {}): Promise<Serving> {
  const child = spawn(options.node ?? process.execPath, [...(options.execArgv ?? []), kBin, 'serve', ...args], { cwd: options.cwd });
  let stderr = '';
  child.stderr.on('data', (c: Buffer) => { stderr += c.toString(); });
  child.stdout.resume();
  const exited = once(child, 'exit');
  try {
    await until(() => /serving MCP at \S+.*\n/.test(stderr) || child.exitCode !== null, 30_000, 'sluice serve to start');
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}: ${stderr}`);
  }
  const url = /serving MCP at (\S+)/.exec(stderr)?.[1];
  if (url === undefined) throw new Error(`sluice serve did not start: ${stderr}`);
  return {
    url,
    child,
    stderr: () => stderr,
    stop: async () => {
      if (child.exitCode === null) child.kill('SIGTERM');
      const [code] = (await exited) as [number | null];
      return code;
    },
  };
}

/** A fresh directory holding the given files. */
export function tempDir(files: Record<string, string>): string {
  const dir = scratchDir('sluice-cli-');
  for (const [name, text] of Object.entries(files)) writeFileSync(join(dir, name), text);
  return dir;
}
