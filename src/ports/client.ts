/**
 * The calling end of a call port (a worker thread's, usually): each call is one message to the
 * host, paired with its answer by `id`. Nothing the port carries may wedge a call: every call has a
 * deadline, and since both ends count the messages they post and receive ('messageerror's
 * included), a message the host could not deserialise is named back by its position and fails
 * exactly the call it carried. The port is referenced only while a call waits, so an idle client
 * keeps no thread alive; when the port closes, the calls still waiting fail.
 *
 * Generic over the call and answer types; what an answer looks like on the wire is the owner's:
 * every message other than an undeliverable notice goes to its `receive`, which settles calls with
 * `resolve` and `reject`.
 */
import type { MessagePort } from 'node:worker_threads';
import { SluiceError } from '../errors.js';
import type { PortCall, PortProblem, PortWording, UndeliverableToHost } from './problem.js';

export interface PortClientOptions extends PortWording {
  /** Longest wait for one call's answer before it fails. */
  readonly timeoutMs: number;
  /** A message that could not cross, a call the host could not read, or a call past its deadline. */
  readonly onProblem: PortProblem;
  /** A message from the host that is not an undeliverable notice (already counted). */
  readonly receive: (message: unknown) => void;
  /** Called once when the client shuts (the port closed, or `close`), after the pending calls failed. */
  readonly onShut?: (() => void) | undefined;
}

interface Pending<Answer> {
  readonly resolve: (value: Answer) => void;
  readonly reject: (error: Error) => void;
  /** The number of the message that carried the call. */
  readonly seq: number;
  readonly op: string;
  readonly timer: ReturnType<typeof setTimeout>;
}

export class PortClient<Call extends PortCall, Answer, Notice extends object = never> {
  readonly #port: MessagePort;
  readonly #options: PortClientOptions;
  readonly #pending = new Map<number, Pending<Answer>>();
  /** Pending calls by the number of the message that carried them (what an undeliverable notice names). */
  readonly #bySeq = new Map<number, number>();
  #nextId = 0;
  /** Messages posted to the host and received from it: their positions pair undeliverables with calls. */
  #sent = 0;
  #received = 0;
  #closed = false;

  constructor(port: MessagePort, options: PortClientOptions) {
    this.#port = port;
    this.#options = options;
    port.on('message', (message: unknown) => {
      this.#received++;
      this.#onMessage(message);
    });
    port.on('messageerror', (error: Error) => {
      const seq = ++this.#received;
      options.onProblem(`sluice: a message from the ${options.name} could not be read (${error.message}); its call ${options.failure}`);
      this.post({ op: 'undeliverable', seq });
    });
    port.on('close', () => this.#shut());
    port.unref();
  }

  get closed(): boolean {
    return this.#closed;
  }

  /** Posts `request` with the next id; the promise settles with its answer, or fails (closed, unpostable, unreadable, late). */
  call(request: Call): Promise<Answer> {
    if (this.#closed) return Promise.reject(this.#closedError());
    const id = request.id = ++this.#nextId;
    return new Promise<Answer>((resolve, reject) => {
      try {
        this.#port.postMessage(request);
      } catch (error) {
        // What cannot be cloned fails here: the call fails, nothing is pending.
        this.#problemPosting(error);
        reject(error instanceof Error ? error : new Error(String(error)));
        return;
      }
      const seq = ++this.#sent;
      if (this.#pending.size === 0) this.#port.ref();
      const { name, failure, timeoutMs } = this.#options;
      const timer = setTimeout(() => {
        this.#options.onProblem(`sluice: a ${name} call (${request.op}) had no answer within ${timeoutMs} ms; it ${failure}`);
        this.reject(id, new Error(`the ${name} did not answer within ${timeoutMs} ms`));
      }, timeoutMs);
      timer.unref();
      this.#pending.set(id, { resolve, reject, seq, op: request.op, timer });
      this.#bySeq.set(seq, id);
    });
  }

  /** Posts a message that is not a call (a notice, a subscription), counting it; a failure is reported. */
  post(message: Notice | UndeliverableToHost): void {
    if (this.#closed) return;
    try {
      this.#port.postMessage(message);
      this.#sent++;
    } catch (error) {
      // Notices are small plain data: only a closing port refuses one.
      this.#problemPosting(error);
    }
  }

  /** Ends the pending call `id` with `value`; false when it was not pending. */
  resolve(id: number, value: Answer): boolean {
    const pending = this.#take(id);
    pending?.resolve(value);
    return pending !== undefined;
  }

  /** Ends the pending call `id` with `error`; false when it was not pending. */
  reject(id: number, error: Error): boolean {
    const pending = this.#take(id);
    pending?.reject(error);
    return pending !== undefined;
  }

  /** Closes this end of the port: the calls still waiting fail. */
  close(): void {
    this.#shut();
    this.#port.close();
  }

  #take(id: number): Pending<Answer> | undefined {
    const pending = this.#pending.get(id);
    if (pending === undefined) return undefined;
    this.#pending.delete(id);
    this.#bySeq.delete(pending.seq);
    clearTimeout(pending.timer);
    if (this.#pending.size === 0) this.#port.unref();
    return pending;
  }

  #onMessage(message: unknown): void {
    const m = message as Partial<Record<string, unknown>> | null;
    if (m === null || typeof m !== 'object' || m.type !== 'undeliverable' || typeof m.seq !== 'number') {
      this.#options.receive(message);
      return;
    }
    const id = this.#bySeq.get(m.seq);
    if (id === undefined) return;
    const { name, failure, onProblem } = this.#options;
    onProblem(`sluice: the ${name} could not read a call (${this.#pending.get(id)?.op}); it ${failure}`);
    this.reject(id, new TypeError(`the ${name} could not read this call (a value that cannot cross threads)`));
  }

  #problemPosting(error: unknown): void {
    this.#options.onProblem(`sluice: could not post to the ${this.#options.name}: ${error instanceof Error ? error.message : String(error)}`);
  }

  #closedError(): SluiceError {
    return new SluiceError('transport_closed', `the ${this.#options.name} port is closed`);
  }

  #shut(): void {
    if (this.#closed) return;
    this.#closed = true;
    const pending = [...this.#pending.values()];
    this.#pending.clear();
    this.#bySeq.clear();
    for (const { reject, timer } of pending) {
      clearTimeout(timer);
      reject(this.#closedError());
    }
    this.#options.onShut?.();
  }
}
