/**
 * What a generator thread counts: HDR histograms of latency (microseconds), outcomes by kind, the
 * cancellation figures and a per-second timeline. A thread sends its Snapshot (histograms as
 * compressed base64) once at the end; the main thread merges them.
 */
import hdr from 'hdr-histogram-js';
import type { Histogram } from 'hdr-histogram-js';
import type { Step } from './target.js';
import type { Outcome } from './wire.js';

/** 1 µs to one hour, three significant digits. */
export function newHistogram(): Histogram {
  return hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 3_600_000_000, numberOfSignificantValueDigits: 3 });
}

export function decodeHistogram(base64: string): Histogram {
  const decoded = hdr.decodeFromCompressedBase64(base64);
  const histogram = newHistogram();
  histogram.add(decoded);
  return histogram;
}

/** The key an outcome is counted under in `errors`: "http 500", "rpc -32602", "tool isError", "timeout", … */
export function errorKey(outcome: Outcome): string {
  switch (outcome.kind) {
    case 'http': return `http ${outcome.code}`;
    case 'rpc': return `rpc ${outcome.code ?? 'unknown'}`;
    case 'tool': return 'tool isError';
    case 'reset': return 'connection reset';
    case 'invalid': return 'invalid answer';
    case 'no-answer': return 'no answer';
    default: return outcome.kind;
  }
}

export interface Snapshot {
  /** Requests finished in the measured window (answered, failed or cancelled). */
  requests: number;
  ok: number;
  errors: Record<string, number>;
  /** The first detail seen per error key, for people. */
  errorDetails: Record<string, string>;
  progress: number;
  latency: string;
  steps: Partial<Record<Step, string>>;
  cancel: { sent: number; finishedFirst: number; answerStopped: number; neverStopped: number; toolStopped: number; answerStops: string; toolStops: string };
  /** Requests finished in each second of the measured window: [requests, errors]. */
  timeline: [number, number][];
  bytesIn: number;
  bytesOut: number;
  /** Requests in flight when the measured window closed (not counted; the server may have counted them). */
  unfinished: number;
  /** Requests sent during the warm-up (not counted). */
  warmup: number;
}

export class Recorder {
  readonly latency = newHistogram();
  readonly #steps = new Map<Step, Histogram>();
  readonly answerStops = newHistogram();
  readonly toolStops = newHistogram();
  requests = 0;
  ok = 0;
  progress = 0;
  readonly errors: Record<string, number> = {};
  readonly errorDetails: Record<string, string> = {};
  readonly cancel = { sent: 0, finishedFirst: 0, answerStopped: 0, neverStopped: 0, toolStopped: 0 };
  readonly timeline: [number, number][] = [];
  /** Errors since the last tick, for the live line. */
  errorCount = 0;
  unfinished = 0;
  warmup = 0;

  constructor(readonly windowStart: number) {}

  /** Counts one finished request at `now` (performance.now()); `latencyUs` undefined: not an answer worth timing. */
  count(outcome: Outcome, now: number, latencyUs: number | undefined, progress: number): void {
    this.requests++;
    this.progress += progress;
    if (latencyUs !== undefined) this.latency.recordValue(Math.max(1, Math.round(latencyUs)));
    const second = Math.max(0, Math.floor((now - this.windowStart) / 1000));
    while (this.timeline.length <= second) this.timeline.push([0, 0]);
    const slot = this.timeline[second]!;
    slot[0]++;
    if (outcome.kind === 'ok') {
      this.ok++;
      return;
    }
    slot[1]++;
    this.errorCount++;
    const key = errorKey(outcome);
    this.errors[key] = (this.errors[key] ?? 0) + 1;
    if (this.errorDetails[key] === undefined && outcome.detail !== undefined) this.errorDetails[key] = outcome.detail;
  }

  /** A cancelled request finished (it counts as a request, not as an error). */
  countCancelled(now: number): void {
    this.requests++;
    const second = Math.max(0, Math.floor((now - this.windowStart) / 1000));
    while (this.timeline.length <= second) this.timeline.push([0, 0]);
    this.timeline[second]![0]++;
  }

  step(step: Step, ms: number): void {
    let h = this.#steps.get(step);
    if (h === undefined) this.#steps.set(step, h = newHistogram());
    h.recordValue(Math.max(1, Math.round(ms * 1000)));
  }

  snapshot(bytesIn: number, bytesOut: number): Snapshot {
    const steps: Partial<Record<Step, string>> = {};
    for (const [step, h] of this.#steps) steps[step] = hdr.encodeIntoCompressedBase64(h);
    return {
      requests: this.requests, ok: this.ok, errors: this.errors, errorDetails: this.errorDetails, progress: this.progress,
      latency: hdr.encodeIntoCompressedBase64(this.latency), steps,
      cancel: { ...this.cancel, answerStops: hdr.encodeIntoCompressedBase64(this.answerStops), toolStops: hdr.encodeIntoCompressedBase64(this.toolStops) },
      timeline: this.timeline, bytesIn, bytesOut, unfinished: this.unfinished, warmup: this.warmup,
    };
  }
}
