/** Helpers of the `sluice bench` tests: the CLI run with --json, fixture servers in their own processes. */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { runCli } from '../cli/helpers.js';
import type { Run } from '../cli/helpers.js';
import { until } from '../helpers/server.js';
import { scratchDir } from '../helpers/scratch.js';

export const kFixtures = fileURLToPath(new URL('../fixtures/', import.meta.url));

/** `sluice bench <args> --json`: the exit code, the parsed document (when there is one), stderr. */
export async function benchJson(args: readonly string[]): Promise<Run & { json: Record<string, any> | undefined }> {
  const run = await runCli(['bench', ...args.slice(0, idx(args)), '--json', ...args.slice(idx(args))]);
  let json: Record<string, any> | undefined;
  try { json = JSON.parse(run.stdout) as Record<string, any>; } catch { json = undefined; }
  return { ...run, json };
}

/** Where `--` is (flags go before it), or the end. */
function idx(args: readonly string[]): number {
  const i = args.indexOf('--');
  return i === -1 ? args.length : i;
}

export interface Fixture {
  port: number;
  url: string;
  child: ChildProcess;
  stop(): Promise<void>;
}

/** Starts `node <fixture> <args>` and waits for its "READY <port>" line. */
export async function startFixture(file: string, args: readonly string[] = []): Promise<Fixture> {
  const child = spawn(process.execPath, [join(kFixtures, file), ...args], { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout!.on('data', (c: Buffer) => { out += c.toString(); });
  child.stderr!.on('data', (c: Buffer) => { err += c.toString(); });
  try {
    await until(() => /READY \d+/.test(out) || child.exitCode !== null, 20_000, `${file} to start`);
  } catch (error) {
    child.kill('SIGKILL');
    throw new Error(`${(error as Error).message}: ${err}`);
  }
  const port = Number(/READY (\d+)/.exec(out)?.[1]);
  if (!Number.isInteger(port)) throw new Error(`${file} did not start: ${err}`);
  return {
    port, url: `http://127.0.0.1:${port}/mcp`, child,
    stop: async () => {
      if (child.exitCode !== null || child.signalCode !== null) return;
      const exited = new Promise((resolve) => child.once('exit', resolve));
      child.kill('SIGKILL');
      await exited;
    },
  };
}

/** A fresh path for a tally file. */
export function tallyPath(): string {
  return join(scratchDir('sluice-bench-test-'), 'tally');
}

/** Calls counted in a tally file (one byte each). */
export function tally(path: string): number {
  return existsSync(path) ? statSync(path).size : 0;
}

/** The percentiles of a summary are ordered and positive. */
export function ordered(latency: Record<string, number>): boolean {
  return latency.p50! > 0 && latency.p50! <= latency.p90! && latency.p90! <= latency.p99! && latency.p99! <= latency.p999! && latency.p999! <= latency.max!;
}
