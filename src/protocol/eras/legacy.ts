import { isInputRequired } from '../../tools/context.js';
import type { RequestInput } from '../../tools/context.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method, Run } from '../run.js';
import { ErrorCode, ProtocolError } from '../wire.js';
import type { EraRules } from './rules.js';

/** The capabilities an initialize result declares (legacy: no list-change notifications). */
export function legacyCapabilities(index: CatalogIndex, tasks: { readonly list: boolean } | undefined): Record<string, unknown> {
  return {
    // 2025-11-25 experimental tasks: tools/call only; tasks/list only with an auth context to bind tasks to.
    ...(tasks !== undefined ? { tasks: { ...(tasks.list ? { list: {} } : {}), cancel: {}, requests: { tools: { call: {} } } } } : {}),
    tools: { listChanged: false },
    ...(index.hasResources ? { resources: { subscribe: true, listChanged: false } } : {}),
    ...(index.hasPrompts ? { prompts: { listChanged: false } } : {}),
    completions: {},
    logging: {},
  };
}

/** 2025-03-26 … 2025-11-25: initialize and sessions; results as handlers return them. */
export class LegacyEra implements EraRules {
  readonly name = 'legacy' as const;
  readonly methods: ReadonlyMap<string, Method>;
  readonly clientRequests = true;

  constructor(methods: ReadonlyMap<string, Method>) {
    this.methods = methods;
  }

  methodNotFound(method: string): ProtocolError {
    return new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${method}`);
  }

  resourceNotFound(uri: string): ProtocolError {
    return new ProtocolError(ErrorCode.ResourceNotFound, 'Resource not found', { uri });
  }

  cacheable(result: Record<string, unknown>): Record<string, unknown> {
    return result;
  }

  /** Only the capabilities the session declared at initialize. */
  input(run: Run): RequestInput {
    return { clientCapabilities: run.info.clientCapabilities, inputResponses: undefined, requestState: undefined };
  }

  encode(result: Record<string, unknown>): string {
    if (isInputRequired(result)) throw new ProtocolError(ErrorCode.InternalError, 'an input-required result needs the 2026-07-28 protocol');
    return JSON.stringify(result);
  }
}
