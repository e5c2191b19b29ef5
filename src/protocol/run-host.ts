import type { Registry } from '../registry/index.js';
import type { ServerCounters } from '../telemetry/counters.js';
import type { ServerTracer } from '../telemetry/tracing/server.js';
import type { ListKind } from '../tools/context.js';
import type { AsyncRuns } from './async-runs.js';

/**
 * What a run needs of the engine, and nothing more. `R` is the run (run.ts's `Run`): generic, so
 * that this file and run.ts do not import each other.
 */
export interface RunHost<R extends { arm(): void }> {
  readonly registry: Registry;
  readonly counters: ServerCounters;
  readonly streamCancelTimeoutMs: number;
  /** Server spans, when an OpenTelemetry SDK is registered in this thread (else undefined: no span). */
  readonly tracer: ServerTracer | undefined;
  /** Where the per-request debug line goes (request-log.ts); undefined unless logLevel is 'debug'. */
  readonly requestLog: ((line: string) => void) | undefined;
  /** Runs whose handler went async and has not settled (shutdown cancels them). */
  readonly running: AsyncRuns<R>;
  /** A tool announced a list change. */
  readonly listChanged: (kind: ListKind) => void;
  logFailure(method: string, target: string, error: unknown): void;
  /** Sends the client a request on `run`'s stream and waits for the answer (see `awaitAnswer`). */
  requestClient(run: R, method: string, params: Record<string, unknown>): Promise<unknown>;
  /** Rejects a request sent to the client that will never be answered now. */
  abandonClientRequest(id: string, error: Error): void;
}
