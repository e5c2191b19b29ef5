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
  | 'request_cancelled'
  | 'bad_descriptor'
  | 'uws_native_unavailable'
  | 'listen_failed'
  | 'port_in_use'
  | 'tools_module_failed'
  | 'process_exit_refused'
  | 'invalid_definition';

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
