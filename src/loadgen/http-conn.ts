/**
 * One keep-alive HTTP/1.1 connection on a raw socket: a hand-rolled writer (the request head is
 * one string built once per run, plus the length) and a parser that reads just what a load run
 * needs (status, a handful of headers, Content-Length, chunked or close-delimited bodies).
 *
 * Why not undici's Pool: against the raw uWS echo on one pinned core, this connection reached
 * about 1.5x the requests/s of a Pool with the same connections (bench/loadgen.ts measures both):
 * the Pool's per-request objects, header validation and stream machinery cost more than the
 * whole exchange. One request at a time per connection (no pipelining), as wrk does.
 */
import { connect as netConnect } from 'node:net';
import type { Socket } from 'node:net';
import { connect as tlsConnect } from 'node:tls';

/** The few response headers a load run reads (names lower-case). */
export interface ResponseHead {
  status: number;
  contentType: string;
  sessionId: string | undefined;
  wwwAuthenticate: string | undefined;
}

/**
 * Receives one exchange's response; exactly one of end() or fail() is called, once. data(): the
 * body bytes buf[start, end), valid during the call only (the connection reuses its read buffer).
 */
export interface Exchange {
  head(head: ResponseHead): void;
  /** Body bytes; returns why the rest cannot be read (the connection then ends the response as invalid), or undefined. */
  data(buf: Buffer, start: number, end: number): string | undefined;
  end(): void;
  fail(kind: 'reset' | 'invalid', message: string): void;
}

/** A response head larger than this is refused (hostile or broken server). */
const kMaxHead = 64 * 1024;

/** The end of a response head. */
const kHeadEnd = Buffer.from('\r\n\r\n', 'latin1');

/** A parsed response head: what the connection needs besides what the exchange gets. */
interface ParsedHead { head: ResponseHead; length: number; chunked: boolean; closeAfter: boolean }

/** Whether a[at, at + b.length) holds b's bytes (short byte ranges: cheaper than a native call). */
export function sameBytes(a: Buffer, at: number, b: Buffer): boolean {
  if (at < 0 || at + b.length > a.length) return false;
  for (let i = 0; i < b.length; i++) if (a[at + i] !== b[i]) return false;
  return true;
}

const enum State { Idle, Head, Length, ChunkSize, ChunkData, ChunkEnd, Trailers, UntilClose }

export class HttpConn {
  readonly #url: URL;
  #socket: Socket | undefined;
  #connected = false;
  #pending: string | Buffer | undefined;
  #exchange: Exchange | undefined;
  #state = State.Idle;
  #buffer: Buffer | undefined;
  #remaining = 0;
  #closeAfter = false;
  #noBody = false;
  #lastError: string | undefined;
  #readBuffer: Buffer | undefined;
  /** The last final (2xx..5xx) response head's bytes, CRLF CRLF included, and what it said: a server repeats its head byte for byte, bar the Date second. */
  #lastHead: Buffer | undefined;
  #lastParsed: ParsedHead | undefined;
  bytesIn = 0;
  bytesOut = 0;

  constructor(url: URL) {
    this.#url = url;
  }

  /** Whether an exchange is in progress. */
  get busy(): boolean {
    return this.#exchange !== undefined;
  }

  /**
   * Whether bytes of the last request have not reached the kernel yet (the server answered before
   * reading them all): a caller that reuses its request Buffer copies it first then.
   */
  get writePending(): boolean {
    return this.#socket !== undefined && this.#socket.writableLength > 0;
  }

  /** Sends one request (`text`: the whole request, head and body) and reports its response to `exchange`. */
  send(text: string | Buffer, exchange: Exchange, noBody = false, bytes = typeof text === 'string' ? Buffer.byteLength(text) : text.length): void {
    // `text` is the whole request (`bytes` long in UTF-8); its head is ASCII and its body UTF-8 (JSON).
    if (this.#exchange !== undefined) throw new Error('HttpConn: one exchange at a time');
    this.#exchange = exchange;
    this.#state = State.Head;
    this.#noBody = noBody;
    this.#closeAfter = false;
    this.bytesOut += bytes;
    const socket = this.#socket ?? this.#open();
    if (this.#connected) socket.write(text);
    else this.#pending = text;
  }

  /** Ends the exchange in progress by closing the connection (the next send opens a new one). */
  abort(): void {
    this.#exchange = undefined;
    this.#drop();
  }

  close(): void {
    this.#exchange = undefined;
    this.#drop();
  }

  #open(): Socket {
    const port = Number(this.#url.port || (this.#url.protocol === 'https:' ? 443 : 80));
    const host = this.#url.hostname.replace(/^\[|\]$/g, '');
    // Plain TCP reads into one buffer of this connection's (onread): no Buffer and no stream event per read.
    const socket = this.#url.protocol === 'https:'
      ? tlsConnect({ host, port, servername: /^[\d.:]+$/.test(host) ? undefined : host, ALPNProtocols: ['http/1.1'] })
      : netConnect({ host, port, onread: { buffer: this.#readBuffer ??= Buffer.allocUnsafe(64 * 1024), callback: (n, buf) => { this.#onData(socket, (buf as Buffer).subarray(0, n)); return true; } } });
    socket.setNoDelay(true);
    this.#socket = socket;
    this.#connected = false;
    socket.once(this.#url.protocol === 'https:' ? 'secureConnect' : 'connect', () => {
      if (this.#socket !== socket) return;
      this.#connected = true;
      if (this.#pending !== undefined) {
        socket.write(this.#pending);
        this.#pending = undefined;
      }
    });
    if (this.#url.protocol === 'https:') socket.on('data', (chunk: Buffer) => this.#onData(socket, chunk));
    socket.on('error', (error: NodeJS.ErrnoException) => { this.#lastError = error.code ?? error.message; }); // 'close' follows and reports it
    socket.once('close', () => {
      if (this.#socket !== socket) return;
      this.#socket = undefined;
      const wasConnected = this.#connected;
      this.#connected = false;
      this.#pending = undefined;
      const exchange = this.#exchange;
      if (exchange === undefined) return;
      if (this.#state === State.UntilClose) {
        this.#finish();
        return;
      }
      this.#exchange = undefined;
      const error = this.#lastError;
      this.#lastError = undefined;
      exchange.fail('reset', !wasConnected && error !== undefined ? `could not connect to ${this.#url.host} (${error})`
        : this.#state === State.Head ? 'the connection closed before a response' : 'the connection closed in the middle of a response');
    });
    return socket;
  }

  #onData(socket: Socket, chunk: Buffer): void {
    if (this.#socket !== socket) return;
    this.bytesIn += chunk.length;
    this.#read(chunk);
  }

  #drop(): void {
    const socket = this.#socket;
    this.#socket = undefined;
    this.#connected = false;
    this.#pending = undefined;
    this.#buffer = undefined;
    this.#state = State.Idle;
    socket?.destroy();
  }

  #invalid(message: string): void {
    const exchange = this.#exchange;
    this.#exchange = undefined;
    this.#drop();
    exchange?.fail('invalid', message);
  }

  /** The response is whole. `extra`: bytes followed it that no request asked for, so the connection goes. */
  #finish(extra = false): void {
    const exchange = this.#exchange;
    this.#exchange = undefined;
    this.#state = State.Idle;
    this.#buffer = undefined;
    if (this.#closeAfter || extra) this.#drop();
    exchange?.end();
  }

  #read(chunk: Buffer): void {
    const buf = this.#buffer === undefined ? chunk : Buffer.concat([this.#buffer, chunk]);
    // What is kept past this call is copied (Buffer.from): `chunk` may be the connection's reused read buffer.
    this.#buffer = undefined;
    let at = 0;
    while (at < buf.length || this.#state === State.Length) {
      const exchange = this.#exchange;
      if (exchange === undefined) return; // bytes after an aborted exchange: dropped
      switch (this.#state) {
        case State.Head: {
          const next = this.#readHead(buf, at);
          if (next === -1) return;
          at = next;
          break;
        }
        case State.Length: {
          if (this.#remaining === 0) return this.#finish(at < buf.length);
          const take = Math.min(this.#remaining, buf.length - at);
          if (take === 0) return;
          const stop = exchange.data(buf, at, at + take);
          if (stop !== undefined) return this.#invalid(stop);
          at += take;
          this.#remaining -= take;
          break;
        }
        case State.ChunkSize: {
          const end = buf.indexOf('\r\n', at, 'latin1');
          if (end === -1) {
            if (buf.length - at > 1024) return this.#invalid('a malformed chunk size');
            this.#buffer = Buffer.from(buf.subarray(at));
            return;
          }
          const size = Number.parseInt(buf.toString('latin1', at, end).split(';')[0]!, 16);
          if (!Number.isSafeInteger(size) || size < 0) return this.#invalid('a malformed chunk size');
          at = end + 2;
          this.#remaining = size;
          this.#state = size === 0 ? State.Trailers : State.ChunkData;
          break;
        }
        case State.ChunkData: {
          const take = Math.min(this.#remaining, buf.length - at);
          const stop = exchange.data(buf, at, at + take);
          if (stop !== undefined) return this.#invalid(stop);
          at += take;
          this.#remaining -= take;
          if (this.#remaining === 0) this.#state = State.ChunkEnd;
          break;
        }
        case State.ChunkEnd: {
          if (buf.length - at < 2) { this.#buffer = Buffer.from(buf.subarray(at)); return; }
          if (buf[at] !== 13 || buf[at + 1] !== 10) return this.#invalid('a chunk not ended by CRLF');
          at += 2;
          this.#state = State.ChunkSize;
          break;
        }
        case State.Trailers: {
          // Usually just CRLF; otherwise trailer lines up to an empty one.
          if (buf.length - at >= 2 && buf[at] === 13 && buf[at + 1] === 10) {
            at += 2;
            return this.#finish(at < buf.length);
          }
          const end = buf.indexOf('\r\n\r\n', at, 'latin1');
          if (end === -1) { this.#buffer = Buffer.from(buf.subarray(at)); return; }
          at = end + 4;
          return this.#finish(at < buf.length);
        }
        case State.UntilClose: {
          const stop = exchange.data(buf, at, buf.length);
          if (stop !== undefined) this.#invalid(stop);
          return;
        }
        default:
          return this.#invalid('bytes the client did not ask for');
      }
    }
  }

  /** A response head at buf[at…]: where its body starts, or -1 when the head is not whole yet (kept) or the exchange is over. */
  #readHead(buf: Buffer, at: number): number {
    // The same bytes as the last head (it ends with the first CRLF CRLF in it): the same head, not parsed again.
    const last = this.#lastHead;
    if (last !== undefined && sameBytes(buf, at, last)) return this.#applyHead(this.#lastParsed!) ? at + last.length : -1;
    const end = buf.indexOf(kHeadEnd, at);
    if (end === -1) {
      if (buf.length - at > kMaxHead) this.#invalid('a response head over 64 KiB');
      else this.#buffer = Buffer.from(buf.subarray(at));
      return -1;
    }
    const parsed = this.#parseHead(buf.toString('latin1', at, end));
    if (parsed === undefined) return -1;
    if (parsed.head.status >= 200) {
      this.#lastHead = Buffer.from(buf.subarray(at, end + 4));
      this.#lastParsed = parsed;
    }
    return this.#applyHead(parsed) ? end + 4 : -1;
  }

  /** Reads the status line and headers. Undefined when the head was refused (the exchange has failed). */
  #parseHead(text: string): ParsedHead | undefined {
    if (!text.startsWith('HTTP/1.')) {
      this.#invalid('an answer that is not HTTP/1.x');
      return undefined;
    }
    const status = Number(text.slice(9, 12));
    if (!Number.isInteger(status) || status < 100) {
      this.#invalid('a malformed status line');
      return undefined;
    }
    const parsed: ParsedHead = { head: { status, contentType: '', sessionId: undefined, wwwAuthenticate: undefined }, length: -1, chunked: false, closeAfter: false };
    const head = parsed.head;
    let lineStart = text.indexOf('\r\n');
    while (lineStart !== -1) {
      const next = text.indexOf('\r\n', lineStart + 2);
      const first = text.charCodeAt(lineStart + 2) | 0x20;
      const at = lineStart + 2;
      lineStart = next;
      // Only names starting c, t, m or w matter here: the others are skipped without a slice.
      if (first !== 99 && first !== 116 && first !== 109 && first !== 119) continue;
      const line = text.slice(at, next === -1 ? undefined : next);
      const colon = line.indexOf(':');
      if (colon <= 0) continue;
      const name = line.slice(0, colon).toLowerCase();
      const value = line.slice(colon + 1).trim();
      switch (name) {
        case 'content-length': parsed.length = /^\d{1,15}$/.test(value) ? Number(value) : Number.NaN; break;
        case 'transfer-encoding': parsed.chunked = value.toLowerCase().includes('chunked'); break;
        case 'content-type': head.contentType = value.toLowerCase(); break;
        case 'mcp-session-id': head.sessionId = value; break;
        case 'www-authenticate': head.wwwAuthenticate = head.wwwAuthenticate === undefined ? value : `${head.wwwAuthenticate}, ${value}`; break;
        case 'connection': if (value.toLowerCase() === 'close') parsed.closeAfter = true; break;
        default: break;
      }
    }
    return parsed;
  }

  /** Acts on a parsed head: hands it to the exchange and sets the body state. False when the exchange is over. */
  #applyHead(parsed: ParsedHead): boolean {
    const exchange = this.#exchange!;
    const { head, length, chunked } = parsed;
    const status = head.status;
    if (parsed.closeAfter) this.#closeAfter = true;
    if (status < 200) { // 100 Continue and friends: another head follows
      this.#state = State.Head;
      return true;
    }
    exchange.head(head);
    if (this.#exchange !== exchange) return false; // the head handler aborted
    if (this.#noBody || status === 204 || status === 304) {
      this.#state = State.Length;
      this.#remaining = 0;
    } else if (chunked) {
      this.#state = State.ChunkSize;
    } else if (Number.isNaN(length)) {
      this.#invalid('a malformed Content-Length');
      return false;
    } else if (length >= 0) {
      this.#state = State.Length;
      this.#remaining = length;
    } else {
      this.#state = State.UntilClose;
      this.#closeAfter = true;
    }
    return true;
  }
}
