/**
 * One HTTP serving thread's whole stack (an HTTP worker's, or the supervisor's own when the tools
 * are served in-process): the engine from the assembly, the endpoint, the adapter.
 */
import type { SessionDirectoryAccess } from '../cluster/session-client.js';
import type { Registry } from '../registry/index.js';
import type { Engine } from '../protocol/engine.js';
import { SessionStore } from '../sessions/store.js';
import { HttpEndpoint, kLoopbackHosts } from '../transport/http/endpoint.js';
import type { AdapterOptions, AdapterKind, Listening } from '../transport/http/adapter.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import { listenNode } from '../transport/http/node/adapter.js';
import { listenUws } from '../transport/http/uws/adapter.js';
import { listenersOn } from '../transport/http/shared-port.js';
import { SluiceError } from '../errors.js';
import { AuthGate } from '../auth/gate.js';
import type { TokenVerifierFunction } from '../auth/contract.js';
import { createEngine } from './assembly.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { importTracingModule } from '../telemetry/tracing/otel.js';
import type { EngineInput } from './assembly.js';
import { kCancelSettleMs, kShutdownReason, settled } from './shutdown.js';

export interface Runtime {
  readonly listening: Listening;
  readonly engine: Engine;
  readonly registry: Registry;
  /** This thread's counters (/metrics). */
  readonly counters: ServerCounters;
  /**
   * Graceful stop: no new connections; running requests get `graceMs` to finish, then every one
   * still running is cancelled through the registry (reason kShutdownReason) and gets a bounded
   * moment to notice before the remaining connections are cut; then the pool closes.
   */
  close(graceMs: number): Promise<void>;
  /** Closes the pool only (the crash path, after `listening.abort()`). */
  closePool(): Promise<void>;
}

export interface RuntimeInput extends EngineInput {
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

/** One HTTP serving thread's whole stack: registry attachment, engine, endpoint, adapter, pool. */
export async function startRuntime(input: RuntimeInput, adapter: AdapterKind): Promise<Runtime> {
  const { options, shared } = input;
  await importTracingModule(options.tracing); // before the engine: it checks for a tracer provider once
  const { engine, registry, pool, counters } = createEngine({ ...input, authenticated: input.authenticate !== undefined || options.auth !== undefined });
  // Each serving thread verifies on its own (its own JWKS cache): no cross-thread hop per request.
  const gate = options.auth === undefined ? undefined : new AuthGate(options.auth, input.verifyToken, (message) => input.log('warn', message));
  const sessions = shared.sessions === undefined ? undefined : new SessionStore(shared.sessions);
  const endpoint = new HttpEndpoint(engine, {
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
  const adapterOptions: AdapterOptions = {
    host: options.host,
    port: input.port,
    maxBodyBytes: options.maxBodyBytes,
    bodyTimeoutMs: options.bodyTimeoutMs,
    // An authenticate hook may read any header (x-api-key…); without one only the fixed list is copied.
    allHeaders: input.authenticate !== undefined,
    handler: (ex) => endpoint.handle(ex),
  };
  const listening = adapter === 'uws' ? await listenUws(adapterOptions) : await listenNode(adapterOptions);
  const runtime: Runtime = {
    listening,
    engine,
    registry,
    counters,
    close: async (graceMs) => {
      engine.closeListeners(); // listen streams end with their completion result, not a cut
      let cancelledAt = 0;
      const cancel = setTimeout(() => {
        cancelledAt = Date.now();
        engine.cancelAll(kShutdownReason);
      }, graceMs);
      try {
        // Cancelled requests end their exchanges themselves (SSE ends, 202), so this resolves early.
        await listening.close(graceMs + kCancelSettleMs);
      } finally {
        clearTimeout(cancel);
      }
      if (cancelledAt > 0) await settled(engine, cancelledAt + kCancelSettleMs);
      await pool?.close();
    },
    closePool: async () => { await pool?.close(); },
  };
  if (input.firstOnPort && (listenersOn(options.host, listening.port) ?? 1) > 1) {
    // Another SO_REUSEPORT server bound the port after the supervisor's probe: sharing it would
    // split the traffic between two servers. Give it up (port 0: the supervisor picks again).
    await runtime.close(0);
    throw new SluiceError('port_in_use', `cannot listen on ${options.host}:${listening.port}: another process bound the port (SO_REUSEPORT) while this server was starting`);
  }
  return runtime;
}

/** Whether the server is bound to loopback only (then only loopback Host names are served). */
function loopbackHost(host: string): boolean {
  return host === 'localhost' || host === '::1' || host === '[::1]' || /^127\./.test(host);
}
