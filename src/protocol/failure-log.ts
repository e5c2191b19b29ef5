/** A rate limit for log lines: `take()` is -1 when over budget, else how many were dropped since the last line. */
export class LogBudget {
  readonly #max: number;
  readonly #windowMs: number;
  #windowStart = 0;
  #used = 0;
  #dropped = 0;

  constructor(max: number, windowMs: number) {
    this.#max = max;
    this.#windowMs = windowMs;
  }

  take(): number {
    const now = Date.now();
    if (now - this.#windowStart >= this.#windowMs) {
      this.#windowStart = now;
      this.#used = 0;
    }
    if (this.#used >= this.#max) {
      this.#dropped++;
      return -1;
    }
    this.#used++;
    const dropped = this.#dropped;
    this.#dropped = 0;
    return dropped;
  }
}

/** The tail a log line gets when earlier ones were dropped. */
export function droppedNote(dropped: number): string {
  return dropped > 0 ? ` (${dropped} similar failures not logged in the last minute)` : '';
}
