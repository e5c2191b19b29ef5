/**
 * A token bucket holding at most a second's worth (`rate`), refilled continuously: the bus's bound
 * on bytes received, and the per-scope bound on cancels a node sends out.
 */
export class TokenBucket {
  readonly rate: number;
  #tokens: number;
  #at: number;

  /** Starts full. */
  constructor(rate: number, now: number = performance.now()) {
    this.rate = rate;
    this.#tokens = rate;
    this.#at = now;
  }

  /** When it was last taken from (or made). */
  get at(): number {
    return this.#at;
  }

  /** Takes `amount` if the bucket holds that much after refilling; false (taking nothing) if not. */
  take(amount: number, now: number = performance.now()): boolean {
    this.#tokens = Math.min(this.rate, this.#tokens + ((now - this.#at) / 1000) * this.rate);
    this.#at = now;
    if (this.#tokens < amount) return false;
    this.#tokens -= amount;
    return true;
  }
}
