/**
 * Cluster mode: many Sluice nodes behind one load balancer, sharing through Redis (or Valkey) what
 * must cross nodes. Opt-in (`createServer({ cluster: { redis } })`, `sluice serve --redis URL`);
 * without it no Redis code is loaded or on any request's path.
 *
 * The pieces, each in its own file of src/cluster/:
 * - the link (one node's Redis connections, state, reconnection, the message bus between nodes);
 * - the session directory (legacy sessions valid on every node);
 * - the Redis task store (tasks readable, answerable and cancellable from every node);
 * - the requestState key ring (no Redis needed).
 * Redis connections live in the supervisor (main thread); HTTP workers reach them through it.
 */

/** `createServer({ cluster })`. */
export interface ClusterOptions {
  /** `redis://[user:pass@]host:port[/db]` (or `rediss://`). Valkey works the same. */
  readonly redis: string;
  /** Prefix of every key and channel, so several clusters can share one Redis. Default `sluice:`. */
  readonly keyPrefix?: string | undefined;
  /**
   * Start even when Redis cannot be reached (degraded: what needs another node fails visibly until
   * the link comes up). Default false: `listen()` rejects with `cluster_unavailable`.
   */
  readonly startDegraded?: boolean | undefined;
  /** This node's id in keys and messages; default random (128 bits, base64url). */
  readonly nodeId?: string | undefined;
  /**
   * A PEM file of the CA(s) that signed the Redis server's certificate (`rediss://` only), e.g. a
   * self-signed one; without it the system's CAs (and NODE_EXTRA_CA_CERTS) are trusted.
   */
  readonly tlsCaFile?: string | undefined;
}

/** What every Redis-backed piece gets: the node's command connection and where its keys go. */
export interface RedisContext {
  /** The node's command connection (ioredis). A piece that subscribes uses `redis.duplicate()`. */
  readonly redis: import('ioredis').Redis;
  /** Key and channel prefix, e.g. `sluice:`. */
  readonly keyPrefix: string;
  readonly nodeId: string;
}
