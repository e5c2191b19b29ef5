/**
 * The supervisor's side of cluster mode: the link to Redis, and what crosses nodes over its bus —
 * legacy cancels for requests not running here, answers to another node's server→client requests,
 * list changes. Loaded with `await import()` only when `cluster` is set: a single node never loads
 * Redis code.
 *
 * Cancels are fanned out, not looked up: a directory of in-flight requests would cost a Redis write
 * per request (and a delete), while a cancel is rare; fan-out costs nothing until a cancel misses
 * locally, and each node applies it with the same scope check as a local cancel.
 */
import { ClusterLink } from '../cluster/link.js';
import { TokenBucket } from '../cluster/token-bucket.js';
import type { BusMessage, CancelMessage } from '../cluster/codec.js';
import type { RedisContext } from '../cluster/contract.js';
import type { Registry } from '../registry/index.js';
import { validRequestId } from '../registry/index.js';
import { kNotReady } from '../transport/http/readiness.js';
import type { ServerLogSink, ResolvedCluster } from './options.js';
import { Counter } from '../telemetry/counters.js';
import { ServerTracer } from '../telemetry/tracing/server.js';
import type { CarriedTrace } from '../telemetry/tracing/otel.js';
import type { ServerCounters } from '../telemetry/counters.js';
import type { ListKind } from '../tools/context.js';

/** Cross-node cancels one scope may publish per second from one node (and its burst). */
export const kCancelsPerSecond = 100;
/** Scopes whose cancel rate is tracked at once; past it, idle ones are forgotten, then new ones refused. */
const kMaxTrackedScopes = 10_000;

export interface ClusterNodeDeps {
  readonly cluster: ResolvedCluster;
  readonly registry: Registry;
  /** The supervisor's counters (its own block). */
  readonly counters: ServerCounters;
  readonly log: ServerLogSink;
  /** The shared readiness word /readyz reads. */
  readonly readiness: Int32Array;
  /** Hands another node's relayed answer to this node's thread `thread` (false: no such thread); `via` names that node. */
  deliverAnswer(thread: number, text: string, scope: string, via: string): boolean;
  /** Another node's list changed: tell every thread here. */
  listChanged(kind: ListKind): void;
}

export class ClusterNode {
  readonly link: ClusterLink;
  readonly #deps: ClusterNodeDeps;
  readonly #buckets = new Map<string, TokenBucket>();
  /** Spans of the cancels other nodes relay here, when the `tracing` module registered a provider in this thread. */
  readonly #spans = ServerTracer.create('tcp');

  static async start(deps: ClusterNodeDeps): Promise<ClusterNode> {
    const node = new ClusterNode(deps);
    try {
      await node.link.connect(deps.cluster.startDegraded);
    } catch (error) {
      Atomics.and(deps.readiness, 0, ~kNotReady.ClusterDown);
      throw error;
    }
    if (!node.link.up) deps.log('warn', `sluice: cluster: started degraded, Redis not reachable yet (node ${deps.cluster.nodeId}); /readyz says "ready, cluster link down" until it is`);
    return node;
  }

  private constructor(deps: ClusterNodeDeps) {
    this.#deps = deps;
    const { cluster, counters, log, readiness } = deps;
    // The link's state, for /readyz's body (a down link leaves the node ready: Redis is shared, so
    // a 503 would take every node out of the balancer at once).
    Atomics.or(readiness, 0, kNotReady.ClusterDown);
    this.link = new ClusterLink({ redis: cluster.redis, keyPrefix: cluster.keyPrefix, nodeId: cluster.nodeId, tlsCaFile: cluster.tlsCaFile, log, counters });
    this.link.onState((up) => {
      if (up) Atomics.and(readiness, 0, ~kNotReady.ClusterDown);
      else Atomics.or(readiness, 0, kNotReady.ClusterDown);
    });
    this.link.onMessage((message) => this.#receive(message));
  }

  get context(): RedisContext {
    return this.link.context;
  }

  /**
   * A cancel no thread here had in flight: to the other nodes, at most kCancelsPerSecond per scope
   * (a client sending a thousand ids must not turn into a thousand messages to every node).
   */
  cancel(requestId: string | number, reason: string | undefined, scope: string, trace?: CarriedTrace): void {
    const { counters } = this.#deps;
    if (!this.#take(scope)) {
      counters.add(Counter.ClusterCancelsLimited);
      return;
    }
    if (!this.link.publish({ k: 'c', s: scope, i: requestId, r: reason, p: trace?.traceparent, q: trace?.tracestate })) counters.add(Counter.ClusterCrossNodeFailures);
  }

  /** A client's answer to node `node`'s request, POSTed here: relayed to that node. */
  answer(node: string, thread: number, text: string, scope: string): void {
    if (!this.link.publish({ k: 'a', n: node, t: thread, s: scope, x: text })) this.#deps.counters.add(Counter.ClusterCrossNodeFailures);
  }

  /** A list changed on this node: to the other nodes' listen streams. */
  listChanged(kind: ListKind): void {
    this.link.publish({ k: 'l', l: kind });
  }

  async close(): Promise<void> {
    await this.link.close();
  }

  #receive(message: BusMessage): void {
    const { counters } = this.#deps;
    switch (message.k) {
      case 'c': {
        const spans = this.#spans;
        const span = spans?.cancelRelayed(message.p === undefined ? undefined : { traceparent: message.p, tracestate: message.q }, message.i, message.f, this.#deps.cluster.nodeId);
        const outcome = this.#applyCancel(message);
        if (span !== undefined) spans!.endCancel(span, outcome);
        return;
      }
      case 'a':
        if (message.n !== this.#deps.cluster.nodeId) return;
        if (!this.#deps.deliverAnswer(message.t, message.x, message.s, `node ${message.f}`)) counters.add(Counter.ClusterRefused);
        return;
      case 'l':
        this.#deps.listChanged(message.l);
    }
  }

  /** The same rule as a local cancel: in flight in the sender's own scope, or nothing. */
  #applyCancel(message: CancelMessage): 'applied' | 'not_in_flight' | 'refused' {
    const { registry, log } = this.#deps;
    if (!validRequestId(message.i) || !registry.inFlight(message.i, message.s)) return 'not_in_flight';
    const result = registry.cancel(message.i, message.r, message.s);
    if (result.ok) return 'applied';
    log('warn', `sluice: cancellation (from node ${message.f}) refused for scope ${JSON.stringify(message.s)}: ${result.error}`);
    return 'refused';
  }

  /** A bucket per scope: refills kCancelsPerSecond a second, holds at most that many. */
  #take(scope: string): boolean {
    const now = performance.now();
    let bucket = this.#buckets.get(scope);
    if (bucket === undefined) {
      if (this.#buckets.size >= kMaxTrackedScopes) this.#forgetIdle(now);
      if (this.#buckets.size >= kMaxTrackedScopes) return false;
      bucket = new TokenBucket(kCancelsPerSecond, now);
      this.#buckets.set(scope, bucket);
    }
    return bucket.take(1, now);
  }

  /** Drops the buckets that have refilled (idle a second or more): they would start full anyway. */
  #forgetIdle(now: number): void {
    for (const [scope, bucket] of this.#buckets) if (now - bucket.at >= 1000) this.#buckets.delete(scope);
  }
}
