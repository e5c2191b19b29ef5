/**
 * A task as stored: plain data (it crosses threads by structured clone, and other stores keep it
 * elsewhere), the same for both protocol dialects. The protocol layer turns it into the wire shape
 * of the dialect that created it (2025-11-25 `Task`, 2026-07-28 `DetailedTask`).
 */

export type TaskStatus = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

/** Which wire created the task: 2025-11-25 experimental tasks (`legacy`) or the 2026-07-28 extension (`modern`). */
export type TaskDialect = 'legacy' | 'modern';

/** A request the task needs the client to answer (elicitation/create, sampling/createMessage, roots/list). */
export interface TaskInputRequest {
  readonly method: string;
  readonly params?: Record<string, unknown> | undefined;
}

/** A JSON-RPC error a task failed with. */
export interface TaskError {
  readonly code: number;
  readonly message: string;
  readonly data?: unknown;
}

/** The newest progress a task reported (legacy: its progress token stays valid for the task's life). */
export interface TaskProgress {
  readonly progress: number;
  readonly total?: number | undefined;
  readonly message?: string | undefined;
}

export interface TaskRecord {
  /** 128 random bits, base64url: unguessable, so knowing an id is never enough (the owner is checked too). */
  readonly taskId: string;
  /**
   * The registry scope that created the task (`session:…`, `principal:…`, `modern:…`, `ip:…`):
   * only requests in this scope can read, answer, list or cancel it. Its running tool's registry
   * row is `task:<taskId>` in this scope, so a cancel raises the flag exactly as a
   * notifications/cancelled would.
   */
  readonly owner: string;
  readonly dialect: TaskDialect;
  /** The tool it runs. */
  readonly toolName: string;
  /** Who runs it (`<threadId>` on one node): when a runner is lost, its unfinished tasks fail. */
  readonly runner: string;
  readonly status: TaskStatus;
  readonly statusMessage?: string | undefined;
  /** Epoch milliseconds. */
  readonly createdAt: number;
  readonly lastUpdatedAt: number;
  /** The lifetime the server granted, from creation (it may be shorter than the client asked). */
  readonly ttlMs: number;
  readonly pollIntervalMs: number;
  /** `completed` (and 2025 `failed` from a tool's isError): the tool's result, as JSON text. */
  readonly resultJson?: string | undefined;
  /** `failed`: the JSON-RPC error. */
  readonly error?: TaskError | undefined;
  /** Requests to the client not yet answered, by key (keys are unique for the task's life). */
  readonly inputRequests?: Readonly<Record<string, TaskInputRequest>> | undefined;
  /** Answers the client gave, by key, for the runner to pick up. */
  readonly inputResponses?: Readonly<Record<string, unknown>> | undefined;
  /** Legacy: the tools/call progress token, valid for the task's life. */
  readonly progressToken?: string | number | undefined;
  /**
   * The W3C traceparent of the creating request's span, when it was traced: the spans of requests
   * about the task (on any node) link to it.
   */
  readonly traceparent?: string | undefined;
  readonly progress?: TaskProgress | undefined;
  /** Increases on every change (watchers and blocking reads compare it). */
  readonly version: number;
}

/** What `TaskStore.create` gets: everything but what the store decides. */
export interface NewTask {
  readonly taskId: string;
  readonly owner: string;
  /**
   * Who the client is across its sessions (RequestInfo.client: `principal:<id>`, else `ip:<bucket>`):
   * what per-client quotas count. Undefined: the owner.
   */
  readonly client?: string | undefined;
  readonly dialect: TaskDialect;
  readonly toolName: string;
  readonly runner: string;
  /** Requested lifetime; the store caps it at its maximum (undefined: its default). */
  readonly ttlMs?: number | undefined;
  readonly progressToken?: string | number | undefined;
  /** The creating request's span (W3C traceparent), kept on the record when at most 256 characters. */
  readonly traceparent?: string | undefined;
}

/** A runner's change to its task. Ignored once the task is terminal (terminal is final). */
export interface TaskChange {
  readonly status?: TaskStatus | undefined;
  readonly statusMessage?: string | undefined;
  readonly resultJson?: string | undefined;
  readonly error?: TaskError | undefined;
  /** Added to the outstanding input requests (keys never reused within a task). */
  readonly addInputRequests?: Readonly<Record<string, TaskInputRequest>> | undefined;
  /** Answers the runner has consumed: removed from `inputResponses`. */
  readonly consumedResponses?: readonly string[] | undefined;
  readonly progress?: TaskProgress | undefined;
}

export interface TaskPage {
  readonly tasks: readonly TaskRecord[];
  readonly nextCursor?: string | undefined;
}

export const kTerminalStatuses: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

export function isTerminal(status: TaskStatus): boolean {
  return kTerminalStatuses.has(status);
}
