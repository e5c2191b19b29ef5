/**
 * What a pool tool sends its request while it runs: progress, log messages and list changes go
 * over one MessagePort to the thread that owns the request, which hands them to the request's own
 * sinks. Without it a pool tool's `ctx.log` and `ctx.listChanged` were dropped.
 */
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { kLogLevels } from './context.js';
import type { ListKind, LogLevel, LogSink, ProgressSink } from './context.js';

/** The request's sinks a pool task may reach (each undefined when the request cannot take it). */
export interface PoolSinks {
  readonly progress?: ProgressSink | undefined;
  readonly log?: LogSink | undefined;
  /** The least severe level the client takes (index into kLogLevels), so the pool thread filters first. */
  readonly logThreshold?: number | undefined;
  readonly listChanged?: ((kind: ListKind) => void) | undefined;
}

/** What the pool thread is told it may send (plain data, in the task). */
export interface RelayWants {
  readonly progress: boolean;
  /** undefined: no log message is taken. */
  readonly logThreshold: number | undefined;
  readonly listChanged: boolean;
}

type Relayed =
  | readonly ['p', number, number | undefined, string | undefined]
  | readonly ['l', LogLevel, string | undefined, string | undefined]
  | readonly ['c', ListKind]
  | readonly ['e'];

/** Longest wait, once a task's outcome is in, for what its thread sent before it (see `drained`). */
const kDrainMs = 1_000;

/**
 * The owner's end: a port for the task (transfer it), what it may send, `drained` (await it once the
 * outcome is in) and `close`. Undefined: nothing to relay.
 */
export function openRelay(sinks: PoolSinks): { readonly port: MessagePort; readonly wants: RelayWants; drained(): Promise<void>; close(): void } | undefined {
  const { progress, log, listChanged } = sinks;
  const logThreshold = log === undefined ? undefined : sinks.logThreshold ?? 0;
  if (progress === undefined && logThreshold === undefined && listChanged === undefined) return undefined;
  const channel = new MessageChannel();
  // Messages on this port and the outcome on piscina's are not ordered between them (the outcome
  // came first in about 1 of 12 runs here), so the task's last message says it ended ('e', see
  // `endRelay`). Not the port's 'close': a piscina thread that waits for work (Atomics.wait) sends
  // that only when it next wakes.
  let ended!: () => void;
  const closed = new Promise<void>((resolve) => { ended = resolve; });
  channel.port1.on('message', (m: Relayed) => {
    if (m[0] === 'p') progress?.(m[1], m[2], m[3]);
    else if (m[0] === 'l') log?.(m[1], m[2] === undefined ? undefined : JSON.parse(m[2]) as unknown, m[3]);
    else if (m[0] === 'c') listChanged?.(m[1]);
    else ended();
  });
  return {
    port: channel.port2,
    wants: { progress: progress !== undefined, logThreshold, listChanged: listChanged !== undefined },
    drained: () => {
      let timer: ReturnType<typeof setTimeout> | undefined;
      return Promise.race([closed, new Promise<void>((resolve) => { timer = setTimeout(resolve, kDrainMs); })]).finally(() => clearTimeout(timer));
    },
    close: () => channel.port1.close(),
  };
}

/** The pool thread's end: the context's sinks that post to `port` (none when there is no port). */
export function relayedSinks(port: MessagePort | undefined, wants: RelayWants | undefined): { progress?: ProgressSink; log?: LogSink; listChanged?: (kind: ListKind) => void } {
  if (port === undefined || wants === undefined) return {};
  const threshold = wants.logThreshold;
  return {
    progress: wants.progress ? (p, t, m) => port.postMessage(['p', p, t, m]) : undefined,
    // JSON here, as the request's own sink would serialise it (a BigInt throws in the tool, as inline).
    log: threshold === undefined ? undefined : (level, data, logger) => {
      if (kLogLevels.indexOf(level) < threshold) return;
      port.postMessage(['l', level, JSON.stringify(data), logger]);
    },
    listChanged: wants.listChanged ? (kind) => port.postMessage(['c', kind]) : undefined,
  };
}

/** The pool thread's end, once the task has ended: the last message, then the port closes. */
export function endRelay(port: MessagePort | undefined): void {
  port?.postMessage(['e'] satisfies Relayed);
  port?.close();
}
