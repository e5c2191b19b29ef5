import type { TaskStore } from '../../tasks/store.js';
import type { TaskRecord } from '../../tasks/task.js';
import type { ListKind } from '../../tools/context.js';
import type { CatalogIndex } from '../catalog-index.js';
import type { Method, Run } from '../run.js';
import { kNeedsTasksExtension, modernTask, optedIn } from '../tasks/wire.js';
import { ErrorCode, ProtocolError, kMetaSubscriptionId, notificationBody } from '../wire.js';

/** Task ids one listen stream may follow. */
const kMaxTaskIds = 100;
import type { JsonRpcId } from '../wire.js';

/** An open 2026-07-28 subscriptions/listen stream. */
interface Listener {
  readonly run: Run;
  readonly id: JsonRpcId;
  readonly kinds: ReadonlySet<ListKind>;
  end(): void;
}

/**
 * 2026-07-28 subscriptions/listen: the open streams of this engine, and the list changes they hear
 * of. A stream lasts until its client closes it (its cancel) or the server shuts down.
 */
export class Listeners {
  readonly #index: CatalogIndex;
  readonly #open = new Set<Listener>();
  /** The subscriptions/listen entry of the modern method table. */
  readonly method: Method = { handler: (run, params) => this.#listen(run, params) };

  readonly #tasks: TaskStore | undefined;

  constructor(index: CatalogIndex, tasks: TaskStore | undefined) {
    this.#index = index;
    this.#tasks = tasks;
  }

  /** A list changed: every stream here that asked for it is told. */
  notify(kind: ListKind): void {
    const method = `notifications/${kind}/list_changed`;
    for (const listener of this.#open) {
      if (!listener.kinds.has(kind)) continue;
      listener.run.notify(notificationBody(method, { _meta: { [kMetaSubscriptionId]: listener.id } }));
    }
  }

  /** Ends every stream with its completion result (graceful shutdown). */
  closeAll(): void {
    for (const listener of [...this.#open]) listener.end();
  }

  #listen(run: Run, params: Record<string, unknown> | undefined): Promise<Record<string, unknown>> {
    const requested = params?.notifications;
    if (requested === null || typeof requested !== 'object' || Array.isArray(requested)) throw new ProtocolError(ErrorCode.InvalidParams, 'subscriptions/listen needs a notifications object');
    if (!run.canStream) throw new ProtocolError(ErrorCode.InvalidParams, 'subscriptions/listen needs a streamed response (Accept: text/event-stream)');
    const r = requested as Record<string, unknown>;
    const kinds = new Set<ListKind>();
    const honoured: Record<string, unknown> = {};
    if (r.toolsListChanged === true) { kinds.add('tools'); honoured.toolsListChanged = true; }
    if (r.promptsListChanged === true && this.#index.hasPrompts) { kinds.add('prompts'); honoured.promptsListChanged = true; }
    if (r.resourcesListChanged === true && this.#index.hasResources) { kinds.add('resources'); honoured.resourcesListChanged = true; }
    if (r.taskIds === undefined || this.#tasks === undefined) return Promise.resolve(this.#stream(run, kinds, honoured, []));
    // Task status notifications (the tasks extension): only with the extension declared, only the caller's own tasks.
    if (!optedIn(params)) throw kNeedsTasksExtension;
    const ids = r.taskIds;
    if (!Array.isArray(ids) || ids.length > kMaxTaskIds || !ids.every((id) => typeof id === 'string' && id.length > 0 && id.length <= 256)) {
      throw new ProtocolError(ErrorCode.InvalidParams, `notifications.taskIds must be an array of at most ${kMaxTaskIds} task ids`);
    }
    const store = this.#tasks;
    const owner = run.info.scope;
    return Promise.all((ids as string[]).map((id) => store.get(id, owner))).then((found) => {
      const own = found.filter((task): task is TaskRecord => task !== undefined);
      honoured.taskIds = own.map((task) => task.taskId);
      return this.#stream(run, kinds, honoured, own);
    });
  }

  /** Acknowledges, then keeps the stream until its client closes it (or shutdown ends it). */
  #stream(run: Run, kinds: Set<ListKind>, honoured: Record<string, unknown>, tasks: readonly TaskRecord[]): Promise<Record<string, unknown>> {
    const meta = { [kMetaSubscriptionId]: run.id };
    run.notify(notificationBody('notifications/subscriptions/acknowledged', { _meta: meta, notifications: honoured }));
    const unwatch: Array<() => void> = [];
    for (const task of tasks) {
      let last = task.version;
      let sent = shownState(modernTask(task, true));
      unwatch.push(this.#tasks!.watch(task.taskId, (now) => {
        if (now === undefined || now.version === last) return;
        last = now.version;
        // The full task as tasks/get would return it then (no progress or log messages here), and
        // only when that changed: a progress write alone changes nothing this shape shows but its time.
        const shown = modernTask(now, true);
        const text = shownState(shown);
        if (text === sent) return;
        sent = text;
        run.notify(notificationBody('notifications/tasks', { ...shown, _meta: meta }));
      }));
    }
    return new Promise((resolve) => {
      const listener: Listener = {
        run, id: run.id, kinds,
        end: () => {
          this.#open.delete(listener);
          for (const stop of unwatch) stop();
          resolve({ _meta: meta });
        },
      };
      this.#open.add(listener);
      // The client closing the stream is the end of the subscription (and its cancel).
      run.signal.addEventListener('abort', () => listener.end(), { once: true });
    });
  }
}

/** A task as notifications/tasks shows it, but its lastUpdatedAt: what a new notification must change. */
function shownState(task: Record<string, unknown>): string {
  return JSON.stringify({ ...task, lastUpdatedAt: undefined });
}
