/**
 * The refusals of the HTTP transport's own rules (Host, Origin, media types, sessions, per-client
 * limits): `ProtocolError`s carrying their HTTP status, made once (a refused flood allocates
 * nothing for its answer but the body). The endpoint writes them; a message's own refusals (parse
 * errors, batches, invalid messages, busy) are the protocol's table (src/protocol/refusals.ts).
 */
import { ErrorCode, ProtocolError } from '../../protocol/wire.js';

/** A refusal answered with `Retry-After: 1` too (429, 503: try again shortly). */
export class RetryLater extends ProtocolError {}

function refusal(status: number, message: string, code: number = ErrorCode.InvalidRequest): ProtocolError {
  return Object.freeze(new ProtocolError(code, message, undefined, status));
}

export const kHostRefused = refusal(403, 'Forbidden: Host not allowed');
export const kOriginRefused = refusal(403, 'Forbidden: Origin not allowed');
export const kUnsupportedMediaType = refusal(415, 'Unsupported Media Type: Content-Type must be application/json');
export const kNotAcceptable = refusal(406, 'Not Acceptable: accept application/json or text/event-stream');
export const kUnauthorized = refusal(401, 'Unauthorized');
export const kSessionRequired = refusal(400, 'Bad Request: Mcp-Session-Id header is required');
export const kSessionNotFound = refusal(404, 'Session not found');
export const kInternal = refusal(500, 'Internal error', ErrorCode.InternalError);
export const kTooManySessions = Object.freeze(new RetryLater(ErrorCode.InternalError, 'Too Many Requests: too many sessions for this client', undefined, 429));
export const kTooManyInFlight = Object.freeze(new RetryLater(ErrorCode.InternalError, 'Too Many Requests: too many requests in flight for this client', undefined, 429));
export const kSessionsFull = Object.freeze(new RetryLater(ErrorCode.InternalError, 'Server busy: session table full', undefined, 503));
/** initialize while draining: come back in a second (the balancer will have sent you elsewhere). */
export const kDrainingRefusal = Object.freeze(new RetryLater(-32000, 'server shutting down: open the session on another node', undefined, 503));

/** Two values of a security-relevant header let a proxy and this server see different requests. */
export function duplicateHeader(name: string): ProtocolError {
  return new ProtocolError(ErrorCode.InvalidRequest, `Bad Request: the ${name} header appears more than once`, undefined, 400);
}
