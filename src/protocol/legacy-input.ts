/**
 * A handler written for 2026-07-28 asks the client by returning `ctx.inputRequired(...)`; a legacy
 * client cannot retry with answers, but it can be asked mid-call. So in the legacy era the input
 * requests go to the client on the request's stream (as `ctx.request` sends them), one after
 * another, and the handler runs again with the answers as `ctx.inputResponses` and its state as
 * `ctx.requestState`, as a 2026-07-28 retry would bring them: one handler asks in both eras (the
 * Python SDK's resolvers do the same).
 */
import { SluiceError } from '../errors.js';
import { capabilityFor } from '../tools/context.js';
import type { ClientRequester, InputRequired, RequestInput } from '../tools/context.js';
import { missingCapabilities } from './refusals.js';
import { ErrorCode, ProtocolError } from './wire.js';

/** Input rounds one request may take (the Python SDK's client allows as many): a handler that never stops asking fails. */
export const kMaxInputRounds = 10;

/**
 * Asks the client each of `required`'s input requests (round `round` of this request) and resolves
 * with what the handler's next run sees. Rejects with -32021 when the client did not declare a
 * capability they need, -32600 when the request has no stream to ask on (its Accept took JSON only),
 * `invalid_result` for a malformed `inputRequired` or one round too many, and as the client answered
 * when it answered with an error (as `ctx.request` would reject in the handler).
 */
export async function askForInput(required: InputRequired, ask: ClientRequester | undefined, capabilities: Record<string, unknown> | undefined, round: number): Promise<RequestInput> {
  if (round > kMaxInputRounds) throw new SluiceError('invalid_result', `the handler asked the client for input more than ${kMaxInputRounds} times in one request`);
  const requests = inputRequests(required);
  const missing: Record<string, object> = {};
  for (const [, { method }] of requests) {
    const capability = capabilityFor(method);
    if (capability !== undefined && capabilities?.[capability] === undefined) missing[capability] = {};
  }
  if (Object.keys(missing).length > 0) throw missingCapabilities(missing, 'legacy');
  if (ask === undefined) {
    throw new ProtocolError(ErrorCode.InvalidRequest, 'the server needs to ask the client for input during this request, and its Accept header does not take text/event-stream', undefined, 406);
  }
  const responses: Record<string, unknown> = {};
  for (const [key, { method, params }] of requests) responses[key] = await ask(method, params ?? {});
  // The state as a 2026-07-28 retry brings it back: through JSON.
  const state = required.state === undefined ? undefined : JSON.parse(JSON.stringify(required.state)) as unknown;
  return { clientCapabilities: capabilities, inputResponses: responses, requestState: state };
}

/** The keyed requests, each a method name and optional params object; a handler's mistake is `invalid_result`. */
function inputRequests(required: InputRequired): Array<[string, { method: string; params?: Record<string, unknown> | undefined }]> {
  const all: unknown = required.inputRequests;
  if (all === null || typeof all !== 'object' || Array.isArray(all) || Object.keys(all).length === 0) {
    throw new SluiceError('invalid_result', 'inputRequired: inputRequests must be an object with at least one request');
  }
  return Object.entries(all as Record<string, unknown>).map(([key, request]) => {
    const r = request as { method?: unknown; params?: unknown } | null;
    const paramsOk = r?.params === undefined || (r.params !== null && typeof r.params === 'object' && !Array.isArray(r.params));
    if (r === null || typeof r !== 'object' || typeof r.method !== 'string' || !paramsOk) {
      throw new SluiceError('invalid_result', `inputRequired: inputRequests.${key} must be { method: string, params?: object }`);
    }
    return [key, r as { method: string; params?: Record<string, unknown> }];
  });
}
