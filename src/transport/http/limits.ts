/**
 * Per-client bound on the requests running on this HTTP worker (principal, else address bucket;
 * never the session): one client cannot take the whole in-flight table. Past it: 429.
 */
const kMaxIdle = 1024;

export class ClientLimits {
  readonly #max: number;
  /** Requests running per client (entries go when they reach zero). */
  readonly #inFlight = new Map<string, number>();
  /** Entries at zero, kept until there are too many. */
  #idle = 0;

  constructor(maxInFlightPerClient: number) {
    this.#max = maxInFlightPerClient;
  }

  /** Counts one more request of `client`; false (nothing counted) when it is at its bound. */
  acquire(client: string): boolean {
    const running = this.#inFlight.get(client);
    if ((running ?? 0) >= this.#max) return false;
    if (running === 0) this.#idle--;
    this.#inFlight.set(client, (running ?? 0) + 1);
    return true;
  }

  /**
   * Bound once: a reply calls it when its request is released. A client back at zero keeps its
   * entry (a steady client then updates one entry instead of deleting and re-adding it per
   * request); idle entries go all at once when there are more than kMaxIdle of them.
   */
  readonly release = (client: string): void => {
    const n = (this.#inFlight.get(client) ?? 1) - 1;
    if (n > 0) {
      this.#inFlight.set(client, n);
      return;
    }
    this.#inFlight.set(client, 0);
    if (++this.#idle > kMaxIdle) this.#sweep();
  };

  #sweep(): void {
    for (const [client, n] of this.#inFlight) if (n === 0) this.#inFlight.delete(client);
    this.#idle = 0;
  }
}
