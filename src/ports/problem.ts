/**
 * What both ends of a call port share: where a port problem is reported, and the notice that names
 * a message the far side could not deserialise by its position in the port's order.
 */

/** Where a port problem is reported (the thread's log and counters). */
export type PortProblem = (message: string) => void;

/** The default: a process warning. */
export const warnProblem: PortProblem = (message) => process.emitWarning(message, 'SluiceWarning');

/** From the host: the client's message number `seq` (1-based, in posting order) could not be read there. */
export interface UndeliverableToClient {
  readonly type: 'undeliverable';
  readonly seq: number;
}

/** From the client: the host's message number `seq` (1-based, in posting order) could not be read here. */
export interface UndeliverableToHost {
  readonly op: 'undeliverable';
  readonly seq: number;
}

/** A call from a client: `id` pairs it with its answer (the client assigns it when it posts). */
export interface PortCall {
  id: number;
  readonly op: string;
}

/** How the two ends name the far side and the fate of a failed call in their reports. */
export interface PortWording {
  /** What the far end serves: 'task store', 'session directory'. */
  readonly name: string;
  /** What a failed call does, after "its call" / "it": 'fails', 'answers unavailable'. */
  readonly failure: string;
}
