/**
 * One load connection to an MCP server, whatever carries it: the HTTP and stdio targets implement
 * this, and the loop drives it. Callbacks, not promises, on the per-request path.
 */
import type { Outcome } from './wire.js';

/** Reports one request's end: its outcome, when its answer arrived (performance.now()), progress notifications seen. */
export type CallDone = (outcome: Outcome, answeredAt: number, progress: number) => void;

/** Steps of a `--session-per-call` iteration, timed separately. */
export type Step = 'initialize' | 'initialized' | 'call' | 'delete';

export interface Target {
  /** Connects and, in the legacy era, starts the session (initialize, then notifications/initialized). */
  open(): Promise<void>;
  /** Sends request `id`; `done` is called exactly once (also after cancel() or abort()). */
  call(id: number, done: CallDone): void;
  /** Cancels request `id` the era's way (legacy: notifications/cancelled; 2026-07-28 HTTP: the stream is closed). */
  cancel(id: number): void;
  /** Gives up on the request in progress (its `done` gets `kind`) and replaces the connection. */
  abort(kind: 'timeout' | 'no-answer', detail: string): void;
  /** Ends the session (legacy HTTP: DELETE) and the connection; never waits long. */
  close(): Promise<void>;
  readonly bytesIn: number;
  readonly bytesOut: number;
  /** Set by the loop in --session-per-call runs: each step's latency in ms. */
  onStep?: (step: Step, ms: number) => void;
}

/** Thrown by open() when the server refused the handshake: stops the run with this message (exit 2). */
export class OpenError extends Error {}
