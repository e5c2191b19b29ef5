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
  const windowStart = options.startAt + options.warmupMs;
  const windowEnd = windowStart + options.durationMs;
  const recorder = new Recorder(windowStart);
  let nextId = options.firstId;
  let stopped = false;
  const slots: Slot[] = targets.map((target) => ({ target, busy: false, id: 0, from: 0, sentAt: 0, cancelAt: 0, timer: undefined }));
  const free: Slot[] = [];
  const interval = options.rate === undefined ? 0 : 1000 / options.rate;
  let dueIndex = 0; // open loop: the next due request's index
  for (const target of targets) {
    target.onStep = (step, ms) => {
      const now = performance.now();
      if (now >= windowStart && now <= windowEnd) recorder.step(step, ms);
    };
  }

  return new Promise<Snapshot>((resolve) => {
    // The live line counts every finished request, warm-up included (the summary counts the window only).
    let liveRequests = 0;
    let liveErrors = 0;
    let lastTickRequests = 0;
    let lastTickErrors = 0;
    const ticker = setInterval(() => {
      const now = performance.now();
      for (const slot of slots) {
        if (slot.busy && slot.cancelAt === 0 && now - slot.sentAt > options.timeoutMs) slot.target.abort('timeout', `no answer within ${options.timeoutMs} ms`);
      }
      if (options.onTick !== undefined) {
        options.onTick(liveRequests - lastTickRequests, liveErrors - lastTickErrors);
        lastTickRequests = liveRequests;
        lastTickErrors = liveErrors;
      }
    }, 250);

    const finish = (): void => {
      if (stopped) return;
      stopped = true;
      clearInterval(ticker);
      if (openTimer !== undefined) clearTimeout(openTimer);
      for (const slot of slots) {
        if (slot.timer !== undefined) clearTimeout(slot.timer);
        if (slot.busy) {
          recorder.unfinished++;
          slot.busy = false;
          slot.target.abort('no-answer', 'the run ended');
        }
      }
      let bytesIn = 0;
      let bytesOut = 0;
      for (const t of targets) { bytesIn += t.bytesIn; bytesOut += t.bytesOut; }
      resolve(recorder.snapshot(bytesIn, bytesOut));
    };

    const issue = (slot: Slot, from: number): void => {
      const id = nextId++;
      slot.busy = true;
      slot.id = id;
      slot.from = from;
      slot.sentAt = performance.now();
      slot.cancelAt = 0;
      if (options.cancelAfterMs !== undefined) slot.timer = setTimeout(() => cancel(slot, id), options.cancelAfterMs);
      slot.target.call(id, (outcome, answeredAt) => settle(slot, id, outcome, answeredAt));
    };

    const cancel = (slot: Slot, id: number): void => {
      slot.timer = undefined;
      if (!slot.busy || slot.id !== id) return;
      slot.cancelAt = performance.now();
      if (slot.from >= windowStart) recorder.cancel.sent++;
      slot.timer = setTimeout(() => {
        slot.timer = undefined;
        if (!slot.busy || slot.id !== id) return;
        if (slot.from >= windowStart && performance.now() <= windowEnd) recorder.cancel.neverStopped++;
        slot.cancelAt = -1; // settle() knows this one never stopped
        slot.target.abort('no-answer', `the answer did not stop within ${kStopWaitMs} ms of the cancel`);
      }, kStopWaitMs);
      slot.target.cancel(id);
    };

    const settle = (slot: Slot, id: number, outcome: Outcome, answeredAt: number): void => {
      if (!slot.busy || slot.id !== id) return;
      slot.busy = false;
      const now = performance.now();
      liveRequests++;
      if (outcome.kind !== 'ok' && slot.cancelAt === 0) liveErrors++;
      const cancelAt = slot.cancelAt;
      if (slot.timer !== undefined) { clearTimeout(slot.timer); slot.timer = undefined; }
      const measured = slot.from >= windowStart && now <= windowEnd;
      if (measured) {
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
          if (options.cancelAfterMs !== undefined) recorder.cancel.finishedFirst++;
          const answered = outcome.kind === 'ok' || outcome.kind === 'tool' || outcome.kind === 'rpc' || outcome.kind === 'http';
          recorder.count(outcome, now, answered ? (answeredAt - slot.from) * 1000 : undefined, 0);
        }
      } else if (slot.from >= windowStart) {
        recorder.unfinished++; // finished after the window closed: not counted, but the server may have counted it
      } else {
        recorder.warmup++;
      }
      if (stopped) return;
      if (now >= windowEnd) {
        if (slots.every((s) => !s.busy)) finish();
        return;
      }
      if (outcome.kind === 'reset') {
        setTimeout(() => next(slot), kResetBackoffMs);
        return;
      }
      next(slot);
    };

    const next = (slot: Slot): void => {
      if (stopped) return;
      const now = performance.now();
      if (now < options.startAt) { // a timer may fire a little early
        setTimeout(() => next(slot), Math.ceil(options.startAt - now));
        return;
      }
      if (now >= windowEnd) {
        if (slots.every((s) => !s.busy)) finish();
        return;
      }
      if (interval === 0) {
        issue(slot, now);
        return;
      }
      const due = options.startAt + dueIndex * interval;
      if (due <= now) {
        dueIndex++;
        issue(slot, due);
      } else {
        free.push(slot);
        schedule();
      }
    };

    let openTimer: ReturnType<typeof setTimeout> | undefined;
    const schedule = (): void => {
      if (openTimer !== undefined || stopped) return;
      const due = options.startAt + dueIndex * interval;
      openTimer = setTimeout(() => {
        openTimer = undefined;
        const now = performance.now();
        while (free.length > 0 && options.startAt + dueIndex * interval <= now && now < windowEnd) {
          const due2 = options.startAt + dueIndex * interval;
          dueIndex++;
          issue(free.shift()!, due2);
        }
        if (free.length > 0) schedule();
      }, Math.max(0, due - performance.now()));
    };

    // The end: a timer, so a run whose connections all hang still ends on time.
    setTimeout(() => {
      const busy = slots.filter((s) => s.busy);
      if (busy.length === 0) { finish(); return; }
      // Requests in flight at the end get a moment to finish, not a whole timeout.
      setTimeout(finish, Math.min(options.timeoutMs, 1000));
    }, Math.max(0, windowEnd - performance.now()));

    setTimeout(() => { for (const slot of slots) next(slot); }, Math.max(0, options.startAt - performance.now()));
  });
}

export type { Snapshot };
