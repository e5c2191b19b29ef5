/**
 * Per-client bound on the requests running on this HTTP worker (principal, else address bucket;
 * never the session): one client cannot take the whole in-flight table. Past it: 429.
 */
export class ClientLimits {
  readonly #max: number;
  /** Requests running per client (entries go when they reach zero). */
  readonly #inFlight = new Map<string, number>();

  constructor(maxInFlightPerClient: number) {
    this.#max = maxInFlightPerClient;
  }

  /** Counts one more request of `client`; false (nothing counted) when it is at its bound. */
  acquire(client: string): boolean {
    const running = this.#inFlight.get(client) ?? 0;
    if (running >= this.#max) return false;
    this.#inFlight.set(client, running + 1);
    return true;
  }

  /** Bound once: a reply calls it when its request is released. */
  readonly release = (client: string): void => {
    const n = (this.#inFlight.get(client) ?? 1) - 1;
    if (n <= 0) this.#inFlight.delete(client);
    else this.#inFlight.set(client, n);
  };
}
