/**
 * Processes of the benchmarks: bench servers that print `READY <port>`, started pinned (see
 * machine.ts), and their stop. No side effects on import.
 */
import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { pinned } from './machine.js';

export interface Running { child: ChildProcess; port: number; pid: number }

/** Starts `<node> <nodeArgs>` (a bench server; this process's Node unless `node` names another) and waits for its `READY <port>` line. */
export async function startServer(nodeArgs: readonly string[], cpu?: number, node = process.execPath): Promise<Running> {
  const [command, args] = pinned(cpu, node, nodeArgs);
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'inherit'] });
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.stdout!.on('data', (c: Buffer) => {
      out += c.toString();
      const m = /READY (\d+)/.exec(out);
      if (m !== null) resolve(Number(m[1]));
    });
    child.once('exit', (code) => reject(new Error(`${node === process.execPath ? '' : `${node} `}${nodeArgs.join(' ')} exited (${code}) before it was ready`)));
  });
  return { child, port, pid: child.pid! };
}

/** SIGTERM (the servers close cleanly), SIGKILL after 5 s. Any child process will do. */
export async function stopServer(s: { readonly child: ChildProcess }): Promise<void> {
  if (s.child.exitCode !== null) return;
  const exited = new Promise((r) => s.child.once('exit', r));
  s.child.kill('SIGTERM');
  const timer = setTimeout(() => s.child.kill('SIGKILL'), 5000);
  await exited;
  clearTimeout(timer);
}
