/**
 * `sluice bench` as a benchmark's load generator: runs the built CLI (bin/sluice.js) with `--json`,
 * pinned like the other generators (see machine.ts), and returns the fields the reports read
 * (docs/loadgen.md, "The JSON document"). No side effects on import.
 */
import { spawn } from 'node:child_process';
import { join } from 'node:path';
import { pinned } from './machine.js';
import { kRoot } from './report.js';

export const kSluiceBin = join(kRoot, 'bin', 'sluice.js');

/** One `latencyMs` object of the JSON document. */
export interface BenchLatency { count: number; min: number; mean: number; p50: number; p90: number; p99: number; p999: number; max: number }

/** The part of a single run's JSON document the benchmarks read. */
export interface BenchRun {
  era: string;
  protocolVersion: string;
  mode: 'closed' | 'open';
  rate: number | null;
  connections: number;
  durationS: number;
  requests: number;
  ok: number;
  requestsPerSecond: number;
  latencyMs: BenchLatency;
  errors: { total: number; rate: number; byKind: Record<string, number>; details: Record<string, string> };
  steps: Record<string, BenchLatency> | null;
  unfinished: number;
  generator: { cpuPercent: number; cpuUsPerRequest: number; threads: number; bottleneck: boolean };
}

/** Requests answered with an HTTP status of 300 or more (wrk's "Non-2xx or 3xx responses"). */
export function httpErrors(run: BenchRun): number {
  return Object.entries(run.errors.byKind).filter(([kind]) => kind.startsWith('http ')).reduce((a, [, n]) => a + n, 0);
}

/**
 * `sluice bench <url> <args…> --json` on `cpu` (undefined: not pinned). Exit 1 (the error rate
 * passed --max-errors) still prints the document, so it is read and returned: the caller decides
 * what errors mean. Other failures reject with the generator's stderr.
 */
export function sluiceBench(cpu: number | undefined, url: string, args: readonly string[]): Promise<BenchRun> {
  const [command, argv] = pinned(cpu, process.execPath, [kSluiceBin, 'bench', url, ...args, '--json']);
  return new Promise((resolve, reject) => {
    const child = spawn(command, argv, { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (c: Buffer) => { out += c.toString(); });
    child.stderr.on('data', (c: Buffer) => { err += c.toString(); });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0 && code !== 1) {
        reject(new Error(`sluice bench exited ${code}: ${err.trim()}`));
        return;
      }
      try {
        resolve(JSON.parse(out) as BenchRun);
      } catch {
        reject(new Error(`sluice bench (exit ${code}) printed no JSON document: ${err.trim() || out.slice(0, 200)}`));
      }
    });
  });
}
