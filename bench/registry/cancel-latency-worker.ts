/**
 * Worker side of the cross-thread cancel latency phase, bench/registry/cancel-latency.ts.
 *
 * The main thread tracks a request, posts its `ref` here, waits for `ready`, records the time and
 * cancels. This thread adopts the ref and observes the cancellation either by spinning on
 * `handle.cancelled` (mode 'poll') or by waiting for the handle's AbortSignal (mode 'signal'),
 * then posts the time it saw it. Both threads read `process.hrtime.bigint()`: the same
 * CLOCK_MONOTONIC in every thread of the process, so the two stamps subtract exactly.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { attachRegistry } from '../../src/index.js';
import type { HandleRef, RegistryDescriptor } from '../../src/index.js';

export interface WorkerInit {
  readonly descriptor: RegistryDescriptor;
  /** One Int32 word the 'floor' mode spins on: the main thread sets it with one Atomics.store. */
  readonly floorWord: SharedArrayBuffer;
}

export type ToWorker =
  | { readonly type: 'poll'; readonly ref: HandleRef }
  | { readonly type: 'signal'; readonly ref: HandleRef }
  | { readonly type: 'floor' }
  | { readonly type: 'stop' };

export type FromWorker =
  | { readonly type: 'ready' }
  | { readonly type: 'seen'; readonly at: bigint; readonly timedOut: boolean }
  | { readonly type: 'error'; readonly message: string };

/** How long a poll spins before giving up (so a lost cancel cannot hang the benchmark). */
const kSpinLimitMs = 5_000;

const port = parentPort;
if (port === null) throw new Error('cancel-latency-worker.js must run in a worker thread');
const init = workerData as WorkerInit;
const reg = attachRegistry(init.descriptor);
const floorWord = new Int32Array(init.floorWord);

function send(message: FromWorker): void {
  port?.postMessage(message);
}

function poll(ref: HandleRef): void {
  const handle = reg.adopt(ref);
  send({ type: 'ready' });
  const deadline = performance.now() + kSpinLimitMs;
  let spins = 0;
  let timedOut = false;
  while (!handle.cancelled) {
    if ((++spins & 0xffff) === 0 && performance.now() > deadline) {
      timedOut = true;
      break;
    }
  }
  const at = process.hrtime.bigint();
  send({ type: 'seen', at, timedOut });
}

/** The floor: the same spin, on a word nothing but one Atomics.store in the main thread touches. */
function floor(): void {
  send({ type: 'ready' });
  const deadline = performance.now() + kSpinLimitMs;
  let spins = 0;
  let timedOut = false;
  while (Atomics.load(floorWord, 0) === 0) {
    if ((++spins & 0xffff) === 0 && performance.now() > deadline) {
      timedOut = true;
      break;
    }
  }
  const at = process.hrtime.bigint();
  send({ type: 'seen', at, timedOut });
}

function wait(ref: HandleRef): void {
  const handle = reg.adopt(ref);
  const signal = handle.signal; // parks an Atomics.waitAsync on the row: nothing polls
  signal.addEventListener('abort', () => {
    const at = process.hrtime.bigint();
    send({ type: 'seen', at, timedOut: false });
  }, { once: true });
  send({ type: 'ready' });
}

port.on('message', (raw: unknown) => {
  const message = raw as ToWorker;
  try {
    switch (message.type) {
      case 'poll':
        poll(message.ref);
        break;
      case 'signal':
        wait(message.ref);
        break;
      case 'floor':
        floor();
        break;
      case 'stop':
        port.close();
        break;
    }
  } catch (error) {
    send({ type: 'error', message: error instanceof Error ? error.message : String(error) });
  }
});
