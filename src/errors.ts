/**
 * Errors with stable codes. A code is public API: match on `code`, never on the message.
 * Expected refusals on the request path (a full quota, a bad id) are return values, not throws.
 */
export type SluiceErrorCode =
  | 'invalid_option'
  | 'invalid_scope'
  | 'invalid_request_id'
  | 'cancellation_limit_reached'
  | 'in_flight_capacity_exhausted'
  /** A cancel only: the caller's abort or timeout, or the server cancelled the request. */
  | 'request_cancelled'
  /** Not a registry (or table) descriptor: attaching shared memory that is not ours. */
  | 'bad_descriptor'
  | 'uws_native_unavailable'
  | 'listen_failed'
  /** Server.listen() after close(): a server starts once. */
  | 'server_closed'
  | 'port_in_use'
  | 'tools_module_failed'
  | 'process_exit_refused'
  | 'invalid_definition'
  /** A prompt's get or a resource's read returned something that is not a protocol result (logged; the client gets an internal error). */
  | 'invalid_result'
  /** dist/ lacks what `npm run build` makes after tsc (the meta-schema validators): build again. */
  | 'build_incomplete'
  /** Client: the call was made on, or was pending when, the transport closed. */
  | 'transport_closed'
  /** Client: the server process exited with the call pending, or did not start (the message names the exit code or the spawn error). */
  | 'server_exited'
  /** Client: the server no longer knows the legacy session (HTTP 404); the client renews it once. */
  | 'session_expired'
  /** Client: the server's answer is not a usable JSON-RPC response (not JSON, empty, unknown version). */
  | 'invalid_response'
  /** Client: a request's params cannot be written as JSON (a BigInt, a cycle, a toJSON that throws): nothing was sent. */
  | 'invalid_params'
  /** A JSON-RPC error response (ProtocolError: `rpcCode`, `data`). */
  | 'rpc_error'
  /** The request needs a client capability the client did not declare (wire: -32021). */
  | 'missing_client_capability'
  /** A task store is at one of its bounds (tasks in total, or per owner): the task is not created. */
  | 'task_limit_reached'
  /** A client (its principal, else its address bucket) is at its own task quota: tasks kept, bytes stored, or tasks/result waits. HTTP 429. */
  | 'task_quota_reached'
  /** A list cursor the store did not give to this caller (garbled, of another owner, or of an earlier server). */
  | 'invalid_cursor'
  /** Cluster mode: the Redis the nodes share cannot be reached (at start without `startDegraded`, or while serving: what needs it fails, nothing hangs). */
  | 'cluster_unavailable'
  /** Client: the server answered 401 (no bearer token, or one it refused): UnauthorizedError names the resource metadata URL. */
  | 'unauthorized'
  /** Client: the server answered 403 insufficient_scope: InsufficientScopeError lists the scopes the request needs. */
  | 'insufficient_scope';

/**
 * Every SluiceErrorCode, as a runtime list (a Record, so the compiler refuses a code missing here).
 * test/errors/codes.test.ts needs one scenario per entry.
 */
const kCodeTable: Record<SluiceErrorCode, true> = {
  invalid_option: true, invalid_scope: true, invalid_request_id: true, cancellation_limit_reached: true,
  in_flight_capacity_exhausted: true, request_cancelled: true, bad_descriptor: true, uws_native_unavailable: true,
  listen_failed: true, server_closed: true, port_in_use: true, tools_module_failed: true, process_exit_refused: true, invalid_definition: true, invalid_result: true,
  transport_closed: true, server_exited: true, session_expired: true, invalid_response: true, invalid_params: true, rpc_error: true,
  missing_client_capability: true, task_limit_reached: true, task_quota_reached: true, invalid_cursor: true,
  cluster_unavailable: true, unauthorized: true, insufficient_scope: true, build_incomplete: true,
};
export const kSluiceErrorCodes: readonly SluiceErrorCode[] = Object.freeze(Object.keys(kCodeTable) as SluiceErrorCode[]);

/** What a value is, for an error's message ('an array', 'a string', …): server and client both say it this way. */
export function kindOf(value: unknown): string {
  if (value === null) return 'null';
  if (Array.isArray(value)) return 'an array';
  if (typeof value === 'object') return 'an object';
  if (value === undefined) return 'nothing';
  return `a ${typeof value}`;
}

export class SluiceError extends Error {
  readonly code: SluiceErrorCode;
  constructor(code: SluiceErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'SluiceError';
    this.code = code;
  }

  /** Plain data for crossing a thread (an Error subclass arrives as a bare Error). */
  toWire(): SluiceErrorWire {
    return { code: this.code, message: this.message };
  }

  static fromWire(wire: SluiceErrorWire): SluiceError {
    return wire.code === 'request_cancelled' ? new CancelledError(wire.reason) : new SluiceError(wire.code, wire.message);
  }
}

/** A SluiceError as structured-cloneable data. */
export interface SluiceErrorWire {
  code: SluiceErrorCode;
  message: string;
  reason?: string | undefined;
}

/** The request was cancelled; `reason` is the sanitised reason the canceller gave, if any. */
export class CancelledError extends SluiceError {
  readonly reason: string | undefined;
  constructor(reason?: string) {
    super('request_cancelled', reason === undefined || reason === '' ? 'request cancelled' : `request cancelled: ${reason}`);
    this.name = 'CancelledError';
    this.reason = reason;
  }

  override toWire(): SluiceErrorWire {
    return { code: this.code, message: this.message, reason: this.reason };
  }
}

/** JSON-RPC code -32021 (2026-07-28: a client capability the request needs was not declared); ErrorCode in protocol/wire.ts names it. */
const kMissingRequiredClientCapability = -32021;

/** A ProtocolError as structured-cloneable data (an Error subclass arrives as a bare Error across threads). */
export interface ProtocolErrorWire {
  code: number;
  message: string;
  data?: unknown;
  /** Only when not 200. */
  httpStatus?: number;
}

/**
 * A JSON-RPC error, both ways: a method handler throws it to answer with an error response, and the
 * client rejects with it when the server answered with one (`RpcError` in sluice/client is this class).
 * Its SluiceError code is 'rpc_error', or 'missing_client_capability' for -32021.
 */
export class ProtocolError extends SluiceError {
  readonly rpcCode: number;
  readonly data: unknown;
  /** HTTP status to use where the transport has one (2026-07-28 fixes several). */
  readonly httpStatus: number;
  constructor(rpcCode: number, message: string, data?: unknown, httpStatus = 200) {
    super(rpcCode === kMissingRequiredClientCapability ? 'missing_client_capability' : 'rpc_error', message);
    this.name = 'ProtocolError';
    this.rpcCode = rpcCode;
    this.data = data;
    this.httpStatus = httpStatus;
  }

  /** The JSON-RPC error as plain data for crossing a thread; `data` must already be structured-cloneable. */
  toRpcWire(): ProtocolErrorWire {
    const wire: ProtocolErrorWire = { code: this.rpcCode, message: this.message };
    if (this.data !== undefined) wire.data = this.data;
    if (this.httpStatus !== 200) wire.httpStatus = this.httpStatus;
    return wire;
  }

  static fromRpcWire(wire: ProtocolErrorWire): ProtocolError {
    return new ProtocolError(wire.code, wire.message, wire.data, wire.httpStatus);
  }
}
