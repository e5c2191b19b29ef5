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
