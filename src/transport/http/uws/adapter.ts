import { SluiceError } from '../../../errors.js';
import { dropLimit } from '../adapter.js';
import type { AdapterOptions, Listening } from '../adapter.js';
import type { BodyCallback, Exchange } from '../exchange.js';
import { kAdapterRefusal, kStatusText } from '../exchange.js';
import { collectHeaders, framingFault } from './framing.js';
import { loadUws } from './load.js';
import type { UwsRequest, UwsResponse } from './load.js';
import { OpenExchanges } from './open-exchanges.js';
import { ConnectionPeers } from './peers.js';

// One corked write or response without a closure per call (cork runs its callback synchronously).
let corkRes: UwsResponse;
let corkChunk = '';
let corkOk = true;
let corkStatus = 200;
const kNoHeaders: readonly (readonly [string, string])[] = [];
let corkHeaders = kNoHeaders;
let corkClose = false;
function corkedWrite(): void {
  corkOk = corkRes.write(corkChunk);
}
function corkedRespond(): void {
  const res = corkRes;
  // uWS sends "200 OK" unless told otherwise: the common status costs no call.
  if (corkStatus !== 200) res.writeStatus(statusLine(corkStatus));
  const headers = corkHeaders;
  for (let i = 0; i < headers.length; i++) res.writeHeader(headers[i]![0], headers[i]![1]);
  if (corkStatus === 204) res.endWithoutBody(0, corkClose);
  else res.end(corkChunk, corkClose);
}
function noop(): void {}

/** Status lines, built once per status. */
const kStatusLines = new Map<number, string>();
function statusLine(status: number): string {
  let line = kStatusLines.get(status);
  if (line === undefined) {
    line = `${status} ${kStatusText[status] ?? ''}`;
    kStatusLines.set(status, line);
  }
  return line;
}

/** uWS reports methods in lower case: the usual ones map to constants instead of a new string each. */
function upperMethod(method: string): string {
  switch (method) {
    case 'post': return 'POST';
    case 'get': return 'GET';
    case 'delete': return 'DELETE';
    case 'options': return 'OPTIONS';
    default: return method.toUpperCase();
  }
}

/** uWebSockets.js adapter. Several threads may listen on one port (SO_REUSEPORT, Linux). */
export function listenUws(options: AdapterOptions): Promise<Listening> {
  const uws = loadUws();
  const open = new OpenExchanges<UwsExchange>();
  const peers = new ConnectionPeers();
  const app = uws.App();
  // Before any connection can open: a connection whose opening went unreported would be taken
  // for one of the others (see peers.ts).
  app.filter?.(peers.changed);
  app.any('/*', (res, req) => {
    const ex = new UwsExchange(res, req, options, open, peers);
    // Refused for its framing: already answered (and the connection closing); nothing else runs.
    if (!ex.refused) options.handler(ex);
  });
  // One coarse sweep for body deadlines instead of a timer per request (they are seconds long).
  const sweep = setInterval(() => {
    const now = Date.now();
    open.forEach((ex) => ex.checkDeadline(now));
  }, Math.min(250, Math.max(10, options.bodyTimeoutMs / 4)));
  sweep.unref();
  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (socket) => {
      if (!socket) {
        // uWS gives no reason; these are the usual ones. (It binds with SO_REUSEPORT, so a port that
        // another SO_REUSEPORT process holds does not fail here: that needs a check of its own.)
        reject(new SluiceError('listen_failed', `uWebSockets.js cannot listen on ${options.host}:${options.port}: the port is probably in use by another process, or binding to it is not permitted (a port below 1024 without privileges, or an address this machine does not have)`));
        return;
      }
      resolve({
        host: options.host,
        port: uws.us_socket_local_port(socket),
        abort: () => {
          clearInterval(sweep);
          uws.us_listen_socket_close(socket);
          open.forEach((ex) => ex.forceClose());
          app.close?.();
        },
        close: async (graceMs) => {
          // uWS aborts the process if a thread exits with sockets open: close the listener first,
          // let open requests finish for graceMs, then close what is left.
          uws.us_listen_socket_close(socket);
          const deadline = Date.now() + graceMs;
          while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
          open.forEach((ex) => ex.forceClose());
          clearInterval(sweep);
          app.close?.();
        },
      });
    });
  });
}

class UwsExchange implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly duplicateHeader: string | undefined;
  aborted = false;
  /** Answered by the adapter for its framing (see framingFault): the endpoint never sees it. */
  refused = false;
  #remoteAddress: string | undefined;
  readonly #res: UwsResponse;
  readonly #headers = new Map<string, string>();
  readonly #open: OpenExchanges<UwsExchange>;
  readonly #peers: ConnectionPeers;
  /** Links of `OpenExchanges` (while listed). */
  linkPrev: UwsExchange | undefined = undefined;
  linkNext: UwsExchange | undefined = undefined;
  listed = false;
  #onAbort: (() => void) | undefined;
  /** The body's first chunk, and the rest when it came in several (most come in one). */
  #first: Buffer | undefined;
  #more: Buffer[] | undefined;
  #size = 0;
  #complete = false;
  #tooLarge = false;
  #waiter: BodyCallback | undefined;
  /** When the body must have arrived (0: no deadline). Checked by the adapter's sweep. */
  #deadline = 0;
  #ended = false;
  #onDrain: (() => void) | undefined;
  /**
   * Backpressure. uWS reports progress only through write results, and once an onWritable handler
   * is set it drains its own buffer only when written to. So after a write met backpressure, chunks
   * wait here (`#queue`, `#queued` bytes) until the socket is writable; `#held` bounds what uWS
   * itself still holds. `#queue` is undefined while the client keeps up.
   */
  #queue: string[] | undefined;
  #queued = 0;
  #held = 0;
  #watching = false;

  constructor(res: UwsResponse, req: UwsRequest, options: AdapterOptions, open: OpenExchanges<UwsExchange>, peers: ConnectionPeers) {
    this.#res = res;
    this.#open = open;
    this.#peers = peers;
    const method = upperMethod(req.getMethod());
    this.method = method;
    const url = req.getUrl();
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    // HttpRequest lives only in this synchronous call: copy what we need now, in one pass.
    this.duplicateHeader = collectHeaders(req, this.#headers, options.allHeaders);
    const fault = framingFault(res, peers);
    if (fault !== undefined) {
      // Answered at once, and the connection closed after it: nothing after these headers is read
      // as another request.
      this.refused = true;
      this.#complete = true;
      this.respond(fault.status, [['content-type', 'application/json']], fault.body, true);
      return;
    }
    open.add(this);
    res.onAborted(() => {
      this.aborted = true;
      this.#queue = undefined;
      this.#finish();
      this.#settle(undefined);
      this.#onAbort?.();
    });
    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') {
      const declared = Number(this.#headers.get('content-length'));
      const drop = dropLimit(options.maxBodyBytes);
      if (declared > drop) {
        this.#refuseTooLarge(true);
        return;
      }
      // Over the limit but within dropLimit: read to the end and dropped, then 413 (see dropLimit).
      if (declared > options.maxBodyBytes) this.#startDropping();
      // Buffer from the start: chunks arriving before readBody is called must not be lost.
      res.onData((chunk, isLast) => {
        if (this.#ended || this.aborted) return;
        this.#size += chunk.byteLength;
        // A body being dropped (declared over the limit, or past it now) is counted, never copied.
        if (this.#tooLarge || this.#size > options.maxBodyBytes) {
          if (this.#size > drop) return this.#refuseTooLarge(true);
          this.#startDropping();
          if (isLast) {
            this.#complete = true;
            this.#refuseTooLarge(false);
          }
          return;
        }
        // The ArrayBuffer is detached after this call: copy it. allocUnsafe takes small bodies from
        // Node's shared pool (every byte is overwritten here) instead of a fresh backing store.
        const copy = Buffer.allocUnsafe(chunk.byteLength);
        copy.set(new Uint8Array(chunk));
        if (this.#first === undefined) this.#first = copy;
        else (this.#more ??= []).push(copy);
        if (isLast) {
          this.#complete = true;
          this.#deadline = 0;
          // Keep the chunks if nobody waits yet (an authenticate hook may still be running).
          if (this.#waiter !== undefined) this.#settle(this.#body());
        }
      });
      this.#deadline = Date.now() + options.bodyTimeoutMs;
    } else {
      this.#complete = true;
    }
  }

  header(name: string): string | undefined {
    return this.#headers.get(name);
  }

  /** Read on first use (most requests are scoped by session): the response is valid until it ends. */
  get remoteAddress(): string {
    if (this.#remoteAddress === undefined) {
      this.#remoteAddress = this.aborted || this.#ended ? '' : this.#peers.address(this.#res);
    }
    return this.#remoteAddress;
  }

  onAbort(listener: () => void): void {
    this.#onAbort = listener;
  }

  readBody(limit: number, done: BodyCallback): void {
    if (this.#tooLarge) return done('too_large');
    if (this.aborted) return done(undefined);
    if (this.#size > limit) {
      this.#refuseTooLarge(!this.#complete);
      return done('too_large');
    }
    if (this.#complete) {
      const body = this.#body();
      this.#first = undefined;
      this.#more = undefined;
      return done(body);
    }
    this.#waiter = done;
  }

  #body(): Uint8Array {
    const first = this.#first;
    if (first === undefined) return Buffer.alloc(0);
    const more = this.#more;
    return more === undefined ? first : Buffer.concat([first, ...more], this.#size);
  }

  /** The adapter's sweep: a body still incomplete past its deadline gets 408. */
  checkDeadline(now: number): void {
    if (this.#deadline === 0 || now < this.#deadline || this.#complete || this.aborted) return;
    this.#deadline = 0;
    if (this.#tooLarge) return this.#refuseTooLarge(true); // a body being dropped, still not all in
    this.respond(408, [], '', true);
    this.#settle(undefined);
  }

  #settle(body: Uint8Array | 'too_large' | undefined): void {
    this.#deadline = 0;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    this.#first = undefined;
    this.#more = undefined;
    waiter?.(body);
  }

  /**
   * Past maxBodyBytes, within dropLimit: what was kept is let go and a waiting read is told now;
   * the chunks still to come are counted and dropped, and the 413 waits for the body's end.
   */
  #startDropping(): void {
    if (this.#tooLarge) return;
    this.#tooLarge = true;
    this.#first = undefined;
    this.#more = undefined;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    waiter?.('too_large');
  }

  /**
   * 413. `cut`: the rest of the body is not read and the connection is closed; else the body has
   * been read to its end and the connection stays (see dropLimit).
   */
  #refuseTooLarge(cut: boolean): void {
    this.#tooLarge = true;
    const { status, body } = kAdapterRefusal.payloadTooLarge;
    this.respond(status, [['content-type', 'application/json']], body, cut);
    this.#settle('too_large');
  }

  respond(status: number, headers: readonly (readonly [string, string])[], body: string, closeConnection = false): void {
    if (this.aborted || this.#ended) return;
    this.#ended = true;
    corkRes = this.#res;
    corkStatus = status;
    corkHeaders = headers;
    corkChunk = body;
    corkClose = closeConnection;
    this.#res.cork(corkedRespond);
    corkChunk = ''; // keep neither the body nor the headers alive until the next response
    corkHeaders = kNoHeaders;
    this.#finish();
  }

  startStream(status: number, headers: readonly (readonly [string, string])[]): void {
    if (this.aborted || this.#ended) return;
    this.#res.cork(() => {
      this.#res.writeStatus(statusLine(status));
      for (const [k, v] of headers) this.#res.writeHeader(k, v);
      this.#res.write(''); // sends the status line and headers now
    });
  }

  write(chunk: string): boolean {
    if (this.aborted || this.#ended) return false;
    const queue = this.#queue;
    if (queue !== undefined) {
      queue.push(chunk);
      this.#queued += Buffer.byteLength(chunk);
      return true;
    }
    corkRes = this.#res;
    corkChunk = chunk;
    this.#res.cork(corkedWrite);
    corkChunk = ''; // do not keep a large chunk alive until the next write
    // false means uWS buffered part of it, not that the client is gone.
    if (!corkOk) this.#pressed(Buffer.byteLength(chunk));
    return true;
  }

  get bufferedBytes(): number {
    return this.#queue === undefined ? 0 : this.#queued + this.#held;
  }

  onDrain(listener: () => void): void {
    this.#onDrain = listener;
  }

  /** A write met backpressure: queue from now on and watch for the socket to take more. */
  #pressed(bytes: number): void {
    this.#held += bytes;
    this.#queue = [];
    if (!this.#watching) {
      this.#watching = true;
      this.#res.onWritable(() => this.#writable());
    }
  }

  /**
   * The socket can take more. Writes here are uncorked so their result is exact: true means uWS's
   * buffer and the chunk went out whole. The last character is written on its own, so when it goes
   * out everything before it did too; when it does not, uWS holds at most that character.
   * Returning false keeps uWS watching for the next writable event.
   */
  #writable(): boolean {
    const res = this.#res;
    const queue = this.#queue;
    if (queue === undefined || queue.length === 0) {
      // Nothing of ours waits; push out what uWS holds (with a handler set it does not do so
      // itself). The socket just reported room, and what uWS holds is one write's remainder at most.
      res.cork(noop);
      if (queue !== undefined) {
        this.#queue = undefined;
        this.#held = 0;
        this.#drained();
      }
      return true;
    }
    const text = queue.length === 1 ? queue[0] : queue.join('');
    // Never split a surrogate pair: each part must encode to valid UTF-8 on its own.
    const code = text.charCodeAt(text.length - 1);
    const cut = text.length - (code >= 0xdc00 && code <= 0xdfff && text.length > 1 ? 2 : 1);
    const tail = cut === 0 ? text : text.slice(cut);
    const bytes = this.#queued;
    queue.length = 0;
    this.#queued = 0;
    if (cut > 0 && !res.write(text.slice(0, cut))) {
      queue.push(tail);
      this.#queued = Buffer.byteLength(tail);
      this.#held += bytes - this.#queued;
      return false;
    }
    if (!res.write(tail)) {
      this.#held = Buffer.byteLength(tail);
      return false;
    }
    this.#queue = undefined;
    this.#held = 0;
    this.#drained();
    return true;
  }

  #drained(): void {
    if (!this.aborted && !this.#ended) this.#onDrain?.();
  }

  end(): void {
    if (this.aborted || this.#ended) return;
    this.#ended = true;
    const queue = this.#queue;
    this.#queue = undefined;
    // Queued chunks go to uWS with the end: once ended, uWS drains its buffer by itself (and closes
    // a connection that takes nothing for 10 s).
    const rest = queue === undefined || queue.length === 0 ? '' : queue.join('');
    this.#res.cork(() => {
      if (rest !== '') this.#res.write(rest);
      this.#res.end();
    });
    this.#finish();
  }

  destroy(): void {
    // close() runs the onAborted handler at once: aborted, listener called once.
    if (this.aborted || this.#ended) return;
    this.#res.close();
  }

  forceClose(): void {
    this.destroy();
  }

  #finish(): void {
    this.#deadline = 0;
    this.#open.delete(this);
  }
}
