import { isInputRequired } from '../../tools/context.js';
import type { RequestInput } from '../../tools/context.js';
import type { RequestStateSealer } from '../request-state.js';
import type { RequestInfo } from '../contract.js';
import type { Method } from '../run.js';
import { ErrorCode, ProtocolError, kMetaClientCapabilities, kMetaServerInfo } from '../wire.js';
import { kTasksExtension } from '../tasks/wire.js';
import { checkModernCapabilities, metaOf } from './meta.js';
import type { EraRules, RunFacts } from './rules.js';
import { kCacheTtlMs } from './rules.js';

/**
 * The capabilities server/discover declares: list changes reach subscriptions/listen streams (legacy
 * has no stream to carry them); resource subscriptions are not offered.
 */
export function modernCapabilities(legacy: Record<string, unknown>, tasks: boolean): Record<string, unknown> {
  // 2025-11-25 `capabilities.tasks` has no place here: 2026-07-28 tasks are an extension.
  const { tasks: _legacyTasks, ...common } = legacy;
  return {
    ...common,
    ...(tasks ? { extensions: { [kTasksExtension]: {} } } : {}),
    tools: { listChanged: true },
    ...(legacy.resources !== undefined ? { resources: { listChanged: true } } : {}),
    ...(legacy.prompts !== undefined ? { prompts: { listChanged: true } } : {}),
  };
}

/** 2026-07-28: stateless requests carrying `_meta`; every result says its `resultType` and the server. */
export class ModernEra implements EraRules {
  readonly name = 'modern' as const;
  readonly methods: ReadonlyMap<string, Method>;
  readonly clientRequests = false;
  readonly #sealer: RequestStateSealer;
  readonly #serverInfo: { readonly name: string; readonly version: string };
  /** `"resultType":"complete","_meta":{serverInfo}}`: the end of every plain modern result. */
  readonly #tail: string;

  constructor(methods: ReadonlyMap<string, Method>, sealer: RequestStateSealer, serverInfo: { readonly name: string; readonly version: string }) {
    this.methods = methods;
    this.#sealer = sealer;
    this.#serverInfo = serverInfo;
    this.#tail = `"resultType":"complete","_meta":${JSON.stringify({ [kMetaServerInfo]: serverInfo })}}`;
  }

  methodNotFound(method: string): ProtocolError {
    return new ProtocolError(ErrorCode.MethodNotFound, `Method not found: ${method}`, undefined, 404);
  }

  /**
   * The era's own refusal of a request, before it runs (on every transport, after the transport's
   * header rules): `_meta` must declare the client's capabilities, then the method must be one
   * this era serves (404 over HTTP). `entry` is the method's table entry, looked up once.
   */
  refusal(method: string, entry: Method | undefined, info: RequestInfo, params: Record<string, unknown> | undefined): ProtocolError | undefined {
    const refused = checkModernCapabilities(info.meta ?? metaOf(params));
    if (refused !== undefined) return refused;
    return entry === undefined ? this.methodNotFound(method) : undefined;
  }

  resourceNotFound(uri: string): ProtocolError {
    return new ProtocolError(ErrorCode.InvalidParams, 'Resource not found', { uri });
  }

  cacheable(result: Record<string, unknown>): Record<string, unknown> {
    return { ...result, ttlMs: kCacheTtlMs, cacheScope: 'public' };
  }

  /** The request's _meta capabilities, the answers to the last round, and its requestState (checked). */
  input(run: RunFacts, params: Record<string, unknown> | undefined): RequestInput {
    const meta = run.info.meta ?? metaOf(params);
    const capabilities = meta?.[kMetaClientCapabilities] as Record<string, unknown> | undefined;
    const responses = params?.inputResponses;
    if (responses !== undefined && (responses === null || typeof responses !== 'object' || Array.isArray(responses))) {
      throw new ProtocolError(ErrorCode.InvalidParams, 'inputResponses must be an object');
    }
    let state: unknown;
    if (params?.requestState !== undefined) {
      const opened = this.#sealer.open(params.requestState, run.method, run.target);
      if (!opened.ok) throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid requestState: integrity check failed');
      state = opened.state;
    }
    return { clientCapabilities: capabilities, inputResponses: responses as Record<string, unknown> | undefined, requestState: state };
  }

  /**
   * `resultType` and the server's info in `_meta`. The common case (no `_meta` of its own) appends a
   * tail serialised once, instead of copying the result into a new object on every request.
   */
  encode(result: Record<string, unknown>, method: string, target: string): string {
    if (isInputRequired(result)) {
      const out: Record<string, unknown> = { resultType: 'input_required', inputRequests: result.inputRequests };
      if (result.state !== undefined) out.requestState = this.#sealer.seal(result.state, method, target);
      return JSON.stringify({ ...out, _meta: { [kMetaServerInfo]: this.#serverInfo } });
    }
    if (result._meta === undefined && result.resultType === undefined) {
      const json = JSON.stringify(result);
      return json === '{}' ? `{${this.#tail}` : `${json.slice(0, -1)},${this.#tail}`;
    }
    const meta = (result._meta !== null && typeof result._meta === 'object' ? result._meta : {}) as Record<string, unknown>;
    // A CreateTaskResult keeps its resultType "task"; every other result is "complete".
    const resultType = result.resultType === 'task' ? 'task' : 'complete';
    return JSON.stringify({ ...result, resultType, _meta: { ...meta, [kMetaServerInfo]: this.#serverInfo } });
  }
}
