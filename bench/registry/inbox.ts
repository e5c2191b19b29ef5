/**
 * Talking to the benchmark's worker threads: an inbox of their messages awaited one at a time, and
 * their stop. No side effects on import.
 */
import type { Worker } from 'node:worker_threads';
import { kMessageTimeoutMs } from './config.js';

/** Messages from one worker, awaited one at a time. Rejects on a worker error, exit, or silence. */
export class Inbox<M extends { readonly type: string }> {
  readonly #queue: M[] = [];
  #waiter: { resolve: (message: M) => void; reject: (error: Error) => void } | undefined;
  #failure: Error | undefined;

  constructor(worker: Worker) {
    worker.on('message', (raw: unknown) => {
      const message = raw as M;
      const waiter = this.#waiter;
      if (waiter !== undefined) {
        this.#waiter = undefined;
        waiter.resolve(message);
      } else {
        this.#queue.push(message);
      }
    });
    const fail = (error: Error): void => {
      this.#failure ??= error;
      const waiter = this.#waiter;
      this.#waiter = undefined;
      waiter?.reject(error);
    };
    worker.on('error', fail);
    worker.on('exit', (code: number) => fail(new Error(`worker exited (code ${code})`)));
  }

  next(): Promise<M> {
    const queued = this.#queue.shift();
    if (queued !== undefined) return Promise.resolve(queued);
    if (this.#failure !== undefined) return Promise.reject(this.#failure);
    return new Promise<M>((resolve, reject) => {
      const timer = setTimeout(() => {
        this.#waiter = undefined;
        reject(new Error(`worker did not answer within ${kMessageTimeoutMs} ms`));
      }, kMessageTimeoutMs);
      this.#waiter = {
        resolve: (message) => {
          clearTimeout(timer);
          resolve(message);
        },
        reject: (error) => {
          clearTimeout(timer);
          reject(error);
        },
      };
    });
  }

  async expect<T extends M['type']>(type: T): Promise<Extract<M, { type: T }>> {
    const message = await this.next();
    if (message.type === 'error') throw new Error(`worker: ${(message as unknown as { message: string }).message}`);
    if (message.type !== type) throw new Error(`expected '${type}' from worker, got '${message.type}'`);
    return message as Extract<M, { type: T }>;
  }
}

/** Posts `stop` to a worker and waits for its exit; terminates it after 2 s (a worker spinning at a barrier cannot read 'stop'). */
export async function stopWorker<M>(worker: Worker, exited: Promise<void>, stop: M): Promise<void> {
  worker.postMessage(stop);
  const timer = setTimeout(() => { void worker.terminate(); }, 2_000);
  await exited;
  clearTimeout(timer);
}

/** Resolves when `worker` exits (create it right after the worker, so no exit is missed). */
export function exitOf(worker: Worker): Promise<void> {
  return new Promise<void>((resolve) => worker.once('exit', () => resolve()));
}
