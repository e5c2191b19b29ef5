/**
 * The readiness word's bits, declared once: the owning thread writes them into shared memory
 * (`SharedState.readiness[0]`, 0: ready) and every HTTP thread's /readyz and initialize read them.
 */
export const kNotReady = {
  /** Shutting down: the load balancer should stop sending traffic (/readyz 503, initialize 503). */
  Draining: 1,
  /** Cluster mode: the link to Redis is down (what needs another node fails; the node stays ready). */
  ClusterDown: 2,
} as const;

/** Whether the readiness word says the server is shutting down. */
export function isDraining(readiness: Int32Array | undefined): boolean {
  return readiness !== undefined && (Atomics.load(readiness, 0) & kNotReady.Draining) !== 0;
}
