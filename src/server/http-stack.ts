/**
 * One HTTP serving thread's whole stack (an HTTP worker's, or the supervisor's own when the tools
 * are served in-process): the serving engine, the auth gate, the endpoint, the adapter. Each part
 * registers its close step as it starts.
 */
import type { SessionDirectoryAccess } from '../cluster/session-client.js';
import type { Registry } from '../registry/index.js';
import type { Engine } from '../protocol/engine.js';
import { SessionStore } from '../sessions/store.js';
import { HttpEndpoint, kLoopbackHosts } from '../transport/http/endpoint.js';
import type { AdapterKind, AdapterOptions, Listening } from '../transport/http/adapter.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import { listenNode } from '../transport/http/node/adapter.js';
import { listenUws } from '../transport/http/uws/adapter.js';
import { listenersOn } from '../transport/http/shared-port.js';
import { SluiceError } from '../errors.js';
import type { AuthGate } from '../auth/gate.js';
import type { TokenVerifierFunction } from '../auth/contract.js';
import { createEngine } from './serving-engine.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import type { EngineInput } from './serving-engine.js';
import type { CloseList } from './close-list.js';
import { stopGracefully } from './shutdown.js';

export interface HttpStack {
  readonly listening: Listening;
  readonly engine: Engine;
  readonly registry: Registry;
  /** This thread's counters (/metrics). */
  readonly counters: ServerCounters;
  /** Closes the pool only (the crash path, after `listening.abort()`). */
  closePool(): Promise<void>;
}

export interface HttpStackInput extends EngineInput {
  readonly adapter: AdapterKind;
  readonly authenticate: Authenticate | undefined;
  /** With `options.auth`: a user verifier replacing the JWT path (`auth.verify`, or the module's `verifyToken`). */
  readonly verifyToken?: TokenVerifierFunction | undefined;
  /** The port to listen on (the supervisor pins every worker to the first one's port). */
  readonly port: number;
  /**
   * The first listener on its port (in-process, or the first HTTP worker): it must be alone there
   * once it listens, else it closes and fails with port_in_use (see listenersOn). Later workers
   * share the port with their siblings on purpose.
   */
  readonly firstOnPort: boolean;
  /** Cluster mode: the session directory (a port client in a worker, the supervisor's host in-process). */
  readonly sessionDirectory?: SessionDirectoryAccess | undefined;
}

/**
 * Starts one HTTP serving thread's stack. Its close steps go on `closer`: the listener's graceful
 * stop (grace, then cancel), then the pool. On a failed start the caller closes `closer`.
 */
export async function startHttpStack(input: HttpStackInput, closer: CloseList): Promise<HttpStack> {
  const { options } = input;
  await importTracingModule(options.tracing); // before the engine: it checks for a tracer provider once
  const gate = await authGate(input);
  const { engine, registry, pool, counters } = createEngine({ ...input, authenticated: input.authenticate !== undefined || options.auth !== undefined });
  if (pool !== undefined) closer.add('the tool pool', () => pool.close());
  // Listening means serving: no pool call waits behind a pool thread still loading, or fails in one that could not.
  await pool?.started();
  const endpoint = httpEndpoint(input, engine, counters, gate);
  const adapterOptions: AdapterOptions = {
    host: options.host,
    port: input.port,
    maxBodyBytes: options.maxBodyBytes,
    bodyTimeoutMs: options.bodyTimeoutMs,
    // An authenticate hook may read any header (x-api-key…); without one only the fixed list is copied.
    allHeaders: input.authenticate !== undefined,
    handler: (ex) => endpoint.handle(ex),
  };
  const listening = input.adapter === 'uws' ? await listenUws(adapterOptions) : await listenNode(adapterOptions);
  // Cancelled requests end their exchanges themselves (SSE ends, 202), so the close resolves early.
  closer.add('the HTTP listener', (shutdown) => stopGracefully(engine, shutdown.graceLeft(), (limitMs) => listening.close(limitMs)));
  if (input.firstOnPort && (listenersOn(options.host, listening.port) ?? 1) > 1) {
    // Another SO_REUSEPORT server bound the port after the supervisor's probe: sharing it would
    // split the traffic between two servers. Give it up (port 0: the supervisor picks again).
    throw new SluiceError('port_in_use', `cannot listen on ${options.host}:${listening.port}: another process bound the port (SO_REUSEPORT) while this server was starting`);
  }
  return { listening, engine, registry, counters, closePool: async () => { await pool?.close(); } };
}

/**
 * With `auth`: this thread's gate (each serving thread verifies on its own, with its own JWKS cache:
 * no cross-thread hop per request). Its module, and the JWT library under it (~50 ms of CPU to
 * load), is imported only then.
 */
async function authGate(input: HttpStackInput): Promise<AuthGate | undefined> {
  const { auth } = input.options;
  if (auth === undefined) return undefined;
  const { AuthGate } = await import('../auth/gate.js');
  return new AuthGate(auth, input.verifyToken, (message) => input.log('warn', message));
}

/** The endpoint over `engine`: HTTP rules of this server (paths, origins, sessions, limits, `gate`). */
function httpEndpoint(input: HttpStackInput, engine: Engine, counters: ServerCounters, gate: AuthGate | undefined): HttpEndpoint {
  const { options, shared } = input;
  const sessions = shared.sessions === undefined ? undefined : new SessionStore(shared.sessions);
  sessions?.observeEnds((seconds) => counters.histograms.observeSession(seconds));
  return new HttpEndpoint(engine, {
    path: options.path,
    allowedOrigins: options.allowedOrigins,
    sessions,
    sessionIdleMs: options.sessionIdleMs,
    sessionDirectory: input.sessionDirectory,
    maxSessionsPerClient: options.maxSessionsPerClient,
    maxInFlightPerClient: options.maxInFlightPerClient,
    maxStreamBufferBytes: options.maxStreamBufferBytes,
    slowReaderTimeoutMs: options.slowReaderTimeoutMs,
    cors: options.cors,
    authenticate: input.authenticate,
    auth: gate,
    trustProxy: options.trustProxy,
    maxBodyBytes: options.maxBodyBytes,
    // With a metrics listener of its own, the MCP port never serves /metrics.
    metrics: options.metrics && options.metricsListener === undefined,
    cancelOnDisconnect: options.cancelOnDisconnect,
    exposeWorker: options.exposeWorker,
    readiness: shared.readiness,
    cluster: options.cluster !== undefined,
    allowedHostNames: loopbackHost(options.host) ? new Set([...kLoopbackHosts, ...options.allowedHosts]) : options.allowedHosts.length > 0 ? new Set(options.allowedHosts) : undefined,
  });
}

/** Whether the server is bound to loopback only (then only loopback Host names are served). */
function loopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}
