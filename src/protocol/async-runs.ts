/**
 * The runs of one engine whose handler went async. Most async handlers settle within the
 * microtasks of the turn that started them: arming a run (the registry's cancel watch, the reply's
 * disconnect listener, shutdown's set) only when it is still running at the end of that turn (one
 * setImmediate for all of them) spares those runs every bit of it.
 */
export class AsyncRuns<R extends { arm(): void }> {
  /** Armed runs, still running (shutdown cancels them). */
  readonly watching = new Set<R>();
  #pending: R[] = [];
  #spare: R[] = [];
  #scheduled = false;
  readonly #flush = (): void => this.flush();

  add(run: R): void {
    this.#pending.push(run);
    if (!this.#scheduled) {
      this.#scheduled = true;
      setImmediate(this.#flush);
    }
  }

  /** Arms the runs still running that went async since the last flush. */
  flush(): void {
    this.#scheduled = false;
    const pending = this.#pending;
    this.#pending = this.#spare;
    for (let i = 0; i < pending.length; i++) pending[i]!.arm();
    pending.length = 0;
    this.#spare = pending;
  }

  /** Runs still running, or went async this turn (some of which may have settled since). */
  get size(): number {
    return this.watching.size + this.#pending.length;
  }
}
