/**
 * The code of an HTTP worker thread (workers/http-worker.ts calls `runHttpWorker`): load the tools,
 * start one HTTP thread's stack, speak the typed messages of messages.ts with the supervisor.
 */
import { threadEntry } from './thread-entry.js';
import { subscribe } from 'node:diagnostics_channel';
import { cancellationCleanupChannel, requestCancelledChannel, requestKilledChannel, requestStopChannel } from '../telemetry/channels.js';
import { parentPort, threadId, workerData } from 'node:worker_threads';
import { catalogNames, importToolsModule } from '../catalog/catalog.js';
import { SluiceError } from '../errors.js';
import type { Authenticate } from '../transport/http/endpoint.js';
import type { TokenVerifierFunction } from '../auth/contract.js';
import { startRuntime } from '../server/http-runtime.js';
import { filterLog } from '../server/options.js';
import { TaskStoreClient } from '../tasks/remote-store.js';
import { Counter } from '../telemetry/counters.js';
import type { ServerCounters } from '../telemetry/counters.js';
import type { FromHttpWorker, HttpWorkerData, ToHttpWorker } from './worker-messages.js';

/** Longest wait for the pool to close on the crash path. */
const kCrashPoolCloseMs = 2_000;

/**
 * A tool calling process.exit() would end this thread with its uWS sockets open, which aborts the
 * whole process. Refuse it: the call throws (the tool fails as a normal tool error) and the worker
 * serves on. Returns the original, for this worker's own crash path.
 */
function refuseProcessExit(): (code?: number) => never {
  const original = process.exit.bind(process) as (code?: number) => never;
  process.exit = ((): never => {
    throw new SluiceError('process_exit_refused', 'tools must not call process.exit() in an HTTP worker');
  }) as typeof process.exit;
  return original;
}

const kForwarded = [requestCancelledChannel.name, cancellationCleanupChannel.name, requestKilledChannel.name].map(String);

/** Entry of an HTTP worker thread (workers/http-worker.ts calls it). */
export async function runHttpWorker(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('runHttpWorker must run in a worker thread');
  const data = workerData as HttpWorkerData;
  const send = (message: FromHttpWorker) => port.postMessage(message);
  const exit = refuseProcessExit();
  // diagnostics_channel is per thread: forward what a supervisor-side subscriber should see.
  const forwarded = data.options.forwardRequestStop ? [...kForwarded, String(requestStopChannel.name)] : kForwarded;
  for (const channel of forwarded) subscribe(channel, (message) => send({ type: 'event', channel, message }));
  // Lines below the level are dropped here, before they cost a message to the supervisor.
  const log = filterLog(data.options.logLevel, (level, message) => send({ type: 'log', level, message }));
  // Tasks live in the supervisor: this thread reads and writes them over its port.
  // A message to or from the store that could not cross, or a call past its deadline: logged and counted.
  let counters: ServerCounters | undefined;
  const portProblem = (message: string): void => {
    counters?.add(Counter.PortProblems);
    log('warn', message);
  };
  const taskClient = data.tasks === undefined ? undefined : new TaskStoreClient(data.tasks, { onProblem: portProblem });
  // Cluster mode: a runner names its node too, so a node's tasks can be failed when it is lost.
  const nodeId = data.options.cluster?.nodeId;
  const runner = nodeId === undefined ? String(threadId) : `${nodeId}/${threadId}`;
  const tasks = taskClient === undefined || data.options.tasks === false ? undefined : { store: taskClient, limits: data.options.tasks.limits, runner };
  // Cluster mode only: the session directory's client (no Redis code; loaded only when asked for).
  const sessionClient = data.sessionDirectory === undefined
    ? undefined
    : new (await import('../cluster/session-client.js')).SessionDirectoryClient(data.sessionDirectory);
  try {
    const { catalog, exports } = await importToolsModule(data.toolsModule);
    const authenticate = typeof exports.authenticate === 'function' ? (exports.authenticate as Authenticate) : undefined;
    if (authenticate !== undefined && data.options.auth !== undefined) throw new SluiceError('invalid_option', 'auth and authenticate are exclusive: the tools module exports authenticate, and auth is set');
    const verifyToken = typeof exports.verifyToken === 'function' ? (exports.verifyToken as TokenVerifierFunction) : undefined;
    const runtime = await startRuntime({
      shared: data.shared,
      options: data.options,
      catalog,
      toolsModule: data.toolsModule,
      poolEntry: threadEntry('pool-worker'),
      authenticate,
      verifyToken,
      port: data.port,
      firstOnPort: data.firstOnPort,
      log,
      forwardResponse: (target, response, scope, node) => send({ type: 'response', target, response, scope, node }),
      // Only in cluster mode: a single node has nowhere else to send a cancel that missed.
      forwardCancel: nodeId === undefined ? undefined : (requestId, reason, scope) => send({ type: 'cancel', requestId, reason, scope }),
      nodeId,
      broadcastListChanged: (kind) => send({ type: 'listChanged', kind }),
      onPoolThread: (poolThreadId, alive) => send({ type: 'poolThread', threadId: poolThreadId, alive }),
      tasks,
      sessionDirectory: sessionClient,
    }, data.adapter);
    counters = runtime.counters;
    // A thread that ends with uWS sockets open aborts the whole process: on a crash (an error no
    // one caught, a rejection no one handled) close every socket first, then end this thread only.
    let crashed = false;
    process.on('uncaughtException', (error) => {
      send({ type: 'log', level: 'error', message: `sluice: HTTP worker crashed: ${error instanceof Error ? error.stack ?? error.message : String(error)}` });
      if (crashed) return;
      crashed = true;
      runtime.listening.abort();
      // Pool threads end with this thread; one cut off while still loading its modules aborts the
      // process, so close the pool first (bounded: a crashed thread may be in any state).
      const pause = (ms: number) => new Promise((r) => { setTimeout(r, ms); });
      void Promise.all([Promise.race([runtime.closePool(), pause(kCrashPoolCloseMs)]), pause(20)]).finally(() => exit(70));
    });
    // A supervisor message this thread cannot read (none carries a client's value): logged and counted.
    port.on('messageerror', (error) => portProblem(`sluice: a message from the supervisor could not be read: ${error.message}`));
    port.on('message', (message: ToHttpWorker) => {
      switch (message.type) {
        case 'response':
          runtime.engine.handleRelayedResponse(message.response, message.scope);
          return;
        case 'listChanged':
          runtime.engine.listChanged(message.kind, true);
          return;
        case 'drain':
          runtime.engine.closeListeners();
          return;
        case 'close':
          void runtime.close(message.graceMs).finally(async () => {
            await taskClient?.close();
            sessionClient?.close();
            send({ type: 'closed' });
            port.close();
          });
      }
    });
    send({ type: 'listening', port: runtime.listening.port, served: catalogNames(catalog) });
  } catch (error) {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error), code: error instanceof SluiceError ? error.code : undefined });
    await taskClient?.close();
    sessionClient?.close();
    port.close();
  }
}
