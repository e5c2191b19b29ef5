import { isInputRequired } from '../../tools/context.js';
import type { RequestInput } from '../../tools/context.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method } from '../run.js';
import { ErrorCode, ProtocolError } from '../wire.js';
import type { EraRules, RunFacts } from './rules.js';

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

const kNoInput: RequestInput = Object.freeze({ clientCapabilities: undefined, inputResponses: undefined, requestState: undefined });

/** 2025-03-26 … 2025-11-25: initialize and sessions; results as handlers return them. */
export class LegacyEra implements EraRules {
  readonly name = 'legacy' as const;
  readonly methods: ReadonlyMap<string, Method>;
  readonly clientRequests = true;
  readonly #inputs = new WeakMap<Record<string, unknown>, RequestInput>();

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

  /**
   * Only the capabilities the session declared at initialize. One frozen input per capabilities
   * object (sessions share a few), instead of a new one per request.
   */
  input(run: RunFacts): RequestInput {
    const capabilities = run.info.clientCapabilities;
    if (capabilities === undefined) return kNoInput;
    let input = this.#inputs.get(capabilities);
    if (input === undefined) {
      input = Object.freeze({ clientCapabilities: capabilities, inputResponses: undefined, requestState: undefined });
      this.#inputs.set(capabilities, input);
    }
    return input;
  }

  encode(result: Record<string, unknown>): string {
    if (isInputRequired(result)) throw new ProtocolError(ErrorCode.InternalError, 'an input-required result needs the 2026-07-28 protocol');
    return JSON.stringify(result);
  }
}
