import { SluiceError } from '../../errors.js';
import type { TaskRecord } from '../../tasks/task.js';
import { isTerminal } from '../../tasks/task.js';
import { kMaxValueDepth, valueProblem } from '../../ports/value-bounds.js';
import { Counter } from '../../telemetry/counters.js';
import type { Method, Run } from '../run.js';
import type { TaskHost } from '../tasks/task-run.js';
import { kMetaRelatedTask, kNeedsTasksExtension, kTaskNotFound, legacyTask, modernTask, optedIn, taskIdOf, taskRowId, withProgress } from '../tasks/wire.js';
import { ErrorCode, ProtocolError, notificationBody } from '../wire.js';

/** Tasks per tasks/list page. */
const kListPage = 50;
/** Polls a task may burst past its interval before tasks/get is refused. */
const kPollBurst = 10;
/** Poll buckets kept per thread (a flood of ids cannot grow it further). */
const kMaxPollBuckets = 100_000;

const kListAnonymous = Object.freeze(new ProtocolError(ErrorCode.MethodNotFound, 'tasks/list is offered only to authenticated callers'));

/**
 * tasks/* for both dialects. Every method looks the task up in the caller's own scope, so another
 * scope's task is exactly as unknown as a made-up id (-32602). A cancel raises the running tool's
 * flag through the registry directly (its row is `task:<id>` in the owner's scope, on any
 * thread), then records the status in the store.
 */
export class TaskMethods {
  readonly #host: TaskHost;
  readonly #authenticated: boolean;
  readonly #polls = new PollLimiter();
  /** tasks/result requests waiting on this thread, per client and in all. */
  readonly #waits = new Map<string, number>();
  #waiting = 0;

  constructor(host: TaskHost, authenticated: boolean) {
    this.#host = host;
    this.#authenticated = authenticated;
  }

  /** 2025-11-25 experimental tasks (legacy era). */
  legacy(): Array<[string, Method]> {
    return [
      ['tasks/get', { handler: (run, params) => this.#get(run, params).then((task) => withProgress(legacyTask(task), task)) }],
      ['tasks/result', { handler: (run, params) => this.#result(run, params) }],
      ['tasks/list', { handler: (run, params) => this.#list(run, params) }],
      ['tasks/cancel', { handler: (run, params) => this.#legacyCancel(run, params) }],
    ];
  }

  /** The 2026-07-28 extension: tasks/result and tasks/list are not part of it (-32601). */
  modern(): Array<[string, Method]> {
    return [
      ['tasks/get', { handler: (run, params) => this.#gate(params) ?? this.#get(run, params).then((task) => withProgress(modernTask(task, true), task)) }],
      ['tasks/update', { handler: (run, params) => this.#gate(params) ?? this.#update(run, params) }],
      ['tasks/cancel', { handler: (run, params) => this.#gate(params) ?? this.#modernCancel(run, params) }],
    ];
  }

  /** 2026-07-28: every tasks/* request must carry the extension in its own `_meta`. */
  #gate(params: Record<string, unknown> | undefined): Promise<never> | undefined {
    return optedIn(params) ? undefined : Promise.reject(kNeedsTasksExtension);
  }

  async #find(run: Run, params: Record<string, unknown> | undefined): Promise<TaskRecord> {
    const task = await unavailable(this.#host.store.get(taskIdOf(params), run.info.scope));
    if (task === undefined) throw kTaskNotFound;
    run.linkTask(task);
    return task;
  }

  async #get(run: Run, params: Record<string, unknown> | undefined): Promise<TaskRecord> {
    const task = await this.#find(run, params);
    if (!isTerminal(task.status) && !this.#polls.take(task.taskId, task.pollIntervalMs)) {
      this.#host.counters.add(Counter.TaskPollsRefused);
      throw new ProtocolError(ErrorCode.InvalidRequest, `Polling too fast: poll this task every ${task.pollIntervalMs} ms`, { pollIntervalMs: task.pollIntervalMs }, 429);
    }
    return task;
  }

  async #list(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    // Without an auth context tasks are bound to no one a list could name (spec: SHOULD NOT offer it).
    if (!this.#authenticated || !isPrincipalScope(run.info.scope)) throw kListAnonymous;
    const cursor = params?.cursor;
    if (cursor !== undefined && typeof cursor !== 'string') throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
    try {
      const page = await this.#host.store.list(run.info.scope, cursor, kListPage);
      const result: Record<string, unknown> = { tasks: page.tasks.map(legacyTask) };
      if (page.nextCursor !== undefined) result.nextCursor = page.nextCursor;
      return result;
    } catch (error) {
      if (error instanceof SluiceError && error.code === 'invalid_cursor') throw new ProtocolError(ErrorCode.InvalidParams, 'Invalid cursor');
      throw error;
    }
  }

  /**
   * Raises the running tool's flag first, before any store round trip: the row lives in the owner's
   * scope, so naming it from another scope finds nothing (no lookup needed to keep others out), and
   * a tool polling on any thread sees the cancel as soon as a notifications/cancelled would.
   */
  #raise(run: Run, taskId: string): void {
    const host = this.#host;
    const row = taskRowId(taskId);
    if (host.registry.inFlight(row, run.info.scope) && host.registry.cancel(row, 'task cancelled by the client', run.info.scope).ok) {
      host.counters.add(Counter.TasksCancelled);
    }
  }

  /** 2025-11-25: the cancelled task; a terminal one is -32602. */
  async #legacyCancel(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const taskId = taskIdOf(params);
    // The terminal check comes first here: raising the flag first could let the tool end the task
    // as cancelled before the check reads it, and this dialect must refuse only tasks already ended.
    const before = await unavailable(this.#host.store.get(taskId, run.info.scope));
    if (before === undefined) throw kTaskNotFound;
    run.linkTask(before);
    if (isTerminal(before.status)) throw new ProtocolError(ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${before.status}`);
    this.#raise(run, taskId);
    const after = await unavailable(this.#host.store.cancel(taskId, run.info.scope, 'Cancelled by the client')) ?? before;
    // It ended another way between the read and the cancel (on this node or another): not cancelled.
    if (after.status !== 'cancelled' && isTerminal(after.status)) throw new ProtocolError(ErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${after.status}`);
    return legacyTask(after);
  }

  /** 2026-07-28: an empty ack, on terminal tasks too (cancellation is cooperative). */
  async #modernCancel(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const taskId = taskIdOf(params);
    this.#raise(run, taskId);
    const task = await unavailable(this.#host.store.cancel(taskId, run.info.scope, 'Cancelled by the client'));
    if (task === undefined) throw kTaskNotFound;
    run.linkTask(task);
    return {};
  }

  async #update(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const taskId = taskIdOf(params);
    const responses = params?.inputResponses;
    if (responses === null || typeof responses !== 'object' || Array.isArray(responses)) throw new ProtocolError(ErrorCode.InvalidParams, 'inputResponses must be an object');
    // Bounded here, where it enters: the answers cross to the store's thread (or node), and a value
    // too deep to be read there must be refused now, not lost on the way.
    const problem = valueProblem(responses, kMaxValueDepth, this.#host.limits.maxTaskBytes);
    if (problem !== undefined) throw new ProtocolError(ErrorCode.InvalidParams, `inputResponses is ${problem.message}`);
    const task = await this.#host.store.respond(taskId, run.info.scope, responses as Record<string, unknown>);
    if (task === undefined) throw kTaskNotFound;
    run.linkTask(task);
    return {};
  }

  /**
   * 2025-11-25 tasks/result: waits until the task ends and returns exactly its result (or its
   * JSON-RPC error) with `related-task`. Meanwhile, on a streamed response, the task's input
   * requests go to the client as requests on this stream (answers go to the task through the
   * store), and its progress as notifications with the call's progress token.
   */
  async #result(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const first = await this.#find(run, params);
    if (isTerminal(first.status)) return outcome(first);
    // A wait on an unfinished task holds a request open for as long as the task lives: bounded per
    // client (across its sessions) and in total on this thread, each past its bound a 429.
    const client = run.info.client ?? run.info.scope;
    const { maxResultWaitsPerClient, maxResultWaits } = this.#host.limits;
    const mine = this.#waits.get(client) ?? 0;
    if (mine >= maxResultWaitsPerClient || this.#waiting >= maxResultWaits) {
      this.#host.counters.add(Counter.TaskQuotaRefused);
      throw new ProtocolError(ErrorCode.InvalidRequest, mine >= maxResultWaitsPerClient
        ? `Too many tasks/result waits: this client has ${mine} open (maxResultWaitsPerClient); poll tasks/get instead`
        : `Too many tasks/result waits: the server has ${this.#waiting} open (maxResultWaits); poll tasks/get instead`, undefined, 429);
    }
    this.#waits.set(client, mine + 1);
    this.#waiting++;
    try {
      return outcome(await this.#follow(run, first));
    } finally {
      this.#waiting--;
      const left = (this.#waits.get(client) ?? 1) - 1;
      if (left <= 0) this.#waits.delete(client);
      else this.#waits.set(client, left);
    }
  }

  #follow(run: Run, first: TaskRecord): Promise<TaskRecord> {
    const store = this.#host.store;
    const { taskId } = first;
    const owner = run.info.scope;
    const asked = new Set<string>();
    let progressVersion = -1;
    return new Promise<TaskRecord>((resolve, reject) => {
      let done = false;
      const finish = (error: Error | undefined, task?: TaskRecord): void => {
        if (done) return;
        done = true;
        unwatch();
        run.signal.removeEventListener('abort', onAbort);
        if (error !== undefined) reject(error);
        else resolve(task!);
      };
      const onAbort = (): void => finish(new SluiceError('request_cancelled', 'tasks/result was cancelled'));
      const seen = (task: TaskRecord | undefined): void => {
        if (task === undefined) {
          finish(kTaskNotFound);
          return;
        }
        if (isTerminal(task.status)) {
          finish(undefined, task);
          return;
        }
        if (!run.canStream) return;
        if (task.progress !== undefined && task.progressToken !== undefined && task.version !== progressVersion) {
          progressVersion = task.version;
          const p: Record<string, unknown> = { progressToken: task.progressToken, progress: task.progress.progress };
          if (task.progress.total !== undefined) p.total = task.progress.total;
          if (task.progress.message !== undefined) p.message = task.progress.message;
          run.notify(notificationBody('notifications/progress', p));
        }
        for (const [key, request] of Object.entries(task.inputRequests ?? {})) {
          if (asked.has(key) || !run.era.clientRequests) continue;
          asked.add(key);
          const sent = { ...request.params, _meta: { ...(request.params?._meta as Record<string, unknown> | undefined), [kMetaRelatedTask]: { taskId } } };
          this.#host.requestClient(run, request.method, sent).then(
            (answer) => {
              // The client's answer crosses to the store like a tasks/update: the same bounds, and
              // one past them reaches the task as a refused answer (its tool's request fails).
              const problem = valueProblem(answer, kMaxValueDepth, this.#host.limits.maxTaskBytes);
              return store.respond(taskId, owner, { [key]: problem === undefined ? answer : { error: `the client's answer was refused: it is ${problem.message}` } });
            },
            (error: unknown) => store.respond(taskId, owner, { [key]: { error: error instanceof Error ? error.message : String(error) } }),
          ).catch(() => { /* the task ended meanwhile */ });
        }
      };
      const unwatch = store.watch(taskId, seen);
      run.signal.addEventListener('abort', onAbort, { once: true });
      // Whatever changed between the first read and the watch.
      store.get(taskId, owner).then(seen, (error: unknown) => finish(error instanceof Error ? error : new Error(String(error))));
    });
  }
}

/** A finished task as tasks/result returns it (2025-11-25). */
function outcome(task: TaskRecord): Record<string, unknown> {
  const related = { [kMetaRelatedTask]: { taskId: task.taskId } };
  if (task.resultJson !== undefined) {
    const result = JSON.parse(task.resultJson) as Record<string, unknown>;
    const meta = result._meta !== null && typeof result._meta === 'object' ? result._meta as Record<string, unknown> : {};
    return { ...result, _meta: { ...meta, ...related } };
  }
  if (task.status === 'cancelled') throw new ProtocolError(ErrorCode.InternalError, `Task ${task.taskId} was cancelled`, related);
  const error = task.error ?? { code: ErrorCode.InternalError, message: task.statusMessage ?? 'Task failed' };
  throw new ProtocolError(error.code, error.message, error.data ?? related);
}

/** A store call whose failure the client sees for what it is (the cluster's Redis unreachable: -32603 saying so), not "Internal error". */
async function unavailable<T>(call: Promise<T>): Promise<T> {
  try {
    return await call;
  } catch (error) {
    if (error instanceof SluiceError && error.code === 'cluster_unavailable') throw new ProtocolError(ErrorCode.InternalError, `The task store is unavailable, try again: ${error.message}`);
    throw error;
  }
}

function isPrincipalScope(scope: string): boolean {
  return scope.startsWith('principal:') || scope.startsWith('session:');
}

/**
 * tasks/get pacing per task on this thread: a token bucket that refills at four polls per poll
 * interval and holds `kPollBurst`, so a client that honours `pollIntervalMs` never meets it.
 */
class PollLimiter {
  readonly #buckets = new Map<string, { tokens: number; at: number }>();

  take(taskId: string, intervalMs: number): boolean {
    const now = performance.now();
    let bucket = this.#buckets.get(taskId);
    if (bucket === undefined) {
      if (this.#buckets.size >= kMaxPollBuckets) this.#buckets.clear();
      bucket = { tokens: kPollBurst, at: now };
      this.#buckets.set(taskId, bucket);
    } else {
      bucket.tokens = Math.min(kPollBurst, bucket.tokens + ((now - bucket.at) * 4) / Math.max(1, intervalMs));
      bucket.at = now;
    }
    if (bucket.tokens < 1) return false;
    bucket.tokens -= 1;
    return true;
  }
}
