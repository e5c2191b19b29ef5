import { threadId } from 'node:worker_threads';
import type { ClientResponse, EngineConfig } from '../contract.js';
import type { Run } from '../run.js';
import { ErrorCode, ProtocolError, notificationBody } from '../wire.js';

/** Longest response text relayed between threads (a client's answer to one of our requests). */
const kMaxRelayedResponse = 1024 * 1024;

interface Pending {
  resolve(result: unknown): void;
  reject(error: Error): void;
  readonly scope: string;
  /** The run that asked and what (its span notes the answer). */
  readonly run: Run;
  readonly method: string;
  readonly timer: ReturnType<typeof setTimeout>;
}

/** `s<threadId>-<n>`, or in cluster mode `s<nodeId>.<threadId>-<n>` (node ids have no dot). */
const kIdPattern = /^s(?:([A-Za-z0-9_-]{1,64})\.)?(\d+)-\d+$/;

/**
 * Requests this thread sends clients (legacy era, on a request's stream) and the answers to them.
 * Ids name this thread, `s<threadId>-<n>`, so an answer POSTed to another worker finds its way here;
 * in cluster mode they name the node too, `s<nodeId>.<threadId>-<n>`, so an answer POSTed to
 * another node does.
 */
export class ClientRequests {
  readonly #pending = new Map<string, Pending>();
  readonly #forward: EngineConfig['forwardResponse'];
  readonly #node: string | undefined;
  readonly #prefix: string;
  readonly #timeoutMs: number;
  #next = 0;

  constructor(forward: EngineConfig['forwardResponse'], nodeId: string | undefined, timeoutMs: number) {
    this.#forward = forward;
    this.#node = nodeId;
    this.#timeoutMs = timeoutMs;
    this.#prefix = nodeId === undefined ? `s${threadId}-` : `s${nodeId}.${threadId}-`;
  }

  /** Sends a request to the client of `run` (on its stream) and waits for the response. */
  send(run: Run, method: string, params: Record<string, unknown>): Promise<unknown> {
    const id = `${this.#prefix}${++this.#next}`;
    // A traced request's question carries its span's context, so the client's work on it joins the trace.
    const trace = run.traceContext();
    if (trace !== undefined) params = { ...params, _meta: { ...(params._meta as Record<string, unknown> | undefined), ...trace } };
    return new Promise((resolve, reject) => {
      // A client that never answers (it ignored the question, its session was deleted or expired)
      // must not hold the request, its row and its tool for ever.
      const timer = setTimeout(() => this.#timedOut(id), this.#timeoutMs);
      timer.unref();
      this.#pending.set(id, { resolve, reject, scope: run.info.scope, run, method, timer });
      run.awaitAnswer(id);
      run.notify(`{"jsonrpc":"2.0","id":${JSON.stringify(id)},"method":${JSON.stringify(method)},"params":${JSON.stringify(params)}}`);
    });
  }

  /** Cancels the run of every request still waiting for an answer (see Engine.cancelAwaitingClient). */
  cancelWaiting(reason: string): number {
    const runs = new Set<Run>();
    for (const pending of this.#pending.values()) runs.add(pending.run);
    let count = 0;
    for (const run of runs) if (run.cancelByServer(reason)) count++;
    return count;
  }

  /** Drops a request that will never be answered (its run ended). */
  abandon(id: string, error: Error): void {
    this.#take(id)?.reject(error);
  }

  /** The pending request `id` (asked of `scope`, when given), taken out with its timer stopped, or undefined. */
  #take(id: string, scope?: string): Pending | undefined {
    const pending = this.#pending.get(id);
    if (pending === undefined || (scope !== undefined && pending.scope !== scope)) return undefined;
    this.#pending.delete(id);
    clearTimeout(pending.timer);
    return pending;
  }

  /** No answer within the timeout: the client is told the question is withdrawn, the asker gets -31002. */
  #timedOut(id: string): void {
    const pending = this.#take(id);
    if (pending === undefined) return;
    const reason = `the client did not answer ${pending.method} within ${this.#timeoutMs} ms`;
    pending.run.notify(notificationBody('notifications/cancelled', { requestId: id, reason }));
    pending.run.spanEvent('mcp.client_response.timed_out', { 'jsonrpc.request.id': id, 'mcp.method.name': pending.method });
    pending.reject(new ProtocolError(ErrorCode.ClientAnswerTimeout, reason));
  }

  /**
   * A response the client POSTed (or wrote on stdio): settles our waiting request if it is this
   * thread's and the sender's scope is the one we asked; forwards it if another thread asked.
   */
  answer(response: ClientResponse, scope: string, via?: string): void {
    const id = response.id;
    if (typeof id !== 'string') return;
    const m = kIdPattern.exec(id);
    if (m === null) return;
    // An id naming a node while this one is not in cluster mode (or none while it is) was never ours.
    const node = m[1];
    if ((node === undefined) !== (this.#node === undefined)) return;
    const owner = Number(m[2]);
    const elsewhere = node !== undefined && node !== this.#node;
    if (owner !== threadId || elsewhere) {
      // Relayed as bounded JSON text: a hostile answer (say, arrays nested thousands deep) must not
      // become a structured clone another thread fails to handle.
      let text: string;
      try {
        text = JSON.stringify({ id, result: response.result, error: response.error });
      } catch {
        return; // too deep to serialise: dropped, as any malformed answer is
      }
      if (text.length <= kMaxRelayedResponse) this.#forward?.(owner, text, scope, elsewhere ? node : undefined);
      return;
    }
    const pending = this.#take(id, scope);
    if (pending === undefined) return; // unknown, late, or someone else's
    pending.run.spanEvent('mcp.client_response.received', via === undefined ? { 'jsonrpc.request.id': id, 'mcp.method.name': pending.method } : { 'jsonrpc.request.id': id, 'mcp.method.name': pending.method, 'sluice.relayed_by': via });
    if (response.error !== undefined) {
      const e = response.error as { code?: unknown; message?: unknown };
      pending.reject(new ProtocolError(typeof e?.code === 'number' ? e.code : ErrorCode.InternalError, typeof e?.message === 'string' ? e.message : 'the client answered with an error'));
    } else {
      pending.resolve(response.result);
    }
  }

  /** A relayed response (JSON text from another thread; `via`: which thread or node received it). */
  relayed(text: string, scope: string, via?: string): void {
    let response: ClientResponse;
    try {
      response = JSON.parse(text) as ClientResponse;
    } catch {
      return;
    }
    if (response !== null && typeof response === 'object') this.answer(response, scope, via);
  }
}
