/**
 * The machine under the benchmarks: CPU pinning (taskset), /proc readings (a process's CPU time and
 * RSS, per-CPU and machine-wide busy time), the load average and a description of the box.
 * Linux only where it reads /proc; no side effects on import.
 */
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import * as os from 'node:os';

/** Pin to CPUs when the box has two and taskset exists (server on 1, generator on 0: they never share a core). */
export const pin = existsSync('/usr/bin/taskset') && os.cpus().length >= 2;

/** `command args`, run on `cpu` when pinning is possible (and `cpu` is given). */
export function pinned(cpu: number | undefined, command: string, args: readonly string[]): [string, string[]] {
  return pin && cpu !== undefined ? ['taskset', ['-c', String(cpu), command, ...args]] : [command, [...args]];
}

/** Pins this process (every thread) to `cpu`, when pinning is possible. */
export function pinSelf(cpu: number): void {
  if (pin) execFileSync('taskset', ['-a', '-cp', String(cpu), String(process.pid)], { stdio: 'ignore' });
}

let clockTicks: number | undefined;

/** USER_HZ, the unit of /proc/<pid>/stat's times (100 nearly everywhere). */
function ticksPerSecond(): number {
  if (clockTicks === undefined) {
    try { clockTicks = Number(execFileSync('getconf', ['CLK_TCK']).toString().trim()) || 100; } catch { clockTicks = 100; }
  }
  return clockTicks;
}

/** CPU seconds (user + system, every thread) the process has used; NaN once it is gone. */
export function cpuSeconds(pid: number): number {
  try {
    const stat = readFileSync(`/proc/${pid}/stat`, 'utf8');
    const rest = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // from field 3 (state) on
    return (Number(rest[11]) + Number(rest[12])) / ticksPerSecond(); // fields 14 (utime) and 15 (stime)
  } catch {
    return NaN;
  }
}

/** [busy, total] jiffies of one CPU from /proc/stat; the busy fraction is the ratio of two readings' differences. */
export function cpuTimes(cpu: number): [number, number] {
  const line = readFileSync('/proc/stat', 'utf8').split('\n').find((l) => l.startsWith(`cpu${cpu} `))!;
  const v = line.trim().split(/\s+/).slice(1).map(Number);
  const idle = v[3] + v[4];
  const total = v.reduce((a, b) => a + b, 0);
  return [total - idle, total];
}

/** Resident set size of a process in MB (/proc/<pid>/status VmRSS); NaN once it is gone. */
export function rssMb(pid: number): number {
  try {
    const m = /VmRSS:\s+(\d+)/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
    return m === null ? NaN : Number(m[1]) / 1024;
  } catch {
    return NaN;
  }
}

/** CPU seconds every process on the machine has used since boot (Linux /proc/stat), or undefined. */
export function machineBusySeconds(): number | undefined {
  try {
    const fields = readFileSync('/proc/stat', 'utf8').split('\n', 1)[0].trim().split(/\s+/);
    if (fields[0] !== 'cpu' || fields.length < 9) return undefined;
    const [user, nice, system, , , irq, softirq, steal] = fields.slice(1, 9).map(Number);
    const busy = user + nice + system + irq + softirq + steal;
    return Number.isFinite(busy) ? busy / 100 : undefined; // USER_HZ
  } catch {
    return undefined;
  }
}

/** Starts a measurement of the CPU used by other processes; call the result to read it, in cores. */
export function otherCpu(): () => number | null {
  const busy0 = machineBusySeconds();
  const own0 = process.cpuUsage();
  const wall0 = performance.now();
  return () => {
    const busy1 = machineBusySeconds();
    if (busy0 === undefined || busy1 === undefined) return null;
    const own = process.cpuUsage(own0);
    const ownSeconds = (own.user + own.system) / 1e6;
    return Math.max(0, (busy1 - busy0 - ownSeconds) / ((performance.now() - wall0) / 1000));
  };
}

/** Load average over 1, 5 and 15 minutes (other work on the machine shows here). */
export function loadAverage(): number[] {
  return os.loadavg();
}

export interface Machine {
  cpu: string;
  cores: number;
  os: string;
  arch: string;
  node: string;
  v8: string;
  memoryGiB: number;
}

export function machine(): Machine {
  const cpus = os.cpus();
  return {
    cpu: cpus[0]?.model.trim() ?? 'unknown',
    cores: cpus.length,
    os: `${os.type()} ${os.release()}`,
    arch: os.arch(),
    node: process.version,
    v8: process.versions.v8,
    memoryGiB: Math.round((os.totalmem() / 2 ** 30) * 10) / 10,
  };
}

/** `<cpu model> × <cores>, node <version>`: the machine line of the HTTP, slow-reader and profile reports. */
export function machineLine(): string {
  return `${os.cpus()[0]?.model ?? '?'} × ${os.cpus().length}, node ${process.version}`;
}
