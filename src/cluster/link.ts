/**
 * One node's link to Redis (created in the supervisor only when `cluster` is set): a command
 * connection every Redis-backed piece shares (`context`), a subscriber for the bus between nodes,
 * the link's state (up/down) with listeners, and reconnection with capped, jittered backoff.
 *
 * The command connection has no offline queue: while the link is down a command fails at once
 * (visible to the caller, counted) instead of waiting in memory for a Redis that may not come back.
 */
import { readFileSync } from 'node:fs';
import { Redis } from 'ioredis';
import { resubscribeOnReconnect } from './resubscribe.js';
import { SluiceError } from '../errors.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { Counter } from '../telemetry/counters.js';
import { encodeMessage, kMaxMessageBytes, readMessage } from './codec.js';
import type { BusMessage } from './codec.js';
import type { RedisContext } from './contract.js';
import { TokenBucket } from './token-bucket.js';

export type LinkLog = (level: 'debug' | 'info' | 'warn' | 'error', message: string) => void;

export interface ClusterLinkOptions {
  readonly redis: string;
  readonly keyPrefix: string;
  readonly nodeId: string;
  /** `rediss://`: a PEM file of the CA(s) to trust for the server's certificate. */
  readonly tlsCaFile?: string | undefined;
  readonly log: LinkLog;
  /** The supervisor's counters (its own block): the link counts its traffic and state there. */
  readonly counters: ServerCounters;
}

/** Reconnection backoff: 50 ms doubling to a 2 s cap, each wait jittered to 50–100 % of it. */
export function reconnectDelay(attempt: number, random: () => number = Math.random): number {
  const base = Math.min(2_000, 50 * 2 ** Math.min(Math.max(attempt - 1, 0), 6));
  return Math.round(base * (0.5 + random() * 0.5));
}

/**
 * Bytes a second the bus delivers to this node, at most (burst: one second's worth). Far above what
 * nodes send each other (cancels, list changes, relayed answers), it bounds what a flood can pile
 * up in the worker threads' queues; the excess is refused and counted like any refused message.
 */
const kInboundBytesPerSecond = 32 * 1024 * 1024;

/** At most one log line about refused bus messages per this period. */
const kRefusalLogMs = 60_000;

/** How long the first connection may take before start-up calls Redis unreachable. */
const kConnectTimeoutMs = 3_000;

/** A message as its sender gives it: the link adds the sender's node id. */
type Unsent<M> = M extends unknown ? Omit<M, 'f'> : never;
type Message = Unsent<BusMessage>;

export class ClusterLink {
  readonly context: RedisContext;
  /** The bus channel: `<prefix>bus`. */
  readonly channel: string;
  readonly #redis: Redis;
  readonly #subscriber: Redis;
  readonly #options: ClusterLinkOptions;
  readonly #stateListeners = new Set<(up: boolean) => void>();
  readonly #messageListeners = new Set<(message: BusMessage) => void>();
  #up = false;
  #subscribed = false;
  #closed = false;
  /** The server is a Redis Cluster node: refused, the link stays down (see `#refuseCluster`). */
  #refused: string | undefined;
  #inspected: Promise<string | undefined> | undefined;
  /** The last connection error, for the one log line a state change gets. */
  #lastError = '';
  /** Bytes the bus may still deliver now, and when that was computed. */
  /** Received bytes (a second's worth at most): what the link hands on is posted to worker threads, whose queues would otherwise grow at whatever rate a flood arrives. */
  readonly #inbound = new TokenBucket(kInboundBytesPerSecond);
  /** Refused bus messages since the last line about them, and when that line was written. */
  #refusals = 0;
  #refusalLoggedAt: number | undefined;

  constructor(options: ClusterLinkOptions) {
    this.#options = options;
    this.channel = `${options.keyPrefix}bus`;
    const common = {
      lazyConnect: true,
      connectTimeout: kConnectTimeoutMs,
      retryStrategy: (times: number) => reconnectDelay(times),
      // A command in flight when the link drops fails (once) rather than being retried for long.
      maxRetriesPerRequest: 1,
      ...(options.tlsCaFile === undefined ? {} : { tls: { ca: readCa(options.tlsCaFile) } }),
    };
    this.#redis = new Redis(options.redis, { ...common, enableOfflineQueue: false });
    // The subscriber queues its SUBSCRIBE until connected, and re-subscribes after each reconnect
    // (resubscribeOnReconnect: ioredis's autoResubscribe can leave an unhandled rejection).
    this.#subscriber = this.#redis.duplicate({ ...common, enableOfflineQueue: true, maxRetriesPerRequest: null, autoResubscribe: false });
    resubscribeOnReconnect(this.#subscriber, () => [this.channel]);
    this.context = { redis: this.#redis, keyPrefix: options.keyPrefix, nodeId: options.nodeId };
    for (const connection of [this.#redis, this.#subscriber]) {
      // ioredis emits 'error' for every failed attempt: keep the text for the state-change line.
      connection.on('error', (error: Error) => { this.#lastError = error.message; });
      connection.on('ready', () => this.#update());
      connection.on('close', () => this.#update());
      connection.on('end', () => this.#update());
    }
    // A degraded start learns what the server is only once it answers: a cluster node is refused then.
    this.#redis.once('ready', () => { void this.#refuseCluster(); });
    this.#subscriber.on('messageBuffer', (channel: Buffer, payload: Buffer) => this.#receive(channel, payload));
  }

  /** Whether the link is up (both connections ready, the bus subscribed). */
  get up(): boolean {
    return this.#up;
  }

  /** Told every state change (true: up). Returns the unsubscribe. */
  onState(listener: (up: boolean) => void): () => void {
    this.#stateListeners.add(listener);
    return () => this.#stateListeners.delete(listener);
  }

  /** Told every message of another node on the bus. */
  onMessage(listener: (message: BusMessage) => void): () => void {
    this.#messageListeners.add(listener);
    return () => this.#messageListeners.delete(listener);
  }

  /**
   * Connects both connections and subscribes to the bus; resolves when up. Rejects with
   * `cluster_unavailable` when Redis cannot be reached, unless `degraded`: then it resolves at once
   * and the link keeps trying in the background (down until then).
   */
  async connect(degraded: boolean): Promise<void> {
    // Rejects with `invalid_option` when the server is a Redis Cluster node (degraded or not, once it answers).
    const connecting = Promise.all([this.#redis.connect(), this.#subscriber.connect()]);
    // Queued (the subscriber keeps an offline queue, without a retry limit) until the subscriber
    // is connected, however long a degraded start waits; re-sent by ioredis after each reconnect.
    const subscribing = this.#subscriber.subscribe(this.channel).then(() => {
      this.#subscribed = true;
      this.#update();
    });
    // Handled either way: a degraded start sees a failure through the link's state instead.
    subscribing.catch(() => {});
    connecting.catch(() => {});
    if (degraded) {
      this.#update();
      return;
    }
    try {
      await Promise.all([connecting, subscribing]);
      const refusal = await this.#refuseCluster();
      if (refusal !== undefined) {
        await this.close();
        throw new SluiceError('invalid_option', refusal);
      }
    } catch (error) {
      if (error instanceof SluiceError && error.code === 'invalid_option') throw error;
      await this.close();
      throw new SluiceError('cluster_unavailable', `cluster: Redis at ${redactUrl(this.#options.redis)} cannot be reached: ${this.#lastError !== '' ? this.#lastError : error instanceof Error ? error.message : String(error)} (set cluster.startDegraded / --start-degraded to start without it)`, { cause: error });
    }
  }

  /**
   * Publishes a message to every other node; false when it was not sent (the link is down: the
   * message is dropped and counted, never queued).
   */
  publish(message: Message): boolean {
    const { counters } = this.#options;
    if (!this.#up) {
      counters.add(Counter.ClusterDropped);
      return false;
    }
    const bytes = encodeMessage({ ...message, f: this.#options.nodeId } as BusMessage);
    counters.add(Counter.ClusterSent);
    // A publish lost to a connection dropping just now is a drop as well (the state change follows).
    this.#redis.publish(this.channel, bytes).catch(() => counters.add(Counter.ClusterDropped));
    return true;
  }

  /** Disconnects both connections (pending commands fail). */
  async close(): Promise<void> {
    if (this.#closed) return;
    this.#closed = true;
    this.#stateListeners.clear();
    this.#messageListeners.clear();
    // QUIT only on a connection that can send it: one still connecting would queue it for ever.
    await Promise.allSettled([this.#redis, this.#subscriber].map((c) => (c.status === 'ready' ? c.quit() : undefined)));
    for (const connection of [this.#redis, this.#subscriber]) {
      // A TLS socket torn down mid-handshake (a refused certificate) can still emit its alert after
      // ioredis has let go of it: with no listener left that would be an uncaught exception.
      connection.stream?.on('error', () => {});
      connection.disconnect();
    }
  }

  #receive(channel: Buffer, payload: Buffer): void {
    if (channel.toString('latin1') !== this.channel) return;
    const { counters } = this.#options;
    // An oversized message is refused by readMessage below, without spending the budget.
    if (payload.length <= kMaxMessageBytes && !this.#inbound.take(payload.length)) {
      counters.add(Counter.ClusterRefused);
      this.#refusedMessage(`over the bus's budget of ${kInboundBytesPerSecond / 1048576} MiB a second`);
      return;
    }
    const message = readMessage(payload);
    if (typeof message === 'string') {
      counters.add(Counter.ClusterRefused);
      this.#refusedMessage(message);
      return;
    }
    if (message.f === this.#options.nodeId) return; // our own, back from Redis
    counters.add(Counter.ClusterReceived);
    for (const listener of this.#messageListeners) {
      try {
        listener(message);
      } catch (error) {
        this.#options.log('error', `sluice: cluster: handling a message from node ${message.f} failed: ${String(error)}`);
      }
    }
  }

  /**
   * A message refused by its bounds: counted by the caller; logged once, then at most once per
   * kRefusalLogMs with how many more there were (a flood of junk must not become a flood of lines).
   */
  #refusedMessage(why: string): void {
    this.#refusals++;
    const now = performance.now();
    if (this.#refusalLoggedAt !== undefined && now - this.#refusalLoggedAt < kRefusalLogMs) return;
    const more = this.#refusals - 1;
    this.#options.log('warn', `sluice: cluster: a message on the bus was refused (${why})${more > 0 ? `, and ${more} more since the last such line` : ''}; refusals are counted in sluice_cluster_messages_refused_total`);
    this.#refusalLoggedAt = now;
    this.#refusals = 0;
  }

  /**
   * Redis Cluster is refused: the task scripts read and write keys of one task, its owner's index
   * and the shared indexes together, which a cluster spreads over slots ("Script attempted to access
   * a non local key"), so every task create would fail while the node looked ready. Resolves with
   * the refusal (logged once, the link kept down) or undefined for a single Redis or Valkey.
   */
  #refuseCluster(): Promise<string | undefined> {
    return this.#inspected ??= this.#inspect();
  }

  async #inspect(): Promise<string | undefined> {
    let info: string;
    try {
      info = await this.#redis.info('cluster');
    } catch {
      return undefined; // not answered (e.g. INFO renamed): the scripts report any trouble themselves
    }
    if (!/^cluster_enabled:1\b/m.test(info)) return undefined;
    this.#refused = `cluster: Redis at ${redactUrl(this.#options.redis)} is a Redis Cluster node (cluster_enabled:1); Sluice needs one Redis or Valkey primary (replicas and Sentinel are fine): its scripts change keys that a cluster puts in different slots`;
    this.#options.log('error', `sluice: ${this.#refused}`);
    this.#update();
    return this.#refused;
  }

  /** Recomputes the state; a change is logged once, counted, and told to the listeners. */
  #update(): void {
    if (this.#closed) return;
    const up = this.#refused === undefined && this.#redis.status === 'ready' && this.#subscriber.status === 'ready' && this.#subscribed;
    const { counters, log } = this.#options;
    counters.set(Counter.ClusterUp, up ? 1 : 0);
    if (up === this.#up) return;
    this.#up = up;
    counters.add(Counter.ClusterLinkChanges);
    if (up) log('info', `sluice: cluster link to Redis at ${redactUrl(this.#options.redis)} is up (node ${this.#options.nodeId})`);
    else log('warn', `sluice: cluster link to Redis at ${redactUrl(this.#options.redis)} is down${this.#lastError === '' ? '' : ` (${this.#lastError})`}: serving what this node can alone, reconnecting`);
    for (const listener of this.#stateListeners) listener(up);
  }
}

function readCa(file: string): Buffer {
  try {
    return readFileSync(file);
  } catch (error) {
    throw new SluiceError('invalid_option', `cluster.tlsCaFile ${JSON.stringify(file)} cannot be read: ${error instanceof Error ? error.message : String(error)}`);
  }
}

/** The URL without its password, for logs and errors. */
export function redactUrl(url: string): string {
  return url.replace(/^(rediss?:\/\/)([^@/]*)@/, (_all, scheme: string, auth: string) => `${scheme}${auth.includes(':') ? `${auth.slice(0, auth.indexOf(':'))}:***` : '***'}@`);
}
