import { Roster } from '../../native-free-shm/index.js';
import type { RosterDescriptor, RosterMember } from '../../native-free-shm/index.js';
import type { RegistryCounters } from '../registry/index.js';
import { OperationHistograms, histogramText, inFlightText } from './histograms.js';
import type { HistogramsDescriptor } from './histograms.js';

export type { TargetSlots } from './histograms.js';

/** Server-wide counters, each thread counting into its own padded block of shared memory. */
export const Counter = {
  Requests: 0,
  Killed: 1,
  Busy: 2,
  Notifications: 3,
  /** Requests and initializes refused with 429 by a per-client limit. */
  ClientLimited: 4,
  /** Gauge: bytes written to streamed replies that their readers have not taken yet. */
  StreamBufferedBytes: 5,
  /** Progress notifications replaced by a newer one while their reader was slow. */
  ProgressCoalesced: 6,
  /** Log notifications dropped while their reader was slow. */
  LogsDropped: 7,
  /** Connections closed because their reader could not take the final response in time. */
  SlowReadersClosed: 8,
  /** Tool calls that became tasks. */
  TasksCreated: 9,
  /** tasks/cancel requests that cancelled a task still running. */
  TasksCancelled: 10,
  /** tasks/get refused for polling faster than the task's poll interval allows. */
  TaskPollsRefused: 11,
  /** Gauge (the supervisor's block): tasks the node's store holds, when the store can say. */
  TasksStored: 12,
  /** Gauge (the supervisor's block): bytes of results and input the node's store holds. */
  TaskBytes: 13,
  /** Gauge (the supervisor's block): 1 while the cluster link to Redis is up, else 0. */
  ClusterUp: 14,
  /** Cluster link state changes (up → down, down → up). */
  ClusterLinkChanges: 15,
  /** Messages this node published on the cluster bus. */
  ClusterSent: 16,
  /** Messages from other nodes received on the cluster bus. */
  ClusterReceived: 17,
  /** Messages not published because the link was down. */
  ClusterDropped: 18,
  /** Requests that needed another node and could not reach it (link down). */
  ClusterCrossNodeFailures: 19,
  /** Cross-node cancels not published because their scope spent its rate (100/s). */
  ClusterCancelsLimited: 20,
  /** Cross-node messages refused by their bounds (too large, malformed). */
  ClusterRefused: 21,
  /** Cluster mode: presented sessions this node lacked that Redis could not be asked about (503, not 404). */
  ClusterSessionLookupsFailed: 22,
  /** Cluster mode: initialize, logging/setLevel and DELETE refused (503) because Redis could not take the change. */
  ClusterSessionWritesFailed: 23,
  /** Messages between threads that could not be read on the far side ('messageerror'), and calls over a port past their deadline. */
  PortProblems: 24,
  /** Task creations, results and tasks/result waits refused by a client's own task quota (429). */
  TaskQuotaRefused: 25,
} as const;
export type Counter = (typeof Counter)[keyof typeof Counter];
const kCount = 26;
/** Counters that are gauges: a dead thread's value is zeroed, since what it held went with it. */
const kGauges: readonly Counter[] = [Counter.StreamBufferedBytes, Counter.TasksStored, Counter.TaskBytes, Counter.ClusterUp];

export interface ServerCountersDescriptor {
  readonly kind: 'sluice/counters';
  readonly roster: RosterDescriptor;
  /** The latency histograms' blocks (see OperationHistograms). */
  readonly histograms: HistogramsDescriptor;
}

export class ServerCounters {
  readonly #roster: Roster;
  readonly #member: RosterMember;
  /** The latency histograms (operations, pool queue wait, sessions), per thread block. */
  readonly histograms: OperationHistograms;

  static create(maxThreads: number): ServerCounters {
    return new ServerCounters({
      kind: 'sluice/counters',
      roster: Roster.create({ capacity: maxThreads, counters: kCount }).descriptor,
      histograms: OperationHistograms.create().descriptor,
    });
  }

  constructor(descriptor: ServerCountersDescriptor) {
    this.#roster = Roster.attach(descriptor.roster);
    this.#member = this.#roster.join();
    this.histograms = OperationHistograms.attach(descriptor.histograms);
    const counters = this.#member.counters;
    this.#roster.onRelease((entry) => {
      const base = this.#roster.counterBaseOf(entry);
      for (const gauge of kGauges) counters[base + gauge] = 0;
    });
  }

  get descriptor(): ServerCountersDescriptor {
    return { kind: 'sluice/counters', roster: this.#roster.descriptor, histograms: this.histograms.descriptor };
  }

  /** Single writer per block: a plain increment, no cross-thread traffic. */
  add(counter: Counter, n = 1): void {
    this.#member.counters[this.#member.counterBase + counter] += n;
  }

  /** Sets a gauge in this thread's block (single writer). */
  set(counter: Counter, value: number): void {
    this.#member.counters[this.#member.counterBase + counter] = value;
  }

  sum(counter: Counter): number {
    return this.#roster.sum(counter);
  }

  /** Counter values per thread block (entry index), for spotting an uneven spread across workers. */
  perThread(counter: Counter): Array<{ entry: number; value: number }> {
    return this.#roster.perEntry(counter);
  }

  /** Frees this thread's block when the thread `threadId` is gone (its counts stay in the sums). */
  threadExited(threadId: number): void {
    this.#roster.release(threadId);
    this.histograms.threadExited(threadId);
  }
}

/**
 * Prometheus text exposition (format 0.0.4) of the node-wide counters. The `sluice_cluster_*`
 * series appear only in cluster mode (a single node's output is as before).
 */
export function prometheusText(registry: RegistryCounters, server: ServerCounters, cluster = false): string {
  const lines: string[] = [];
  const metric = (name: string, type: 'counter' | 'gauge', help: string, value: number) => {
    lines.push(`# HELP ${name} ${help}`, `# TYPE ${name} ${type}`, `${name} ${value}`);
  };
  metric('sluice_requests_total', 'counter', 'JSON-RPC requests received (notifications excluded).', server.sum(Counter.Requests));
  // Per counter block: one per thread that has served requests. A replacement thread may take over
  // a dead thread's block and count on from its value, so every series stays monotonic.
  lines.push('# HELP sluice_thread_requests_total JSON-RPC requests received, per HTTP worker thread block.', '# TYPE sluice_thread_requests_total counter');
  for (const { entry, value } of server.perThread(Counter.Requests)) lines.push(`sluice_thread_requests_total{block="${entry}"} ${value}`);
  metric('sluice_requests_in_flight', 'gauge', 'Requests being served now, across every thread.', registry.inFlight);
  inFlightText(server.histograms.inFlight(), lines);
  metric('sluice_requests_refused_total', 'counter', 'Requests refused with 503 because the in-flight table was full.', server.sum(Counter.Busy));
  metric('sluice_requests_killed_total', 'counter', 'Cancelled requests whose tool was still running after streamCancelTimeout.', server.sum(Counter.Killed));
  metric('sluice_cancellations_total', 'counter', 'Cancellations recorded.', registry.cancellations);
  metric('sluice_cancellations_refused_total', 'counter', 'Cancellations refused by the per-scope quota.', registry.cancellationsRefused);
  metric('sluice_cancellation_evictions_total', 'counter', 'Cancellation rows evicted by the global cap.', registry.evictions);
  metric('sluice_cancellation_rows', 'gauge', 'Cancellation rows held now.', registry.cancellationRows);
  metric('sluice_client_limited_total', 'counter', 'Requests and session creations refused with 429 by a per-client limit.', server.sum(Counter.ClientLimited));
  metric('sluice_stream_buffered_bytes', 'gauge', 'Bytes of streamed replies written but not yet taken by their (slow) readers.', server.sum(Counter.StreamBufferedBytes));
  metric('sluice_progress_coalesced_total', 'counter', 'Progress notifications replaced by a newer one while their reader was slow.', server.sum(Counter.ProgressCoalesced));
  metric('sluice_logs_dropped_total', 'counter', 'Log notifications dropped while their reader was slow.', server.sum(Counter.LogsDropped));
  metric('sluice_tasks_created_total', 'counter', 'Tool calls that became tasks.', server.sum(Counter.TasksCreated));
  metric('sluice_tasks_cancelled_total', 'counter', 'tasks/cancel requests that cancelled a running task.', server.sum(Counter.TasksCancelled));
  metric('sluice_task_polls_refused_total', 'counter', 'tasks/get refused for polling faster than the poll interval allows.', server.sum(Counter.TaskPollsRefused));
  metric('sluice_tasks_stored', 'gauge', 'Tasks the node\'s task store holds (finished ones until they expire); the default store reports it.', server.sum(Counter.TasksStored));
  metric('sluice_task_stored_bytes', 'gauge', 'Bytes of task results and input the node\'s task store holds; the default store reports it.', server.sum(Counter.TaskBytes));
  metric('sluice_port_problems_total', 'counter', 'Messages between threads the far side could not read, and calls between threads past their deadline (each answered with an error).', server.sum(Counter.PortProblems));
  metric('sluice_task_quota_refused_total', 'counter', 'Task creations and tasks/result waits refused with 429 by a client\'s own task quota.', server.sum(Counter.TaskQuotaRefused));
  metric('sluice_slow_readers_closed_total', 'counter', 'Connections closed because their reader could not take the final response in time.', server.sum(Counter.SlowReadersClosed));
  if (cluster) {
    metric('sluice_cluster_up', 'gauge', 'Whether this node\'s link to Redis is up (1) or down (0).', server.sum(Counter.ClusterUp));
    metric('sluice_cluster_link_changes_total', 'counter', 'Cluster link state changes (up to down and back).', server.sum(Counter.ClusterLinkChanges));
    metric('sluice_cluster_messages_sent_total', 'counter', 'Messages this node published to the other nodes.', server.sum(Counter.ClusterSent));
    metric('sluice_cluster_messages_received_total', 'counter', 'Messages received from other nodes.', server.sum(Counter.ClusterReceived));
    metric('sluice_cluster_messages_dropped_total', 'counter', 'Messages not published because the link was down.', server.sum(Counter.ClusterDropped));
    metric('sluice_cluster_cross_node_failures_total', 'counter', 'Requests that needed another node and could not reach it.', server.sum(Counter.ClusterCrossNodeFailures));
    metric('sluice_cluster_cancels_limited_total', 'counter', 'Cross-node cancels dropped by the per-scope rate (100/s).', server.sum(Counter.ClusterCancelsLimited));
    metric('sluice_cluster_session_lookups_failed_total', 'counter', 'Requests of a session this node lacked, refused with 503 because Redis could not be asked.', server.sum(Counter.ClusterSessionLookupsFailed));
    metric('sluice_cluster_session_writes_failed_total', 'counter', 'initialize, logging/setLevel and DELETE refused with 503 because Redis could not take the change.', server.sum(Counter.ClusterSessionWritesFailed));
    metric('sluice_cluster_messages_refused_total', 'counter', 'Messages between nodes refused by their bounds (too large, malformed).', server.sum(Counter.ClusterRefused));
  }
  histogramText(server.histograms.snapshot(), lines);
  return `${lines.join('\n')}\n`;
}
