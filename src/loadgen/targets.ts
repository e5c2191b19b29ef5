/** Making a thread's connections for the target kind (HTTP or stdio) and opening them. */
import { HttpTarget } from './http-target.js';
import type { BenchOptions, Negotiated } from './options.js';
import { StdioTarget } from './stdio-target.js';
import type { Target } from './target.js';
import { requestParams } from './wire.js';

/** What a generator thread is given. */
export interface WorkerInput {
  options: BenchOptions;
  negotiated: Negotiated;
  /** This thread's connections. */
  connections: number;
  /** This thread's share of the open-loop rate. */
  rate: number | undefined;
  firstId: number;
}

/** One connection (not opened). */
export function makeTarget(options: BenchOptions, negotiated: Negotiated): Target {
  const params = requestParams(options.method, options.name, options.args);
  if (options.target.kind === 'stdio') {
    return new StdioTarget({ command: options.target.command, args: options.target.args, negotiated, method: options.method, params });
  }
  return new HttpTarget({ url: new URL(options.target.url), headers: options.headers, negotiated, method: options.method, params, sessionPerCall: options.sessionPerCall });
}

/** The thread's connections, opened (sessions started) in parallel; a failure closes them all. */
export async function openTargets(input: WorkerInput): Promise<Target[]> {
  const targets = Array.from({ length: input.connections }, () => makeTarget(input.options, input.negotiated));
  const opened = await Promise.allSettled(targets.map((t) => t.open()));
  const failed = opened.find((r) => r.status === 'rejected');
  if (failed !== undefined) {
    await Promise.all(targets.map((t) => t.close().catch(() => {})));
    throw (failed as PromiseRejectedResult).reason;
  }
  return targets;
}
