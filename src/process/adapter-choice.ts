/**
 * Which HTTP adapter serves, and on how many threads: decided once, in the supervisor, before any
 * worker starts. Never silent: every fallback is logged with its real reason.
 */
import { loadUwsWithSource } from '../transport/http/uws/load.js';
import { nodeReusePort } from '../transport/http/node/reuse-port.js';
import type { ReusePortSupport } from '../transport/http/node/reuse-port.js';

/** Every log line of the adapter decision carries this tag (so a log filter can pick them out). */
export const kAdapterLogTag = 'HTTP adapter:';

export interface AdapterChoice {
  readonly adapter: 'uws' | 'node';
  /** How many HTTP worker threads can share the port (the request, or 1 where node:http cannot). */
  readonly threads: number;
  /** One line: what serves, e.g. "uWebSockets.js from @trufflesuite/uws-js-unofficial v20.30.0 (native uws_linux_x64_115.node)". */
  readonly detail: string;
}

/**
 * Picks the HTTP adapter: uWS when a native binding loads (the official uWebSockets.js first, then
 * the packaged one), else node:http, never silently; and how many HTTP threads it can run:
 * uWS always shares a port (SO_REUSEPORT); node:http only with `reusePort` (Node ≥ 22.12 / ≥ 23.1,
 * Linux). `workers` is the thread count asked for, or undefined when serving in-process. Each
 * warning names the real reason.
 */
export function chooseAdapter(kind: 'auto' | 'uws' | 'node', log: (level: 'warn' | 'error', message: string) => void, workers?: number): AdapterChoice {
  const requested = workers ?? 1;
  const threadCount = (n: number) => `${n} HTTP thread${n === 1 ? '' : 's'}`;
  if (kind !== 'node') {
    try {
      const { source, officialSkipped } = loadUwsWithSource();
      if (officialSkipped !== undefined) log('warn', `sluice: WARNING: ${kAdapterLogTag} ${officialSkipped}; using ${source.description} instead.`);
      return { adapter: 'uws', threads: requested, detail: source.description };
    } catch (error) {
      if (kind === 'uws') throw error;
      const reusePort = nodeReusePort();
      const threads = reusePort.ok ? requested : 1;
      // (No "serving" here: the CLI prints that word only once it really serves.)
      const how = workers === undefined
        ? 'in this thread'
        : reusePort.ok
          ? threads === 1 ? 'on 1 HTTP thread' : `on ${threadCount(threads)} sharing the port through reusePort`
          : `on 1 HTTP thread instead of ${workers}, because ${reusePort.reason}`;
      log('warn', `sluice: WARNING: ${kAdapterLogTag} uWebSockets.js is not available natively (${(error as Error).message}); falling back to node:http, which is several times slower, ${how}.`);
      return { adapter: 'node', threads, detail: nodeDetail(threads, workers, reusePort) };
    }
  }
  const reusePort = nodeReusePort();
  const threads = reusePort.ok ? requested : 1;
  if (workers !== undefined && workers > 1 && !reusePort.ok) {
    log('warn', `sluice: ${kAdapterLogTag} node:http runs 1 HTTP thread instead of ${workers}: it can share a port between threads only with reusePort, and ${reusePort.reason}.`);
  }
  return { adapter: 'node', threads, detail: nodeDetail(threads, workers, reusePort) };
}

function nodeDetail(threads: number, workers: number | undefined, reusePort: ReusePortSupport): string {
  if (workers === undefined) return 'node:http (in-process)';
  if (reusePort.ok) return `node:http, ${threads} thread${threads === 1 ? '' : 's'} sharing the port through reusePort`;
  return `node:http, 1 thread (${reusePort.reason})`;
}

