import { randomBytes } from 'node:crypto';
import { availableParallelism } from 'node:os';
import { resolve as resolvePath } from 'node:path';
import { pathToFileURL } from 'node:url';
import { SluiceError } from '../errors.js';
import { boolean, integer, oneOf } from '../validate.js';
import type { RegistryOptions } from '../registry/index.js';
import { kJanitorBounds } from '../registry/janitor.js';
import { resolveTaskLimits } from '../tasks/limits.js';
import type { TaskLimits, TaskStore } from '../tasks/store.js';
import type { Tool } from '../tools/define.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import type { ClusterOptions } from '../cluster/contract.js';
import { resolveAuth } from '../auth/options.js';
import type { ResolvedAuth } from '../auth/options.js';
import type { AuthOptions } from '../auth/contract.js';

/**
 * Severity of a line of the server's own log (for its operator), least severe first. Not the MCP
 * log levels a tool sends its client (`LogLevel`, RFC 5424's eight, in tools/context.ts).
 */
export type ServerLogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The server log levels, least severe first. */
export const kServerLogLevels: readonly ServerLogLevel[] = Object.freeze(['debug', 'info', 'warn', 'error'] as const);

/** Where server log lines go (ServerHooks.log, StdioServerOptions.log). */
export type ServerLogSink = (level: ServerLogLevel, message: string) => void;

/**
 * The one place log lines are filtered by level: a sink that passes on lines at `threshold` or more
 * severe. Decided once (pino): at 'debug' the sink itself is returned.
 */
export function filterLog(threshold: ServerLogLevel, sink: ServerLogSink): ServerLogSink {
  const min = kServerLogLevels.indexOf(threshold);
  if (min <= 0) return sink;
  return (level, message) => { if (kServerLogLevels.indexOf(level) >= min) sink(level, message); };
}

/** Options of `createServer`. Every field but `tools` has a default. */
export interface ServerOptions {
  /**
   * The tools: an array (served in this thread: one HTTP thread, no workers), or a module
   * (path or URL) whose default export (or `tools` export) is the array, which every HTTP worker
   * and the pool load. `pool: true` tools need the module form.
   */
  tools: readonly Tool[] | string | URL;
  /** Default '127.0.0.1': bind to loopback unless told otherwise. */
  host?: string;
  /** Default 3000; 0 picks a free port. */
  port?: number;
  /** HTTP worker threads (module form only). Default: available parallelism. */
  workers?: number;
  /** 'auto' (default): uWebSockets.js, or node:http with a loud warning if uWS cannot load natively. */
  http?: 'auto' | 'uws' | 'node';
  /** MCP endpoint path. Default '/mcp'. */
  path?: string;
  /** Legacy-era sessions (MCP-Session-Id). Default true. */
  sessions?: boolean;
  /** Idle time after which a session expires (404). Default 30 minutes. */
  sessionIdleMs?: number;
  /** Sessions the shared table is sized for (it holds up to a third more before refusing new ones with 503). Default 10 000. */
  maxSessions?: number;
  /** Principal of a request (in-process form; in the module form, export `authenticate` from the tools module). */
  authenticate?: Authenticate;
  /**
   * OAuth 2.1 resource server (MCP authorization, HTTP only): every MCP request must carry a bearer
   * token, verified before anything else (401/403 with `WWW-Authenticate` otherwise); its subject
   * becomes the principal (`principal:<sub>`). Protected Resource Metadata is served at
   * `/.well-known/oauth-protected-resource[<path>]`. Exclusive with `authenticate`. See SECURITY.md.
   */
  auth?: AuthOptions;
  /** Take the client address from X-Forwarded-For (last hop). Only behind a proxy you run. Default false. */
  trustProxy?: boolean;
  /** Origins allowed besides loopback ones. */
  allowedOrigins?: readonly string[];
  /**
   * Host header names served (DNS-rebinding protection). Bound to loopback, only loopback names
   * are served unless listed here; bound elsewhere, any Host is served unless this list is given.
   */
  allowedHosts?: readonly string[];
  /**
   * Live legacy sessions one client (its principal, else its address bucket) may hold, node-wide.
   * Past it, initialize gets 429 + Retry-After. Default 1000.
   */
  maxSessionsPerClient?: number;
  /**
   * Requests one client (its principal, else its address bucket) may have running on one HTTP
   * worker (so node-wide at most workers × this). Past it, 429 + Retry-After. Default 1024.
   */
  maxInFlightPerClient?: number;
  /**
   * Bytes one connection may hold unsent (a client that stops reading its stream). Past it,
   * progress notifications coalesce (only the newest is kept) and log notifications are dropped,
   * both counted in /metrics. Default 1 MiB.
   */
  maxStreamBufferBytes?: number;
  /**
   * How long a final response may wait for such a reader to make room before the connection is
   * closed (a disconnect: in the 2026-07-28 era, the request's cancel). Default 10 s.
   */
  slowReaderTimeoutMs?: number;
  /**
   * CORS for browser-based clients: requests from these exact origins are allowed (they pass the
   * Origin check too), preflights (`OPTIONS`) get 204, and responses expose `Mcp-Session-Id` and
   * `MCP-Protocol-Version`. Default: off (no `Access-Control-*` headers, `OPTIONS` is 405).
   */
  cors?: { origins: readonly string[] };
  /** Largest request body. Default 4 MiB (413 beyond). */
  maxBodyBytes?: number;
  /** Time to receive a whole body after the headers. Default 30 s (408). */
  bodyTimeoutMs?: number;
  /** How long a cancelled request's tool may run on before it is killed. Default 5000 ms. */
  streamCancelTimeoutMs?: number;
  /** How long a request the server sends the client (ctx.request, a legacy input round) waits for its answer. Default 300 000 ms. */
  clientRequestTimeoutMs?: number;
  /** Serve Prometheus text at GET /metrics. Default false. */
  metrics?: boolean;
  /**
   * Serve /metrics on a listener of its own at this port (0: any free port, see
   * `ServerAddress.metricsUrl`) instead of on the MCP port, which then answers 404 for it. Implies
   * `metrics`. Default: unset (/metrics, when on, is served on the MCP port).
   */
  metricsPort?: number;
  /** The address the separate /metrics listener binds to. Default 127.0.0.1. Needs `metricsPort`. */
  metricsHost?: string;
  /** Registry bounds: rows in all, rows per client scope, id and reason sizes (docs/registry.md). */
  registry?: RegistryOptions;
  /** Cancellation janitor: `false`, or its interval and TTL. Default every 60 s, TTL 5 min. */
  janitor?: false | { intervalMs?: number; ttlMs?: number };
  /** Grace period for in-flight requests at shutdown. Default 5000 ms. */
  shutdownGraceMs?: number;
  /** Pool threads per HTTP worker for `pool: true` tools. Default 1. */
  poolThreads?: number;
  /** Legacy era: treat a disconnect as a cancel (the spec says SHOULD NOT). Default false. */
  cancelOnDisconnect?: boolean;
  /** Add a `sluice-worker` header naming the serving thread. Default false. */
  exposeWorker?: boolean;
  /**
   * Forward `sluice:request:stop` from the HTTP workers to this thread's channel too (one message
   * per request, so off by default; the other events are always forwarded). Default false.
   */
  forwardRequestStop?: boolean;
  /**
   * OpenTelemetry: a module (path or URL) each serving thread (every HTTP worker, the stdio
   * thread) imports once at start, before its first request. It registers an SDK's tracer
   * provider (tracer providers are per thread); with one registered, every request gets a SERVER
   * span. Without it, or without `@opentelemetry/api` installed, no span is made. See
   * docs/deployment.md, "Traces and latency histograms". Default: unset.
   */
  tracing?: string | URL;
  /**
   * Least severe log line written (to ServerHooks.log, else stderr). Default 'warn'. Levels:
   * 'error' — the server itself failed (a worker crashed, a request could not be answered);
   * 'warn' — a tool (inline or in the pool), resource or prompt handler threw (logged with its name: the client got
   * `isError` content, the operator should still see it), refused cancels, degraded adapters;
   * 'info' — lifecycle (what is served, shutdown); 'debug' — per-request detail.
   */
  logLevel?: ServerLogLevel;
  serverInfo?: { name: string; version: string };
  instructions?: string;
  /**
   * Tasks (long-running tool calls a client polls, answers and cancels). On by default, kept in
   * memory by the main thread (every HTTP worker reaches the same tasks); `false` turns them off
   * (no task support is declared). See SECURITY.md, "Tasks: bounds".
   */
  tasks?: false | TasksOptions;
  /**
   * Cluster mode (HTTP only): several nodes behind one load balancer share cancels, answers to
   * server→client requests, list changes (and, with the other cluster pieces, sessions and tasks)
   * through Redis. Off by default: nothing of Redis is loaded. See docs/cluster.md.
   */
  cluster?: ClusterOptions;
  /**
   * Keys that seal 2026-07-28 `requestState`, newest first: states are sealed with the first and
   * opened with any (so a key can be rotated in: [new, old], then [new]). Each at least 32 bytes:
   * a Uint8Array, or a string in base64 or base64url. Give every node of a cluster the same ring.
   * Default: a random key per process — then a restarted node, or a sibling node, refuses a
   * retry's state (the client starts the request over).
   */
  requestStateKeys?: readonly (string | Uint8Array)[];
}

/** The `tasks` option of `createServer` (and of the stdio server). */
export interface TasksOptions {
  /**
   * Where tasks live. Default: a `MemoryTaskStore` with `limits`. Another store (Redis, a database)
   * runs in the main thread as the default would, and the server closes it when it closes. Its own
   * bounds are its own: `limits` then only sets what the protocol layer reads (`pollIntervalMs`).
   */
  store?: TaskStore;
  /**
   * Bounds of the default store, each a positive integer (defaults in brackets):
   * `maxTasks` tasks kept node-wide, finished or not [10 000]; `maxTasksPerOwner` per session,
   * principal or anonymous client [100] (past either, the call is refused);
   * `maxTaskBytes` of one task's result, error and input requests/answers as JSON [1 MiB] and
   * `maxStoredBytes` of all of them [256 MiB] (a task that would pass either fails instead, its
   * payload dropped); `defaultTtlMs` lifetime when the client asks none [10 min] and `maxTtlMs`
   * longest granted [1 h] (a task is deleted at its end, failed first if unfinished);
   * `pollIntervalMs` suggested to clients [250 ms].
   */
  limits?: Partial<TaskLimits>;
}

/** Options with defaults applied, structured-cloneable (the functions and objects are in ServerConfig). */
export interface ResolvedOptions {
  host: string;
  port: number;
  workers: number;
  http: 'auto' | 'uws' | 'node';
  path: string;
  sessions: boolean;
  sessionIdleMs: number;
  maxSessions: number;
  trustProxy: boolean;
  allowedOrigins: readonly string[];
  allowedHosts: readonly string[];
  maxSessionsPerClient: number;
  maxInFlightPerClient: number;
  maxStreamBufferBytes: number;
  slowReaderTimeoutMs: number;
  cors: { origins: readonly string[] } | undefined;
  maxBodyBytes: number;
  bodyTimeoutMs: number;
  streamCancelTimeoutMs: number;
  clientRequestTimeoutMs: number;
  metrics: boolean;
  /** The separate /metrics listener, when `metricsPort` was given. */
  metricsListener: { host: string; port: number } | undefined;
  janitor: false | { intervalMs: number; ttlMs: number };
  shutdownGraceMs: number;
  poolThreads: number;
  cancelOnDisconnect: boolean;
  exposeWorker: boolean;
  forwardRequestStop: boolean;
  logLevel: ServerLogLevel;
  serverInfo: { name: string; version: string };
  instructions: string | undefined;
  /** Off, or the bounds (the store, not cloneable, is in ServerConfig.taskStore). */
  tasks: false | { limits: TaskLimits };
  /** Cluster mode, resolved (node id picked); undefined: one node alone. */
  cluster: ResolvedCluster | undefined;
  /** The requestState key ring (newest first); undefined: a random key per process. */
  requestStateKeys: readonly Uint8Array[] | undefined;
  /** Bearer-token checks (`verify`, a function, is in ServerConfig.verifyToken); undefined: off. */
  auth: ResolvedAuth | undefined;
  /** Registry bounds as given (the registry checks them when it is made); undefined: its defaults. */
  registry: RegistryOptions | undefined;
  /** The `tracing` module as a URL; undefined: none. */
  tracing: string | undefined;
}

/** `cluster` with its defaults. */
export interface ResolvedCluster {
  readonly redis: string;
  readonly keyPrefix: string;
  readonly startDegraded: boolean;
  readonly nodeId: string;
  /** `rediss://` only: the CA file trusted for the Redis server's certificate. */
  readonly tlsCaFile: string | undefined;
}

/**
 * The defaults and bounds of every integer option, in one table: `[default, min, max]`.
 * (`workers` defaults to the machine's parallelism, filled in by `resolveOptions`.)
 */
export const kIntegerOptions = {
  port: [3000, 0, 65535],
  workers: [0, 1, 256],
  sessionIdleMs: [30 * 60_000, 1, 2 ** 31 - 1],
  maxSessions: [10_000, 1, 10_000_000],
  maxSessionsPerClient: [1000, 1, 10_000_000],
  maxInFlightPerClient: [1024, 1, 10_000_000],
  maxStreamBufferBytes: [1024 * 1024, 1024, 1 << 30],
  slowReaderTimeoutMs: [10_000, 1, 2 ** 31 - 1],
  maxBodyBytes: [4 * 1024 * 1024, 1, 1 << 30],
  bodyTimeoutMs: [30_000, 1, 2 ** 31 - 1],
  streamCancelTimeoutMs: [5_000, 0, 2 ** 31 - 1],
  clientRequestTimeoutMs: [300_000, 1, 2 ** 31 - 1],
  shutdownGraceMs: [5_000, 0, 2 ** 31 - 1],
  /** Pool threads per HTTP worker (also what bounds the stdio server's threads). */
  poolThreads: [1, 1, 64],
  // The registry's own janitor bounds, so the two checks cannot drift.
  'janitor.intervalMs': kJanitorBounds.intervalMs,
  'janitor.ttlMs': kJanitorBounds.ttlMs,
} as const satisfies Record<string, readonly [number, number, number]>;

/** The default of every boolean option. */
export const kBooleanOptions = {
  sessions: true,
  trustProxy: false,
  metrics: false,
  cancelOnDisconnect: false,
  exposeWorker: false,
  forwardRequestStop: false,
} as const satisfies Record<string, boolean>;

const kHttpKinds: readonly ('auto' | 'uws' | 'node')[] = ['auto', 'uws', 'node'];

function int(name: keyof typeof kIntegerOptions, value: unknown, fallback: number = kIntegerOptions[name][0]): number {
  const [, min, max] = kIntegerOptions[name];
  return integer(name, value, fallback, min, max);
}

function bool(name: keyof typeof kBooleanOptions, value: unknown): boolean {
  return boolean(name, value, kBooleanOptions[name]);
}

function metricsListener(options: ServerOptions): { host: string; port: number } | undefined {
  if (options.metricsPort === undefined) {
    if (options.metricsHost !== undefined) throw new SluiceError('invalid_option', 'metricsHost needs metricsPort (the port of the separate /metrics listener)');
    return undefined;
  }
  const host = options.metricsHost ?? '127.0.0.1';
  if (typeof host !== 'string' || host === '') throw new SluiceError('invalid_option', `metricsHost must be a host name or address, got ${JSON.stringify(host) ?? String(host)}`);
  return { host, port: integer('metricsPort', options.metricsPort, 0, 0, 65535) };
}

export function resolveOptions(options: ServerOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') throw new SluiceError('invalid_option', 'options must be an object');
  const http = oneOf('http', options.http, 'auto', kHttpKinds);
  const janitor = options.janitor === false ? false : {
    intervalMs: int('janitor.intervalMs', options.janitor?.intervalMs),
    ttlMs: int('janitor.ttlMs', options.janitor?.ttlMs),
  };
  const logLevel = oneOf('logLevel', options.logLevel, 'warn', kServerLogLevels);
  const path = options.path ?? '/mcp';
  const auth = resolveAuth(options.auth);
  if (typeof path !== 'string' || !path.startsWith('/')) throw new SluiceError('invalid_option', `path must start with '/', got ${String(path)}`);
  return {
    host: typeof options.host === 'string' ? options.host : '127.0.0.1',
    port: int('port', options.port),
    workers: int('workers', options.workers, availableParallelism()),
    http,
    path,
    sessions: bool('sessions', options.sessions),
    sessionIdleMs: int('sessionIdleMs', options.sessionIdleMs),
    maxSessions: int('maxSessions', options.maxSessions),
    trustProxy: bool('trustProxy', options.trustProxy),
    allowedOrigins: Array.isArray(options.allowedOrigins) ? options.allowedOrigins.map(String) : [],
    allowedHosts: Array.isArray(options.allowedHosts) ? options.allowedHosts.map((h) => String(h).toLowerCase()) : [],
    maxSessionsPerClient: int('maxSessionsPerClient', options.maxSessionsPerClient),
    maxInFlightPerClient: int('maxInFlightPerClient', options.maxInFlightPerClient),
    cors: resolveCors(options.cors),
    maxStreamBufferBytes: int('maxStreamBufferBytes', options.maxStreamBufferBytes),
    slowReaderTimeoutMs: int('slowReaderTimeoutMs', options.slowReaderTimeoutMs),
    maxBodyBytes: int('maxBodyBytes', options.maxBodyBytes),
    bodyTimeoutMs: int('bodyTimeoutMs', options.bodyTimeoutMs),
    streamCancelTimeoutMs: int('streamCancelTimeoutMs', options.streamCancelTimeoutMs),
    clientRequestTimeoutMs: int('clientRequestTimeoutMs', options.clientRequestTimeoutMs),
    metrics: bool('metrics', options.metrics) || options.metricsPort !== undefined,
    metricsListener: metricsListener(options),
    janitor,
    shutdownGraceMs: int('shutdownGraceMs', options.shutdownGraceMs),
    poolThreads: int('poolThreads', options.poolThreads),
    cancelOnDisconnect: bool('cancelOnDisconnect', options.cancelOnDisconnect),
    exposeWorker: bool('exposeWorker', options.exposeWorker),
    forwardRequestStop: bool('forwardRequestStop', options.forwardRequestStop),
    logLevel,
    serverInfo: options.serverInfo ?? { name: 'sluice', version: '0.1.0' },
    instructions: options.instructions,
    tasks: resolveTasks(options.tasks),
    cluster: resolveCluster(options.cluster),
    requestStateKeys: resolveStateKeys(options.requestStateKeys),
    auth,
    registry: options.registry === undefined ? undefined : { ...options.registry },
    tracing: resolveTracing(options.tracing),
  };
}

/** The `tracing` module's URL (a path is resolved from the working directory). */
function resolveTracing(spec: unknown): string | undefined {
  if (spec === undefined) return undefined;
  if (spec instanceof URL) return spec.href;
  if (typeof spec !== 'string' || spec === '') throw new SluiceError('invalid_option', 'tracing must be a module path or URL');
  // A URL has a scheme of two letters or more (a one-letter "scheme" is a Windows drive).
  return /^[a-z][a-z0-9+.-]+:/i.test(spec) ? spec : pathToFileURL(resolvePath(process.cwd(), spec)).href;
}

/** Node ids appear in keys, bus messages and server→client request ids (`s<nodeId>.<thread>-<n>`): no dots or slashes. */
const kNodeId = /^[A-Za-z0-9_-]{1,64}$/;

function resolveCluster(cluster: unknown): ResolvedCluster | undefined {
  if (cluster === undefined) return undefined;
  if (cluster === null || typeof cluster !== 'object') throw new SluiceError('invalid_option', `cluster must be { redis, keyPrefix?, startDegraded?, nodeId? }, got ${String(cluster)}`);
  const { redis, keyPrefix, startDegraded, nodeId, tlsCaFile } = cluster as Record<string, unknown>;
  if (typeof redis !== 'string' || !/^rediss?:\/\/[^\s]+$/.test(redis)) throw new SluiceError('invalid_option', `cluster.redis must be a redis:// or rediss:// URL, got ${JSON.stringify(redis) ?? String(redis)}`);
  if (keyPrefix !== undefined && (typeof keyPrefix !== 'string' || !/^[\x21-\x7e]{0,64}$/.test(keyPrefix))) {
    throw new SluiceError('invalid_option', `cluster.keyPrefix must be at most 64 printable ASCII characters without spaces, got ${JSON.stringify(keyPrefix) ?? String(keyPrefix)}`);
  }
  if (nodeId !== undefined && (typeof nodeId !== 'string' || !kNodeId.test(nodeId))) {
    throw new SluiceError('invalid_option', `cluster.nodeId must be 1 to 64 of A-Z a-z 0-9 _ -, got ${JSON.stringify(nodeId) ?? String(nodeId)}`);
  }
  if (tlsCaFile !== undefined && (typeof tlsCaFile !== 'string' || tlsCaFile === '')) throw new SluiceError('invalid_option', `cluster.tlsCaFile must be a file path, got ${JSON.stringify(tlsCaFile) ?? String(tlsCaFile)}`);
  if (tlsCaFile !== undefined && !redis.startsWith('rediss://')) throw new SluiceError('invalid_option', 'cluster.tlsCaFile needs a rediss:// URL (TLS)');
  return {
    redis,
    keyPrefix: keyPrefix ?? 'sluice:',
    startDegraded: boolean('cluster.startDegraded', startDegraded, false),
    nodeId: nodeId ?? randomBytes(16).toString('base64url'),
    tlsCaFile,
  };
}

/** Smallest requestState key: HMAC-SHA256 gains nothing from more, and loses from less. */
const kMinStateKeyBytes = 32;

/** The requestState key ring: each key decoded (base64/base64url strings) and at least 32 bytes. */
export function resolveStateKeys(keys: unknown, name = 'requestStateKeys'): readonly Uint8Array[] | undefined {
  if (keys === undefined) return undefined;
  if (!Array.isArray(keys) || keys.length === 0) throw new SluiceError('invalid_option', `${name} must be a non-empty array of keys (newest first)`);
  return Object.freeze(keys.map((key: unknown, i) => {
    let bytes: Uint8Array;
    if (key instanceof Uint8Array) bytes = new Uint8Array(key);
    else if (typeof key === 'string' && /^[A-Za-z0-9+/_-]+={0,2}$/.test(key.trim())) bytes = new Uint8Array(Buffer.from(key.trim().replace(/-/g, '+').replace(/_/g, '/'), 'base64'));
    else throw new SluiceError('invalid_option', `${name}[${i}] must be a Uint8Array or a base64/base64url string`);
    if (bytes.length < kMinStateKeyBytes) throw new SluiceError('invalid_option', `${name}[${i}] must be at least ${kMinStateKeyBytes} bytes, got ${bytes.length}`);
    return bytes;
  }));
}

const kTaskStoreMethods = ['create', 'get', 'list', 'update', 'respond', 'cancel', 'watch', 'runnerLost', 'close'] as const;

function resolveTasks(tasks: unknown): false | { limits: TaskLimits } {
  if (tasks === false) return false;
  if (tasks === undefined) return { limits: resolveTaskLimits(undefined) };
  if (tasks === null || typeof tasks !== 'object') throw new SluiceError('invalid_option', `tasks must be false or { store?, limits? }, got ${String(tasks)}`);
  const { store, limits } = tasks as { store?: unknown; limits?: unknown };
  if (store !== undefined) {
    const missing = store === null || typeof store !== 'object' ? kTaskStoreMethods : kTaskStoreMethods.filter((m) => typeof (store as Record<string, unknown>)[m] !== 'function');
    if (missing.length > 0) throw new SluiceError('invalid_option', `tasks.store must implement TaskStore (missing: ${missing.join(', ')})`);
  }
  return { limits: resolveTaskLimits(limits as Partial<TaskLimits> | undefined, 'tasks.limits') };
}

/** The user's task store, when tasks are on and one was given (checked by `resolveOptions`). */
export function taskStoreOption(options: { tasks?: false | TasksOptions | undefined }): TaskStore | undefined {
  return options.tasks === false ? undefined : options.tasks?.store;
}

function resolveCors(cors: unknown): { origins: readonly string[] } | undefined {
  if (cors === undefined) return undefined;
  const origins = cors !== null && typeof cors === 'object' ? (cors as { origins?: unknown }).origins : undefined;
  // An origin is a scheme and a host (and port): browsers send exactly that, never a path.
  if (!Array.isArray(origins) || !origins.every((o) => typeof o === 'string' && /^https?:\/\/[^/\s]+$/.test(o))) {
    throw new SluiceError('invalid_option', `cors.origins must be an array of origins such as 'https://app.example.com' (scheme and host, no path), got ${JSON.stringify(origins) ?? String(origins)}`);
  }
  return { origins: Object.freeze([...origins]) };
}
