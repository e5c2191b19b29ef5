/**
 * Processes of the benchmarks: CPU pinning, bench servers that print `READY <port>`, and their
 * stop. No side effects on import (bench/http.ts, profile.ts and soak.ts share it).
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { existsSync } from 'node:fs';
import { cpus } from 'node:os';

/** Pin to CPUs when the box has two and taskset exists (perf-anchors §4: server on 1, generator on 0). */
export const pin = existsSync('/usr/bin/taskset') && cpus().length >= 2;

/** `command args`, run on `cpu` when pinning is possible (and `cpu` is given). */
export function pinned(cpu: number | undefined, command: string, args: readonly string[]): [string, string[]] {
  return pin && cpu !== undefined ? ['taskset', ['-c', String(cpu), command, ...args]] : [command, [...args]];
}

export interface Running { child: ChildProcess; port: number; pid: number }

/** Starts `node <nodeArgs>` (a bench server) and waits for its `READY <port>` line. */
export async function startServer(nodeArgs: readonly string[], cpu?: number): Promise<Running> {
  const [command, args] = pinned(cpu, process.execPath, nodeArgs);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${nodeArgs.join(' ')} exited (${code}) before it was ready`)));
  });
  return { child, port, pid: child.pid! };
}

/** SIGTERM (the servers close cleanly), SIGKILL after 5 s. */
export async function stopServer(s: Running): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
