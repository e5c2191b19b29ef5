/**
 * Drives one thread's connections. Closed loop: each connection sends its next request when the
 * previous one finished. Open loop (`rate`): requests are due at fixed intervals from the start,
 * a free connection takes the oldest due one, and latency counts from when it was due, so a
 * server that stalls shows the stall instead of slowing the generator down (coordinated omission
 * corrected, as wrk2 does).
 */
import { Recorder } from './recorder.js';
import type { Snapshot } from './recorder.js';
import type { Target } from './target.js';
import type { Outcome } from './wire.js';

export interface LoopOptions {
  /** performance.now() at which requests start (warm-up first). */
  startAt: number;
  warmupMs: number;
  durationMs: number;
  /** This thread's share of the open-loop rate (requests/s); undefined: closed loop. */
  rate: number | undefined;
  cancelAfterMs: number | undefined;
  timeoutMs: number;
  /** First request id of this thread (ids stay unique across threads). */
  firstId: number;
  /** Called about every second with the requests and errors since the last call. */
  onTick?: (requests: number, errors: number) => void;
}

/** How long a cancelled request's answer may take to stop before the connection is dropped. */
const kStopWaitMs = 1000;
/** After a reset, a connection waits this long before its next request (a dead server is not spun on). */
const kResetBackoffMs = 20;

interface Slot {
  target: Target;
  busy: boolean;
  id: number;
  /** When the request was sent, or (open loop) when it was due. */
  from: number;
  sentAt: number;
  cancelAt: number;
  timer: ReturnType<typeof setTimeout> | undefined;
}

/** Runs the load on `targets` (already open) and resolves with what was counted. */
export function runLoop(targets: Target[], options: LoopOptions): Promise<Snapshot> {
  return new Promise<Snapshot>((resolve) => { new Loop(targets, options, resolve).start(); });
}

/** One run's state: the connections (slots), the open-loop schedule, the counts. */
class Loop {
  readonly #targets: Target[];
  readonly #options: LoopOptions;
  readonly #resolve: (snapshot: Snapshot) => void;
  readonly #windowStart: number;
  readonly #windowEnd: number;
  readonly #recorder: Recorder;
  readonly #slots: Slot[];
  /** Open loop: connections waiting for the next due request. */
  readonly #free: Slot[] = [];
  /** Open loop: ms between two due requests; 0 in a closed loop. */
  readonly #interval: number;
  #nextId: number;
  #stopped = false;
  /** Open loop: the next due request's index. */
  #dueIndex = 0;
  #openTimer: ReturnType<typeof setTimeout> | undefined;
  #ticker: ReturnType<typeof setInterval> | undefined;
  // The live line counts every finished request, warm-up included (the summary counts the window only).
  #liveRequests = 0;
  #liveErrors = 0;
  #lastTickRequests = 0;
  #lastTickErrors = 0;

  constructor(targets: Target[], options: LoopOptions, resolve: (snapshot: Snapshot) => void) {
    this.#targets = targets;
    this.#options = options;
    this.#resolve = resolve;
    this.#windowStart = options.startAt + options.warmupMs;
    this.#windowEnd = this.#windowStart + options.durationMs;
    this.#recorder = new Recorder(this.#windowStart);
    this.#nextId = options.firstId;
    this.#slots = targets.map((target) => ({ target, busy: false, id: 0, from: 0, sentAt: 0, cancelAt: 0, timer: undefined }));
    this.#interval = options.rate === undefined ? 0 : 1000 / options.rate;
    for (const target of targets) {
      target.onStep = (step, ms) => {
        const now = performance.now();
        if (now >= this.#windowStart && now <= this.#windowEnd) this.#recorder.step(step, ms);
      };
    }
  }

  start(): void {
    this.#ticker = setInterval(() => this.#tick(), 250);
    // The end: a timer, so a run whose connections all hang still ends on time.
    setTimeout(() => {
      if (this.#slots.every((s) => !s.busy)) { this.#finish(); return; }
      // Requests in flight at the end get a moment to finish, not a whole timeout.
      setTimeout(() => this.#finish(), Math.min(this.#options.timeoutMs, 1000));
    }, Math.max(0, this.#windowEnd - performance.now()));
    setTimeout(() => { for (const slot of this.#slots) this.#next(slot); }, Math.max(0, this.#options.startAt - performance.now()));
  }

  /** Every 250 ms: requests past their timeout are given up on; the live line is fed. */
  #tick(): void {
    const now = performance.now();
    const { timeoutMs, onTick } = this.#options;
    for (const slot of this.#slots) {
      if (slot.busy && slot.cancelAt === 0 && now - slot.sentAt > timeoutMs) slot.target.abort('timeout', `no answer within ${timeoutMs} ms`);
    }
    if (onTick !== undefined) {
      onTick(this.#liveRequests - this.#lastTickRequests, this.#liveErrors - this.#lastTickErrors);
      this.#lastTickRequests = this.#liveRequests;
      this.#lastTickErrors = this.#liveErrors;
    }
  }

  #finish(): void {
    if (this.#stopped) return;
    this.#stopped = true;
    clearInterval(this.#ticker);
    if (this.#openTimer !== undefined) clearTimeout(this.#openTimer);
    for (const slot of this.#slots) {
      if (slot.timer !== undefined) clearTimeout(slot.timer);
      if (slot.busy) {
        this.#recorder.unfinished++;
        slot.busy = false;
        slot.target.abort('no-answer', 'the run ended');
      }
    }
    let bytesIn = 0;
    let bytesOut = 0;
    for (const t of this.#targets) { bytesIn += t.bytesIn; bytesOut += t.bytesOut; }
    this.#resolve(this.#recorder.snapshot(bytesIn, bytesOut));
  }

  /** Sends the slot's next request; `now`: a clock read the caller just took (one read less per request). */
  #issue(slot: Slot, from: number, now = performance.now()): void {
    const id = this.#nextId++;
    slot.busy = true;
    slot.id = id;
    slot.from = from;
    slot.sentAt = now;
    slot.cancelAt = 0;
    const { cancelAfterMs } = this.#options;
    if (cancelAfterMs !== undefined) slot.timer = setTimeout(() => this.#cancel(slot, id), cancelAfterMs);
    slot.target.call(id, (outcome, answeredAt) => this.#settle(slot, id, outcome, answeredAt));
  }

  #cancel(slot: Slot, id: number): void {
    slot.timer = undefined;
    if (!slot.busy || slot.id !== id) return;
    slot.cancelAt = performance.now();
    if (slot.from >= this.#windowStart) this.#recorder.cancel.sent++;
    slot.timer = setTimeout(() => {
      slot.timer = undefined;
      if (!slot.busy || slot.id !== id) return;
      if (slot.from >= this.#windowStart && performance.now() <= this.#windowEnd) this.#recorder.cancel.neverStopped++;
      slot.cancelAt = -1; // #settle() knows this one never stopped
      slot.target.abort('no-answer', `the answer did not stop within ${kStopWaitMs} ms of the cancel`);
    }, kStopWaitMs);
    slot.target.cancel(id);
  }

  #settle(slot: Slot, id: number, outcome: Outcome, answeredAt: number): void {
    if (!slot.busy || slot.id !== id) return;
    slot.busy = false;
    const now = performance.now();
    this.#liveRequests++;
    if (outcome.kind !== 'ok' && slot.cancelAt === 0) this.#liveErrors++;
    if (slot.timer !== undefined) { clearTimeout(slot.timer); slot.timer = undefined; }
    if (slot.from >= this.#windowStart && now <= this.#windowEnd) this.#record(slot, outcome, now, answeredAt);
    else if (slot.from >= this.#windowStart) this.#recorder.unfinished++; // finished after the window closed: not counted, but the server may have counted it
    else this.#recorder.warmup++;
    if (this.#stopped) return;
    if (now >= this.#windowEnd) {
      if (this.#slots.every((s) => !s.busy)) this.#finish();
      return;
    }
    if (outcome.kind === 'reset') {
      setTimeout(() => this.#next(slot), kResetBackoffMs);
      return;
    }
    this.#next(slot);
  }

  /** Counts a request that finished inside the measured window. */
  #record(slot: Slot, outcome: Outcome, now: number, answeredAt: number): void {
    const recorder = this.#recorder;
    const cancelAt = slot.cancelAt;
    if (cancelAt > 0) {
      recorder.cancel.answerStopped++;
      recorder.answerStops.recordValue(Math.max(1, Math.round((now - cancelAt) * 1000)));
      // The tool answered after the cancel: it had stopped by the time its answer came.
      if (outcome.result !== undefined) {
        recorder.cancel.toolStopped++;
        recorder.toolStops.recordValue(Math.max(1, Math.round((answeredAt - cancelAt) * 1000)));
      }
      recorder.countCancelled(now);
    } else if (cancelAt < 0) {
      recorder.countCancelled(now);
    } else {
      if (this.#options.cancelAfterMs !== undefined) recorder.cancel.finishedFirst++;
      const answered = outcome.kind === 'ok' || outcome.kind === 'tool' || outcome.kind === 'rpc' || outcome.kind === 'http';
      recorder.count(outcome, now, answered ? (answeredAt - slot.from) * 1000 : undefined, 0);
    }
  }

  /** The slot's next request: now (closed loop), the oldest due one, or when the next falls due. */
  #next(slot: Slot): void {
    if (this.#stopped) return;
    const now = performance.now(); // a closed loop's latency counts from here
    const { startAt } = this.#options;
    if (now < startAt) { // a timer may fire a little early
      setTimeout(() => this.#next(slot), Math.ceil(startAt - now));
      return;
    }
    if (now >= this.#windowEnd) {
      if (this.#slots.every((s) => !s.busy)) this.#finish();
      return;
    }
    if (this.#interval === 0) {
      this.#issue(slot, now, now);
      return;
    }
    const due = startAt + this.#dueIndex * this.#interval;
    if (due <= now) {
      this.#dueIndex++;
      this.#issue(slot, due);
    } else {
      this.#free.push(slot);
      this.#schedule();
    }
  }

  /** Open loop: a timer for the next due request, which free connections then take, oldest due first. */
  #schedule(): void {
    if (this.#openTimer !== undefined || this.#stopped) return;
    const { startAt } = this.#options;
    this.#openTimer = setTimeout(() => {
      this.#openTimer = undefined;
      const now = performance.now();
      while (this.#free.length > 0 && startAt + this.#dueIndex * this.#interval <= now && now < this.#windowEnd) {
        const due = startAt + this.#dueIndex * this.#interval;
        this.#dueIndex++;
        this.#issue(this.#free.shift()!, due);
      }
      if (this.#free.length > 0) this.#schedule();
    }, Math.max(0, startAt + this.#dueIndex * this.#interval - performance.now()));
  }
}

export type { Snapshot };
