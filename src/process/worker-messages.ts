/**
 * What the supervisor and an HTTP worker tell each other, typed both ways. Plain data only
 * (structured clone): errors travel as code and message.
 */
import type { MessagePort } from 'node:worker_threads';
import type { CatalogNames } from '../catalog/catalog.js';
import type { SluiceErrorCode } from '../errors.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';
import type { ListKind } from '../tools/context.js';
import type { AdapterKind } from '../transport/http/adapter.js';
import type { SharedState } from '../server/shared-state.js';
import type { ServerLogLevel, ResolvedOptions } from '../server/options.js';

/** What the supervisor passes an HTTP worker (workerData). */
export interface HttpWorkerData {
  /** The server's shared memory, and its resolved options (ServerConfig.options). */
  readonly shared: SharedState;
  readonly options: ResolvedOptions;
  /** The tools module the worker and its pool load. */
  readonly toolsModule: string;
  /** The adapter the supervisor chose, the port, and whether this worker is the first on it (HttpStackInput.firstOnPort). */
  readonly adapter: AdapterKind;
  readonly port: number;
  readonly firstOnPort: boolean;
  /** This worker's end of the channel to the supervisor's task store (transferred); absent when tasks are off. */
  readonly tasks?: MessagePort | undefined;
  /** Cluster mode: this worker's end of the channel to the supervisor's session directory (transferred). */
  readonly sessionDirectory?: MessagePort | undefined;
}

/** Messages from the supervisor to an HTTP worker. */
export type ToHttpWorker =
  /** Graceful stop: `graceMs` for running requests, then cancel; the worker answers `closed`. */
  | { readonly type: 'close'; readonly graceMs: number }
  /** A client's answer to a request this worker's tool sent (it arrived at another worker). */
  | { readonly type: 'response'; readonly response: string; readonly scope: string; readonly via?: string | undefined }
  /** A list changed (on another thread or node, or through Server.notifyListChanged). */
  | { readonly type: 'listChanged'; readonly kind: ListKind }
  /** A legacy session (its registry scope) was DELETEd on another thread or node: cancel what of it runs here. */
  | { readonly type: 'sessionEnded'; readonly scope: string }
  /**
   * Shutdown has begun and the server drains (cluster mode): /readyz already says 503 (shared
   * flag); listen streams end now so their clients reconnect to another node.
   */
  | { readonly type: 'drain' }
  /**
   * The process is exiting without close() (process.exit, an uncaught error): end every socket
   * now, then add 1 to `acks[0]` and notify it (the supervisor waits there, synchronously).
   */
  | { readonly type: 'exiting'; readonly acks: Int32Array };

/** Messages from an HTTP worker to the supervisor. */
export type FromHttpWorker =
  /** `served`: what this worker's catalog offers (the CLI's start-up line). */
  | { readonly type: 'listening'; readonly port: number; readonly served: CatalogNames }
  /** `code`: the SluiceError code when there is one (tools_module_failed: the tools module did not load). */
  | { readonly type: 'failed'; readonly message: string; readonly code?: SluiceErrorCode | undefined }
  | { readonly type: 'event'; readonly channel: string; readonly message: unknown }
  | { readonly type: 'log'; readonly level: ServerLogLevel; readonly message: string }
  | { readonly type: 'closed' }
  /** A client's answer for thread `target` (of node `node` when it is another node's, cluster mode). */
  | { readonly type: 'response'; readonly target: number; readonly response: string; readonly scope: string; readonly node?: string | undefined }
  /** Cluster mode: a legacy cancel for a request not running on this node, for the other nodes. */
  | { readonly type: 'cancel'; readonly requestId: string | number; readonly reason?: string | undefined; readonly scope: string; readonly trace?: CarriedTrace | undefined }
  | { readonly type: 'listChanged'; readonly kind: ListKind }
  /**
   * A client DELETEd its legacy session (scope `scope`) here: the node's other threads that served
   * it (`threads`: the session store's bits) cancel what of it they run.
   */
  | { readonly type: 'sessionEnded'; readonly scope: string; readonly threads: number }
  /**
   * A pool thread of this worker started (`alive`) or exited. Pool threads die with their HTTP
   * worker without reporting it, so the supervisor releases the registry entries of those still
   * alive when the worker exits.
   */
  | { readonly type: 'poolThread'; readonly threadId: number; readonly alive: boolean };
