/**
 * The serving end of call ports (the supervisor's, one port per worker): counts the messages each
 * way, names a message it cannot deserialise back to the client by its position (`undeliverable`,
 * so that call fails there at once), replaces an answer the client could not read with the
 * owner's failure answer, and checks each call before the owner dispatches it. Ports are unref'd:
 * the workers keep the serving thread alive, not their ports.
 */
import type { MessagePort } from 'node:worker_threads';
import type { PortProblem, PortWording, UndeliverableToClient } from './problem.js';

/** Answers the host posted on one port, by message number, kept so an unreadable one can still fail its call. */
const kRecentAnswers = 1_024;

export interface PortHostOptions<In, Out> extends PortWording {
  readonly onProblem: PortProblem;
  /** Whether a readable message is one `serve` can take; the others are refused (reported, answered with `failed` when they carry an id). */
  readonly accept: (message: unknown) => message is In;
  /** Dispatches one accepted message; answers go back through `link.answer`. */
  readonly serve: (message: In, link: HostLink<Out>) => void;
  /** The answer that fails call `id`: a refused call, or one whose answer the client could not read. */
  readonly failed: (id: number) => Out;
  /** Called once when the port is detached (closed by either side, or by the host). */
  readonly onDetach?: (() => void) | undefined;
}

/** The host's side of one port: message counts both ways and the answers recently posted. */
export class HostLink<Out> {
  readonly #port: MessagePort;
  #sent = 0;
  /** Message number → call id, for the last kRecentAnswers answers. */
  readonly #answers = new Map<number, number>();

  constructor(port: MessagePort) {
    this.#port = port;
  }

  /** Posts a message that is not an answer (a notice, an error the client need not hear again); false when it could not be posted. */
  post(message: Out | UndeliverableToClient): boolean {
    try {
      this.#port.postMessage(message);
    } catch {
      // A closed port or an uncloneable value: nothing more this port can be told of it.
      return false;
    }
    this.#sent++;
    return true;
  }

  /** Posts the answer to call `id`, remembered so it can be failed if the client cannot read it. */
  answer(id: number, message: Out): boolean {
    if (!this.post(message)) return false;
    this.#answers.set(this.#sent, id);
    if (this.#answers.size > kRecentAnswers) this.#answers.delete(this.#answers.keys().next().value!);
    return true;
  }

  /** The call whose answer was message `seq`, forgotten; undefined when it was not a recent answer. */
  takeAnswer(seq: unknown): number | undefined {
    if (typeof seq !== 'number') return undefined;
    const id = this.#answers.get(seq);
    this.#answers.delete(seq);
    return id;
  }

  forget(): void {
    this.#answers.clear();
  }
}

/** Any number of attached ports, each served until it closes. */
export class PortHost {
  /** Each attached port and how to detach it. */
  readonly #ports = new Map<MessagePort, () => void>();

  /** Serves `port` until it closes; returns the function that detaches and closes it. */
  attach<In, Out>(port: MessagePort, options: PortHostOptions<In, Out>): () => void {
    const link = new HostLink<Out>(port);
    const { name, failure, onProblem } = options;
    let received = 0;
    const onMessage = (message: unknown): void => {
      received++;
      const m = (message !== null && typeof message === 'object' ? message : {}) as Partial<Record<string, unknown>>;
      if (m.op === 'undeliverable') {
        onProblem(`sluice: a ${name} answer could not be read by its worker; the call ${failure}`);
        const id = link.takeAnswer(m.seq);
        if (id !== undefined) link.post(options.failed(id));
      } else if (options.accept(message)) {
        options.serve(message, link);
      } else {
        onProblem(`sluice: a malformed call to the ${name} was refused`);
        if (Number.isSafeInteger(m.id)) link.post(options.failed(m.id as number));
      }
    };
    // A message this side cannot deserialise still takes its place in the order: the client learns
    // which of its messages it was, and fails that call now.
    const onMessageError = (error: Error): void => {
      const seq = ++received;
      onProblem(`sluice: a message to the ${name} could not be read (${error.message}); its call fails`);
      link.post({ type: 'undeliverable', seq });
    };
    const detach = (): void => {
      if (this.#ports.get(port) !== detach) return;
      this.#ports.delete(port);
      port.off('message', onMessage);
      port.off('messageerror', onMessageError);
      port.off('close', detach);
      link.forget();
      options.onDetach?.();
    };
    this.#ports.set(port, detach);
    port.on('message', onMessage);
    port.on('messageerror', onMessageError);
    port.on('close', detach);
    port.unref();
    return () => {
      detach();
      port.close();
    };
  }

  /** Detaches and closes every port. */
  close(): void {
    for (const [port, detach] of [...this.#ports]) {
      detach();
      port.close();
    }
  }
}
