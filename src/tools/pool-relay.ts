/**
 * What a pool tool sends its request while it runs: progress, log messages and list changes go to
 * the thread that owns the request, which hands them to the request's own sinks. Without it a pool
 * tool's `ctx.log` and `ctx.listChanged` were dropped.
 *
 * They travel on the pool thread's own port to its owner (piscina hands them over as 'message'
 * events), tagged with the call's relay id, and the task's outcome says how many it sent: that
 * port and piscina's outcome are not ordered between them, so the owner answers once it has that
 * many. A call that sent nothing (most) is answered at once: no port of its own per call, no end
 * message. (A MessageChannel per call, closed by an end message, doubled a pool call's latency.)
 */
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

/** What the pool thread is told it may send, and under which id (plain data, in the task). */
export interface RelayWants {
  readonly id: number;
  readonly progress: boolean;
  /** undefined: no log message is taken. */
  readonly logThreshold: number | undefined;
  readonly listChanged: boolean;
}

const kTag = 'sluice:relay';

/** One relayed message, as the pool thread posts it to its owner. */
type Relayed =
  | readonly [typeof kTag, number, 'p', number, number | undefined, string | undefined]
  | readonly [typeof kTag, number, 'l', LogLevel, string | undefined, string | undefined]
  | readonly [typeof kTag, number, 'c', ListKind];

/** Longest wait, once a task's outcome is in, for the messages it counted (see `RelayHub.settled`). */
const kDrainMs = 1_000;

interface OpenRelay {
  readonly sinks: PoolSinks;
  received: number;
  /** Set once the outcome is in and messages are still to come. */
  expected: number;
  done: (() => void) | undefined;
}

/** The owner's side, one per pool: the calls that may relay, by id. */
export class RelayHub {
  readonly #open = new Map<number, OpenRelay>();
  #next = 0;

  /** What a call may send, under a new id (then `settled` or `forget` it); undefined: nothing to relay. */
  open(sinks: PoolSinks): RelayWants | undefined {
    const { progress, log, listChanged } = sinks;
    const logThreshold = log === undefined ? undefined : sinks.logThreshold ?? 0;
    if (progress === undefined && logThreshold === undefined && listChanged === undefined) return undefined;
    const id = ++this.#next;
    this.#open.set(id, { sinks, received: 0, expected: 0, done: undefined });
    return { id, progress: progress !== undefined, logThreshold, listChanged: listChanged !== undefined };
  }

  /** A message from a pool thread: true when it was a relayed one (handed to its call's sinks). */
  receive(message: unknown): boolean {
    if (!Array.isArray(message) || message[0] !== kTag) return false;
    const m = message as unknown as Relayed;
    const relay = this.#open.get(m[1]);
    if (relay === undefined) return true; // its call has ended (killed, or past the wait)
    const { sinks } = relay;
    if (m[2] === 'p') sinks.progress?.(m[3], m[4], m[5]);
    else if (m[2] === 'l') sinks.log?.(m[3], m[4] === undefined ? undefined : JSON.parse(m[4]) as unknown, m[5]);
    else sinks.listChanged?.(m[3]);
    relay.received++;
    if (relay.done !== undefined && relay.received >= relay.expected) relay.done();
    return true;
  }

  /**
   * Once the outcome is in: resolves when the `count` messages it says were sent have arrived (at
   * once for none; at most kDrainMs), and forgets the call.
   */
  settled(id: number, count: number): Promise<void> | undefined {
    const relay = this.#open.get(id);
    if (relay === undefined || relay.received >= count) {
      this.#open.delete(id);
      return undefined;
    }
    relay.expected = count;
    let timer: ReturnType<typeof setTimeout> | undefined;
    return new Promise<void>((resolve) => {
      relay.done = resolve;
      timer = setTimeout(resolve, kDrainMs);
    }).finally(() => {
      clearTimeout(timer);
      this.#open.delete(id);
    });
  }

  /** A call that ended with no outcome (killed, or its thread failed): what comes for it is dropped. */
  forget(id: number): void {
    this.#open.delete(id);
  }
}

/**
 * The pool thread's side of one call: the context's sinks, which post to `post` (the thread's port
 * to its owner) until `end`, which returns how many were sent.
 */
export class RelayOut {
  readonly #wants: RelayWants | undefined;
  readonly #post: (message: Relayed) => void;
  #sent = 0;
  #ended = false;

  constructor(wants: RelayWants | undefined, post: (message: unknown) => void) {
    this.#wants = wants;
    this.#post = post;
  }

  /** The sinks a ToolContext gets (none when the request takes nothing). */
  sinks(): { progress?: ProgressSink; log?: LogSink; listChanged?: (kind: ListKind) => void } {
    const wants = this.#wants;
    if (wants === undefined) return {};
    const { id, logThreshold } = wants;
    return {
      progress: wants.progress ? (p, t, m) => this.#send([kTag, id, 'p', p, t, m]) : undefined,
      // JSON here, as the request's own sink would serialise it (a BigInt throws in the tool, as inline).
      log: logThreshold === undefined ? undefined : (level, data, logger) => {
        if (kLogLevels.indexOf(level) < logThreshold) return;
        this.#send([kTag, id, 'l', level, JSON.stringify(data), logger]);
      },
      listChanged: wants.listChanged ? (kind) => this.#send([kTag, id, 'c', kind]) : undefined,
    };
  }

  /** The task has ended: nothing more is sent (a timer the tool left behind posts nothing); the count. */
  end(): number {
    this.#ended = true;
    return this.#sent;
  }

  #send(message: Relayed): void {
    if (this.#ended) return;
    this.#sent++;
    this.#post(message);
  }
}
