import { SluiceError } from '../../../errors.js';
import type { AdapterOptions, Listening } from '../adapter.js';
import type { Exchange } from '../exchange.js';
import { kRequestHeaders, kStatusText } from '../exchange.js';
import { loadUws } from './load.js';
import type { UwsRequest, UwsResponse } from './load.js';

const kDecoder = new TextDecoder();
/**
 * The last peer address seen by this thread, binary and as text: keep-alive clients send request
 * after request from one address, and comparing ≤ 16 bytes is cheaper than formatting them again.
 */
let lastAddress = new Uint8Array(0);
let lastAddressText = '';

function addressText(res: UwsResponse): string {
  const bytes = new Uint8Array(res.getRemoteAddress());
  if (bytes.length === lastAddress.length) {
    let i = 0;
    while (i < bytes.length && bytes[i] === lastAddress[i]) i++;
    if (i === bytes.length) return lastAddressText;
  }
  lastAddress = bytes;
  lastAddressText = kDecoder.decode(res.getRemoteAddressAsText());
  return lastAddressText;
}
const kWanted: ReadonlySet<string> = new Set(kRequestHeaders);

/** uWebSockets.js adapter. Several threads may listen on one port (SO_REUSEPORT, Linux). */
export function listenUws(options: AdapterOptions): Promise<Listening> {
  const uws = loadUws();
  const open = new Set<UwsExchange>();
  const app = uws.App().any('/*', (res, req) => {
    options.handler(new UwsExchange(res, req, options, open));
  });
  // One coarse sweep for body deadlines instead of a timer per request (they are seconds long).
  const sweep = setInterval(() => {
    const now = Date.now();
    for (const ex of open) ex.checkDeadline(now);
  }, Math.min(250, Math.max(10, options.bodyTimeoutMs / 4)));
  sweep.unref();
  return new Promise((resolve, reject) => {
    app.listen(options.host, options.port, (socket) => {
      if (!socket) {
        reject(new SluiceError('listen_failed', `uWebSockets.js cannot listen on ${options.host}:${options.port}`));
        return;
      }
      resolve({
        host: options.host,
        port: uws.us_socket_local_port(socket),
        get active() { return open.size; },
        abort: () => {
          clearInterval(sweep);
          uws.us_listen_socket_close(socket);
          for (const ex of open) ex.forceClose();
          app.close?.();
        },
        close: async (graceMs) => {
          // uWS aborts the process if a thread exits with sockets open: close the listener first,
          // let open requests finish for graceMs, then close what is left.
          uws.us_listen_socket_close(socket);
          const deadline = Date.now() + graceMs;
          while (open.size > 0 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 10));
          for (const ex of open) ex.forceClose();
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
  aborted = false;
  #remoteAddress: string | undefined;
  readonly #res: UwsResponse;
  readonly #headers = new Map<string, string>();
  readonly #open: Set<UwsExchange>;
  #onAbort: (() => void) | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  #complete = false;
  #tooLarge = false;
  #waiter: ((body: Uint8Array | 'too_large' | undefined) => void) | undefined;
  /** When the body must have arrived (0: no deadline). Checked by the adapter's sweep. */
  #deadline = 0;
  #ended = false;

  constructor(res: UwsResponse, req: UwsRequest, options: AdapterOptions, open: Set<UwsExchange>) {
    this.#res = res;
    this.#open = open;
    const method = req.getMethod().toUpperCase();
    this.method = method;
    const url = req.getUrl();
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    // HttpRequest lives only in this synchronous call: copy what we need now, in one pass.
    const headers = this.#headers;
    req.forEach((name, value) => { if (kWanted.has(name)) headers.set(name, value); });
    open.add(this);
    res.onAborted(() => {
      this.aborted = true;
      this.#finish();
      this.#settle(undefined);
      this.#onAbort?.();
    });
    if (method === 'POST' || method === 'PUT' || method === 'PATCH' || method === 'DELETE') {
      const declared = Number(this.#headers.get('content-length'));
      if (declared > options.maxBodyBytes) {
        this.#refuseTooLarge();
        return;
      }
      // Buffer from the start: chunks arriving before readBody is called must not be lost.
      res.onData((chunk, isLast) => {
        if (this.#tooLarge || this.aborted) return;
        this.#size += chunk.byteLength;
        if (this.#size > options.maxBodyBytes) {
          this.#refuseTooLarge();
          return;
        }
        // The ArrayBuffer is detached after this call: copy it. allocUnsafe takes small bodies from
        // Node's shared pool (every byte is overwritten here) instead of a fresh backing store.
        const copy = Buffer.allocUnsafe(chunk.byteLength);
        copy.set(new Uint8Array(chunk));
        this.#chunks.push(copy);
        if (isLast) {
          this.#complete = true;
          this.#deadline = 0;
          this.#settle(this.#body());
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
      this.#remoteAddress = this.aborted || this.#ended ? '' : addressText(this.#res);
    }
    return this.#remoteAddress;
  }

  onAbort(listener: () => void): void {
    this.#onAbort = listener;
  }

  readBody(limit: number): Promise<Uint8Array | 'too_large' | undefined> {
    if (this.#tooLarge) return Promise.resolve('too_large');
    if (this.aborted) return Promise.resolve(undefined);
    if (this.#size > limit) {
      this.#refuseTooLarge();
      return Promise.resolve('too_large');
    }
    if (this.#complete) return Promise.resolve(this.#body());
    return new Promise((resolve) => { this.#waiter = resolve; });
  }

  #body(): Uint8Array {
    return this.#chunks.length === 1 ? this.#chunks[0] : Buffer.concat(this.#chunks, this.#size);
  }

  /** The adapter's sweep: a body still incomplete past its deadline gets 408. */
  checkDeadline(now: number): void {
    if (this.#deadline === 0 || now < this.#deadline || this.#complete || this.aborted) return;
    this.#deadline = 0;
    this.respond(408, [], '', true);
    this.#settle(undefined);
  }

  #settle(body: Uint8Array | 'too_large' | undefined): void {
    this.#deadline = 0;
    const waiter = this.#waiter;
    this.#waiter = undefined;
    this.#chunks = [];
    waiter?.(body);
  }

  #refuseTooLarge(): void {
    if (this.#tooLarge) return;
    this.#tooLarge = true;
    this.respond(413, [['content-type', 'application/json']], '{"jsonrpc":"2.0","id":null,"error":{"code":-32600,"message":"Payload Too Large"}}', true);
    this.#settle('too_large');
  }

  respond(status: number, headers: readonly (readonly [string, string])[], body: string, closeConnection = false): void {
    if (this.aborted || this.#ended) return;
    this.#ended = true;
    this.#res.cork(() => {
      this.#res.writeStatus(`${status} ${kStatusText[status] ?? ''}`);
      for (const [k, v] of headers) this.#res.writeHeader(k, v);
      if (status === 204) this.#res.endWithoutBody(0, closeConnection);
      else this.#res.end(body, closeConnection);
    });
    this.#finish();
  }

  startStream(status: number, headers: readonly (readonly [string, string])[]): void {
    if (this.aborted || this.#ended) return;
    this.#res.cork(() => {
      this.#res.writeStatus(`${status} ${kStatusText[status] ?? ''}`);
      for (const [k, v] of headers) this.#res.writeHeader(k, v);
      this.#res.write(''); // sends the status line and headers now
    });
  }

  write(chunk: string): boolean {
    if (this.aborted || this.#ended) return false;
    this.#res.cork(() => { this.#res.write(chunk); }); // false only means buffered, not gone
    return true;
  }

  end(): void {
    if (this.aborted || this.#ended) return;
    this.#ended = true;
    this.#res.cork(() => { this.#res.end(); });
    this.#finish();
  }

  forceClose(): void {
    if (this.aborted || this.#ended) return;
    this.#res.close();
  }

  #finish(): void {
    this.#deadline = 0;
    this.#open.delete(this);
  }
}
