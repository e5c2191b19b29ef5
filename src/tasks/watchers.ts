import type { TaskRecord } from './task.js';

/** A `TaskStore.watch` listener: told each new version, `undefined` when the task is gone. */
export type TaskListener = (task: TaskRecord | undefined) => void;

/** Tells every listener (a copy of the set: a listener may unwatch, or watch, while being told). */
export function tellAll(listeners: ReadonlySet<TaskListener>, task: TaskRecord | undefined): void {
  for (const listener of [...listeners]) {
    try {
      listener(task);
    } catch (error) {
      // The contract says listeners must not throw; one that does must not keep the others from
      // being told, nor leave the store half-changed. Visible, not fatal.
      process.emitWarning(`a task watcher threw: ${error instanceof Error ? error.message : String(error)}`, 'SluiceWarning');
    }
  }
}

/**
 * Adds `listener` to `taskId`'s set in `watchers` and returns its unwatch, for a store's `watch`:
 * a wrapper per call, so the same function watched twice is told twice and unwatched once each.
 * `first` runs when the id gets its first listener, `last` when its last one is unwatched (a
 * store that subscribes elsewhere per id does it there).
 */
export function addWatcher(watchers: Map<string, Set<TaskListener>>, taskId: string, listener: TaskListener, first?: () => void, last?: () => void): () => void {
  let listeners = watchers.get(taskId);
  if (listeners === undefined) {
    watchers.set(taskId, listeners = new Set());
    first?.();
  }
  const own: TaskListener = (task) => listener(task);
  listeners.add(own);
  return () => {
    const set = watchers.get(taskId);
    if (set === undefined || !set.delete(own) || set.size > 0) return;
    watchers.delete(taskId);
    last?.();
  };
}
