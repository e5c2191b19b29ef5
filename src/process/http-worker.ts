/**
 * The code of an HTTP worker thread (entries/http-worker.ts calls `runHttpWorker`): rebuild the
 * server's config from what the supervisor sent and the tools module, start this thread's HTTP
 * stack, and speak the typed messages of worker-messages.ts with the supervisor.
 */
import { subscribe } from 'node:diagnostics_channel';
import { parentPort, workerData } from 'node:worker_threads';
import { catalogNames } from '../catalog/catalog.js';
import type { SessionDirectoryAccess } from '../cluster/session-client.js';
import { SluiceError } from '../errors.js';
import { CloseList } from '../server/close-list.js';
import { runnerId, workerConfig } from '../server/config.js';
import { startHttpStack } from '../server/http-stack.js';
import type { HttpStack } from '../server/http-stack.js';
import { filterLog } from '../server/options.js';
import type { LocalTasks } from '../server/serving-engine.js';
import { TaskStoreClient } from '../tasks/stores/port-store.js';
import { cancellationCleanupChannel, requestCancelledChannel, requestKilledChannel, requestStopChannel } from '../telemetry/channels.js';
import { Counter } from '../telemetry/counters.js';
import type { ServerCounters } from '../telemetry/counters.js';
import { refuseProcessExit, threadEntry } from './thread-entry.js';
import type { FromHttpWorker, HttpWorkerData, ToHttpWorker } from './worker-messages.js';

/** Longest wait for the pool to close on the crash path. */
const kCrashPoolCloseMs = 2_000;

const kForwarded = [requestCancelledChannel.name, cancellationCleanupChannel.name, requestKilledChannel.name].map(String);

/** Entry of an HTTP worker thread (entries/http-worker.ts calls it). */
export async function runHttpWorker(): Promise<void> {
  const port = parentPort;
  if (port === null) throw new Error('runHttpWorker must run in a worker thread');
  const data = workerData as HttpWorkerData;
  const send = (message: FromHttpWorker) => port.postMessage(message);
  const exit = refuseProcessExit('an HTTP worker');
  // diagnostics_channel is per thread: forward what a supervisor-side subscriber should see.
  const forwarded = data.options.forwardRequestStop ? [...kForwarded, String(requestStopChannel.name)] : kForwarded;
  for (const channel of forwarded) subscribe(channel, (message) => send({ type: 'event', channel, message }));
  // Lines below the level are dropped here, before they cost a message to the supervisor.
  const log = filterLog(data.options.logLevel, (level, message) => send({ type: 'log', level, message }));
  const closer = new CloseList(log);
  // A message to or from the supervisor that could not cross, or a call past its deadline: logged and counted.
  let counters: ServerCounters | undefined;
  const portProblem = (message: string): void => {
    counters?.add(Counter.PortProblems);
    log('warn', message);
  };
  try {
    const links = await supervisorLinks(data, closer, portProblem);
    const { config, catalog } = await workerConfig(data.options, data.toolsModule, log);
    const nodeId = config.options.cluster?.nodeId;
    const stack = await startHttpStack({
      shared: data.shared, options: config.options, catalog, log, adapter: data.adapter, port: data.port, firstOnPort: data.firstOnPort,
      pool: { module: data.toolsModule, entry: threadEntry('pool-worker') },
      authenticate: config.authenticate, verifyToken: config.verifyToken,
      forwardResponse: (target, response, scope, node) => send({ type: 'response', target, response, scope, node }),
      // Only in cluster mode: a single node has nowhere else to send a cancel that missed.
      forwardCancel: nodeId === undefined ? undefined : (requestId, reason, scope, trace) => send({ type: 'cancel', requestId, reason, scope, trace }),
      nodeId,
      broadcastListChanged: (kind) => send({ type: 'listChanged', kind }),
      broadcastSessionEnded: (scope, threads) => send({ type: 'sessionEnded', scope, threads }),
      onPoolThread: (poolThreadId, alive) => send({ type: 'poolThread', threadId: poolThreadId, alive }),
      tasks: links.tasks,
      sessionDirectory: links.sessionDirectory,
    }, closer);
    counters = stack.counters;
    closeOnCrash(stack, send, exit);
    // A supervisor message this thread cannot read (none carries a client's value): logged and counted.
    port.on('messageerror', (error) => portProblem(`sluice: a message from the supervisor could not be read: ${error.message}`));
    port.on('message', (message: ToHttpWorker) => onSupervisorMessage(message, stack, closer, () => {
      send({ type: 'closed' });
      port.close();
    }));
    send({ type: 'listening', port: stack.listening.port, served: catalogNames(catalog) });
  } catch (error) {
    send({ type: 'failed', message: error instanceof Error ? error.message : String(error), code: error instanceof SluiceError ? error.code : undefined });
    await closer.close(0);
    port.close();
  }
}

/** What this thread reaches in the supervisor over ports of its own: the task store, the cluster session directory. */
async function supervisorLinks(data: HttpWorkerData, closer: CloseList, onProblem: (message: string) => void): Promise<{ tasks: LocalTasks | undefined; sessionDirectory: SessionDirectoryAccess | undefined }> {
  let tasks: LocalTasks | undefined;
  if (data.tasks !== undefined && data.options.tasks !== false) {
    const client = new TaskStoreClient(data.tasks, { onProblem });
    closer.add('the task store port', () => client.close());
    tasks = { store: client, limits: data.options.tasks.limits, runner: runnerId(data.options) };
  }
  // Cluster mode only: the session directory's client (no Redis code; loaded only when asked for).
  let sessionDirectory: SessionDirectoryAccess | undefined;
  if (data.sessionDirectory !== undefined) {
    const { SessionDirectoryClient } = await import('../cluster/session-client.js');
    const client = new SessionDirectoryClient(data.sessionDirectory, { onProblem });
    closer.add('the session directory port', () => client.close());
    sessionDirectory = client;
  }
  return { tasks, sessionDirectory };
}

function onSupervisorMessage(message: ToHttpWorker, stack: HttpStack, closer: CloseList, closed: () => void): void {
  switch (message.type) {
    case 'response':
      stack.engine.handleRelayedResponse(message.response, message.scope, message.via);
      return;
    case 'listChanged':
      stack.engine.listChanged(message.kind, true);
      return;
    case 'sessionEnded':
      stack.engine.sessionEnded(message.scope);
      return;
    case 'drain':
      stack.engine.closeListeners();
      return;
    case 'close':
      void closer.close(message.graceMs).catch(() => undefined).finally(closed);
      return;
    case 'exiting':
      // A thread torn down with uWS sockets open aborts the process (SIGABRT): close them, and
      // answer once their close callbacks have run (the loop's close phase, after this turn's check).
      stack.listening.abort();
      setImmediate(() => setImmediate(() => {
        Atomics.add(message.acks, 0, 1);
        Atomics.notify(message.acks, 0);
      }));
  }
}

/**
 * A thread that ends with uWS sockets open aborts the whole process: on a crash (an error no one
 * caught, a rejection no one handled) close every socket first, then end this thread only.
 */
function closeOnCrash(stack: HttpStack, send: (message: FromHttpWorker) => void, exit: (code?: number) => never): void {
  let crashed = false;
  process.on('uncaughtException', (error) => {
    send({ type: 'log', level: 'error', message: `sluice: HTTP worker crashed: ${error instanceof Error ? error.stack ?? error.message : String(error)}` });
    if (crashed) return;
    crashed = true;
    stack.listening.abort();
    // Pool threads end with this thread; one cut off while still loading its modules aborts the
    // process, so close the pool first (bounded: a crashed thread may be in any state).
    const pause = (ms: number) => new Promise((r) => { setTimeout(r, ms); });
    void Promise.all([Promise.race([stack.closePool(), pause(kCrashPoolCloseMs)]), pause(20)]).finally(() => exit(70));
  });
}
