import type { NotifyKind, Reply, Running } from '../../protocol/engine.js';
import { kBusy, refusalBody } from '../../protocol/refusals.js';
import { notificationBody } from '../../protocol/wire.js';
import type { JsonRpcId } from '../../protocol/wire.js';
import type { SessionStore } from '../../sessions/store.js';
import type { CarriedTrace } from '../../telemetry/tracing/otel.js';
import { Counter } from '../../telemetry/counters.js';
import type { ServerCounters } from '../../telemetry/counters.js';
import type { Exchange } from './exchange.js';
import type { ReplyForm } from './headers.js';
import { kSseHeaders, sseEvent } from './sse.js';

type Headers = readonly (readonly [string, string])[];

/** A JSON answer's headers (the endpoint's refusals use them too). */
export const kJson: Headers = [['content-type', 'application/json']];
/** A 429 or 503 JSON answer's: when to try again. */
export const kRetryLater: Headers = [['retry-after', '1'], ['content-type', 'application/json']];
const kNone: Headers = [];

/** How a reply treats a reader that does not keep up (per connection: one exchange at a time). */
export interface SlowReaderPolicy {
  /** Bytes a connection may hold unsent before progress coalesces and logs are dropped. */
  readonly maxBufferedBytes: number;
  /** How long the final response may wait for room before the connection is closed. */
  readonly timeoutMs: number;
  readonly counters: ServerCounters;
}

/** What every reply of one endpoint shares (made once). */
export interface ReplyShared {
  readonly store: SessionStore | undefined;
  /** Called with the reply's client when its request is released (per-client limits). */
  readonly release: (client: string) => void;
  readonly policy: SlowReaderPolicy;
}

/**
 * The Reply of one HTTP request: JSON unless something is streamed first, then SSE (SSE from the
 * start for a client whose Accept takes no JSON).
 *
 * Slow readers: memory held for one connection is bounded by `maxBufferedBytes` plus one pending
 * progress message and the final response. Past the bound, progress coalesces (only the newest
 * value per request is kept: all a progress bar needs), log messages are dropped (counted), and
 * other messages (requests to the client, list changes) wait in order. A final response that finds
 * no room within `timeoutMs` closes the connection, which counts as the client going away.
 */
export class HttpReply implements Reply {
  readonly canStream: boolean;
  /** The client takes no JSON: even a plain answer goes out as one SSE event. */
  readonly #streamOnly: boolean;
  readonly #ex: Exchange;
  readonly #shared: ReplyShared;
  /** Headers every response to this exchange carries beyond its own (worker id, CORS). */
  readonly #extra: Headers;
  /** A session this request's initialize opened (announced in the reply; removed if refused). */
  readonly #session: string | undefined;
  /** The client a per-client limit counts. */
  readonly #client: string;
  /** Whether the client going away cancels the request (modern era, or cancelOnDisconnect). */
  readonly #cancelOnGone: boolean;
  /** The engine's handle, once the request runs asynchronously (`started`). */
  #running: Running | undefined;
  #streaming = false;
  /** No more writes: the response went out (or is waiting for room), or the client is gone. */
  #done = false;
  /** Past the bound: writes wait for a drain. */
  #congested = false;
  /** The newest progress held for a slow reader: serialised text, or params not yet serialised. */
  #pendingProgress: string | Record<string, unknown> | undefined;
  #pendingOther: string[] | undefined;
  /** The final SSE event waiting for room (then `end`). */
  #pendingFinal: string | undefined;
  #timer: ReturnType<typeof setTimeout> | undefined;
  /** Bytes of this exchange last added to the buffered-bytes gauge. */
  #reported = 0;

  constructor(ex: Exchange, shared: ReplyShared, form: ReplyForm, extra: Headers, session: string | undefined, client: string, cancelOnGone: boolean) {
    this.#ex = ex;
    this.#shared = shared;
    this.canStream = form !== 'json';
    this.#streamOnly = form === 'stream';
    this.#extra = extra;
    this.#session = session;
    this.#client = client;
    this.#cancelOnGone = cancelOnGone;
  }

  traceHeaders(): CarriedTrace | undefined {
    const traceparent = this.#ex.header('traceparent');
    return traceparent === undefined ? undefined : { traceparent, tracestate: this.#ex.header('tracestate') };
  }

  /**
   * The engine's request went asynchronous (called once, before handleRequest returns): from now on
   * the client going away is watched, and cancels it when this reply was made to.
   */
  started(running: Running): void {
    if (this.#running !== undefined) return;
    this.#running = running;
    this.#ex.onAbort(() => this.gone());
    if (this.#ex.aborted) this.gone();
  }

  #headers(base: Headers): Headers {
    // The common reply (no extra headers, no new session) reuses the constant list as is.
    const extra = this.#extra;
    const session = this.#session;
    if (extra.length === 0 && session === undefined) return base;
    const headers = [...base, ...extra];
    if (session !== undefined) headers.push(['mcp-session-id', session]);
    return headers;
  }

  #startStream(): void {
    this.#streaming = true;
    this.#ex.startStream(200, this.#headers(kSseHeaders));
  }

  notify(json: string, kind: NotifyKind = 'other'): void {
    if (this.#done || this.#ex.aborted) return;
    if (!this.#streaming) this.#startStream();
    if (this.#congested) {
      this.#hold(json, kind);
      return;
    }
    this.#write(sseEvent(json));
  }

  respond(json: string, httpStatus: number): void {
    if (this.#done || this.#ex.aborted) return;
    this.#done = true;
    if (!this.#streaming) {
      if (!this.#streamOnly || httpStatus !== 200) {
        // A 429 or 503 (a quota, a full table) says when to try again, whichever layer refused.
        this.#ex.respond(httpStatus, this.#headers(httpStatus === 429 || httpStatus === 503 ? kRetryLater : kJson), json);
        return;
      }
      this.#startStream(); // a client that takes no JSON gets even a plain answer as one event
    }
    if (this.#congested) {
      this.#pendingFinal = sseEvent(json);
      this.#armTimer();
      return;
    }
    this.#ex.write(sseEvent(json));
    this.#ex.end();
    this.#watchFinal();
  }

  cancelled(): void {
    if (this.#done || this.#ex.aborted) return;
    this.#done = true;
    this.#dropPending();
    this.#pendingFinal = undefined;
    this.#clearTimer();
    if (this.#streaming) this.#ex.end();
    else this.#ex.respond(202, this.#headers(kNone), '');
    this.#watchFinal();
  }

  get congested(): boolean {
    return this.#congested;
  }

  holdProgress(params: Record<string, unknown>): void {
    if (this.#done) return;
    if (this.#pendingProgress !== undefined) this.#shared.policy.counters.add(Counter.ProgressCoalesced);
    this.#pendingProgress = params;
  }

  dropLog(): void {
    this.#shared.policy.counters.add(Counter.LogsDropped);
  }

  busy(id: JsonRpcId): void {
    // A refused request allocates nothing: the session its initialize created goes, unannounced.
    const session = this.#session;
    const extra = this.#extra;
    if (session !== undefined) this.#shared.store?.remove(session);
    if (this.#done || this.#ex.aborted) return;
    this.#done = true;
    this.#ex.respond(kBusy.httpStatus, extra.length === 0 ? kRetryLater : [...kRetryLater, ...extra], refusalBody(id, kBusy));
  }

  released(): void {
    this.#shared.release(this.#client);
  }

  /** The client went away (or a streamed write failed, or it read too slowly). */
  gone(): void {
    this.#clearTimer();
    this.#dropPending();
    this.#pendingFinal = undefined;
    this.#unreport();
    if (this.#done) return;
    this.#done = true;
    if (this.#cancelOnGone) this.#running?.clientGone('client disconnected');
  }

  #write(chunk: string): void {
    if (!this.#ex.write(chunk)) {
      this.gone();
      return;
    }
    const buffered = this.#ex.bufferedBytes;
    if (buffered === 0 && this.#reported === 0) return;
    this.#report();
    if (buffered > this.#shared.policy.maxBufferedBytes) {
      this.#congested = true;
      this.#ex.onDrain(() => this.#drained());
    }
  }

  #hold(json: string, kind: NotifyKind): void {
    const { counters } = this.#shared.policy;
    if (kind === 'progress') {
      if (this.#pendingProgress !== undefined) counters.add(Counter.ProgressCoalesced);
      this.#pendingProgress = json;
    } else if (kind === 'log') {
      counters.add(Counter.LogsDropped);
    } else {
      (this.#pendingOther ??= []).push(json);
    }
  }

  /** Room again: send what waited, in order (others, then the newest progress, then the response). */
  #drained(): void {
    this.#congested = false;
    if (this.#ex.aborted) return;
    const others = this.#pendingOther;
    this.#pendingOther = undefined;
    const progress = this.#pendingProgress;
    this.#pendingProgress = undefined;
    if (others !== undefined) for (const json of others) this.#ex.write(sseEvent(json));
    if (progress !== undefined) this.#ex.write(sseEvent(typeof progress === 'string' ? progress : notificationBody('notifications/progress', progress)));
    const final = this.#pendingFinal;
    if (final !== undefined) {
      this.#pendingFinal = undefined;
      this.#clearTimer();
      this.#ex.write(final);
      this.#ex.end();
      this.#watchFinal();
      return;
    }
    this.#report();
    if (this.#ex.bufferedBytes > this.#shared.policy.maxBufferedBytes) {
      this.#congested = true;
      this.#ex.onDrain(() => this.#drained());
    }
  }

  /**
   * After the last write the exchange has ended: what is still buffered is the adapter's (at most
   * the bound plus the final response) until the reader takes it or the connection times out.
   */
  #watchFinal(): void {
    this.#unreport();
  }

  #armTimer(): void {
    if (this.#timer !== undefined) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      this.#shared.policy.counters.add(Counter.SlowReadersClosed);
      this.#ex.destroy();
      this.gone();
    }, this.#shared.policy.timeoutMs);
    this.#timer.unref();
  }

  #clearTimer(): void {
    if (this.#timer === undefined) return;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #dropPending(): void {
    this.#pendingProgress = undefined;
    this.#pendingOther = undefined;
  }

  /** Moves this exchange's share of the buffered-bytes gauge to what the adapter holds now. */
  #report(): void {
    const now = this.#ex.aborted ? 0 : this.#ex.bufferedBytes;
    if (now === this.#reported) return;
    this.#shared.policy.counters.add(Counter.StreamBufferedBytes, now - this.#reported);
    this.#reported = now;
  }

  #unreport(): void {
    if (this.#reported === 0) return;
    this.#shared.policy.counters.add(Counter.StreamBufferedBytes, -this.#reported);
    this.#reported = 0;
  }
}
