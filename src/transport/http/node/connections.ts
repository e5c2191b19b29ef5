import type { Socket } from 'node:net';

/** How often the open connections are looked at. */
const kSweepMs = 1_000;

/** One open connection: its requests still running, and how long it has been quiet. */
export interface Connection {
  readonly socket: Socket;
  /** Requests of this connection whose responses have not closed yet. */
  busy: number;
  /** It has served a request: from then on it is a keep-alive connection the sweep may close. */
  served: boolean;
  /** `socket.bytesRead` when last looked at, and the sweeps since it or `busy` last moved. */
  bytes: number;
  quiet: number;
}

/**
 * The node:http server's open connections. Closes a keep-alive connection once it has been idle
 * (no request running, no byte read) for about the advertised keep-alive time plus a second, as
 * node's own `keepAliveTimeout` does (the advertised time + its 1 s buffer): 6–7 s after its last
 * response for the 5 s advertised, and never before the advertised time.
 *
 * Why not node's: it arms a fresh socket timer after every response (a Timeout, a bound function
 * and, with async hooks on, their init hooks: OpenTelemetry's context manager turns them on under
 * Node 22) and clears it when the next request comes. Here a request costs a Map lookup and two
 * counters, and one sweep a second looks at every connection, as node's own check of request
 * timeouts (`connectionsCheckingInterval`) does. A connection that has not yet served a request is
 * left to node's `headersTimeout`, as before.
 */
export class Connections {
  readonly #open = new Map<Socket, Connection>();
  readonly #quietSweeps: number;
  readonly #timer: ReturnType<typeof setInterval>;

  /** `keepAliveMs`: the keep-alive time responses advertise (`Keep-Alive: timeout=`). */
  constructor(keepAliveMs: number) {
    // Counted from the first sweep after the last response (which sees its request's bytes): the
    // sweeps of keepAliveMs + 1 s, so the connection closes 1 s at most after that.
    this.#quietSweeps = Math.ceil((keepAliveMs + 1_000) / kSweepMs);
    this.#timer = setInterval(() => this.#sweep(), kSweepMs);
    this.#timer.unref();
  }

  /** A new connection. */
  add(socket: Socket): void {
    this.#open.set(socket, { socket, busy: 0, served: false, bytes: 0, quiet: 0 });
    socket.once('close', () => this.#open.delete(socket));
  }

  /** A request started on `socket`: its connection, for `end` (undefined if it already closed). */
  begin(socket: Socket): Connection | undefined {
    const connection = this.#open.get(socket);
    if (connection !== undefined) {
      connection.busy++;
      connection.served = true;
    }
    return connection;
  }

  /** That request's response closed. */
  end(connection: Connection | undefined): void {
    if (connection === undefined) return;
    connection.busy--;
    connection.quiet = 0;
  }

  /** Every open socket (abort, and the end of a graceful close). */
  sockets(): IterableIterator<Socket> {
    return this.#open.keys();
  }

  /** Stops the sweep (the server is closing). */
  stop(): void {
    clearInterval(this.#timer);
  }

  #sweep(): void {
    for (const connection of this.#open.values()) {
      // A running request's `end` restarts the count (`quiet` = 0); one not yet served is node's.
      if (connection.busy > 0 || !connection.served) continue;
      const bytes = connection.socket.bytesRead;
      if (bytes !== connection.bytes) {
        // The next request is arriving (its headers are node's `headersTimeout`'s).
        connection.bytes = bytes;
        connection.quiet = 0;
      } else if (++connection.quiet >= this.#quietSweeps) {
        connection.socket.destroy();
      }
    }
  }
}
