/**
 * Shutdown, written once: every part a server starts registers its own close step here as it
 * starts, and `close()` runs the steps in reverse order (last started, first closed: the listener
 * before the engine it feeds, the engine before the task store it writes, the store before the
 * Redis link it uses). A step that fails does not stop the ones after it; the first failure is
 * rethrown once all have run, later ones are logged.
 */
import type { ServerLogSink } from './options.js';

/** What a close step is told: how much of the shutdown grace is left for it. */
export interface Shutdown {
  /** Milliseconds of grace left (0 once it is spent). */
  graceLeft(): number;
}

/** One step: sync or async; it must end by itself (bounded by the grace it is told). */
export type CloseStep = (shutdown: Shutdown) => void | Promise<void>;

export class CloseList {
  readonly #steps: { readonly name: string; readonly step: CloseStep }[] = [];
  readonly #log: ServerLogSink;
  #closing: Promise<void> | undefined;

  constructor(log: ServerLogSink) {
    this.#log = log;
  }

  /** Registers the close step of a part just started. Once closing, the step runs at once instead. */
  add(name: string, step: CloseStep): void {
    if (this.#closing !== undefined) {
      void this.#closing.finally(() => this.#run([{ name, step }], { graceLeft: () => 0 }));
      return;
    }
    this.#steps.push({ name, step });
  }

  /** Whether `close()` has been called. */
  get closing(): boolean {
    return this.#closing !== undefined;
  }

  /** Runs every step, newest first, with `graceMs` shared among them; idempotent. */
  close(graceMs: number): Promise<void> {
    if (this.#closing !== undefined) return this.#closing;
    const deadline = Date.now() + graceMs;
    const steps = this.#steps.splice(0).reverse();
    this.#closing = this.#run(steps, { graceLeft: () => Math.max(0, deadline - Date.now()) });
    return this.#closing;
  }

  async #run(steps: readonly { readonly name: string; readonly step: CloseStep }[], shutdown: Shutdown): Promise<void> {
    let failure: { error: unknown } | undefined;
    for (const { name, step } of steps) {
      try {
        await step(shutdown);
      } catch (error) {
        // The first failure is the caller's to see; later ones would be lost, so they are logged.
        if (failure === undefined) failure = { error };
        else this.#log('error', `sluice: closing ${name} failed too: ${error instanceof Error ? error.message : String(error)}`);
      }
    }
    if (failure !== undefined) throw failure.error;
  }
}
