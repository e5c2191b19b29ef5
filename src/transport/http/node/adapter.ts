import { createServer } from 'node:http';
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import { SluiceError } from '../../../errors.js';
import { dropLimit } from '../adapter.js';
import type { AdapterOptions, Listening } from '../adapter.js';
import type { BodyCallback, Exchange } from '../exchange.js';
import { collectHeader, kAdapterRefusal, kMaxHeaderCount } from '../exchange.js';
import { Connections } from './connections.js';
import type { Connection } from './connections.js';
import { nodeReusePort } from './reuse-port.js';

const kJson: readonly (readonly [string, string])[] = [['content-type', 'application/json']];
const kJsonClose: readonly (readonly [string, string])[] = [['connection', 'close'], ...kJson];

/** The keep-alive time responses advertise (`Keep-Alive: timeout=5`); `Connections` keeps to it. */
const kKeepAliveMs = 5_000;

/**
 * node:http adapter: the same contract as the uWS one, for when uWS cannot load or is not wanted.
 * Like uWS it binds with SO_REUSEPORT where Node offers it (`reusePort`, Node ≥ 22.12 / ≥ 23.1 on
 * Linux): then several HTTP worker threads listen on one port and the kernel spreads connections
 * between them. (The supervisor's exclusive-bind probe still refuses a port another process holds.)
 */
export function listenNode(options: AdapterOptions): Promise<Listening> {
  const connections = new Connections(kKeepAliveMs);
  let closing = false;
  // The body deadline is node's own: the whole request must arrive within bodyTimeoutMs (a timer per
  // request of ours would cost more than node's sweep of its connections, which runs anyway).
  const requestTimeout = options.bodyTimeoutMs;
  // Node requires headersTimeout <= requestTimeout.
  const headersTimeout = Math.min(10_000, requestTimeout);
  // Node enforces headersTimeout/requestTimeout only when it sweeps its connections, every 30 s by
  // default: a slowloris client (a header block that never ends) would hold a socket that long.
  const connectionsCheckingInterval = Math.max(250, Math.min(1_000, Math.floor(headersTimeout / 4)));
  // keepAliveTimeout 0: idle keep-alive connections are closed by `connections` (see there why).
  const server = createServer({ requestTimeout, headersTimeout, keepAliveTimeout: 0, connectionsCheckingInterval }, (req, res) => {
    // node:http drops header lines past maxHeadersCount without a word: one more than the bound is
    // let through so that a request over it is seen, and refused like on uWS.
    if (req.rawHeaders.length > 2 * kMaxHeaderCount) {
      res.shouldKeepAlive = false;
      const { status, body } = kAdapterRefusal.headersTooLarge;
      res.writeHead(status, { 'content-type': 'application/json', connection: 'close' }).end(body);
      return;
    }
    // While shutting down, tell keep-alive clients not to reuse the connection.
    if (closing) res.shouldKeepAlive = false;
    // node writes `Keep-Alive: timeout=` from this field, which it sets from keepAliveTimeout (0 here).
    (res as unknown as { _keepAliveTimeout: number })._keepAliveTimeout = kKeepAliveMs;
    options.handler(new NodeExchange(req, res, options, connections, connections.begin(req.socket)));
  });
  server.maxHeadersCount = kMaxHeaderCount + 1;
  server.on('connection', (socket: Socket) => connections.add(socket));
  server.once('close', () => connections.stop());
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Socket) => {
    if (!socket.writable) return socket.destroy();
    // ERR_HTTP_REQUEST_TIMEOUT: the request (a stalled body) did not arrive within requestTimeout.
    const status = error.code === 'HPE_HEADER_OVERFLOW' ? '431 Request Header Fields Too Large' : error.code === 'ERR_HTTP_REQUEST_TIMEOUT' ? '408 Request Timeout' : '400 Bad Request';
    socket.end(`HTTP/1.1 ${status}\r\nconnection: close\r\ncontent-length: 0\r\n\r\n`);
    // Closing with the rest of an oversized request unread resets the connection, and the client
    // may lose the answer: what it still sends is read and dropped, for a second at most.
    socket.on('data', () => {});
    socket.resume();
    setTimeout(() => socket.destroy(), 1_000).unref();
  });
  return new Promise((resolve, reject) => {
    server.once('error', (error) => {
      connections.stop();
      reject(new SluiceError('listen_failed', `cannot listen on ${options.host}:${options.port}: ${error.message}`, { cause: error }));
    });
    // `reusePort` is typed from Node 22's listen options; older Nodes are never asked for it.
    const listenOptions: { port: number; host: string; reusePort?: boolean } = { port: options.port, host: options.host };
    if (nodeReusePort().ok) listenOptions.reusePort = true;
    server.listen(listenOptions, () => {
      const address = server.address();
      const port = typeof address === 'object' && address !== null ? address.port : options.port;
      resolve({
        host: options.host,
        port,
        abort: () => {
          server.close();
          connections.stop();
          for (const s of connections.sockets()) s.destroy();
        },
        close: (graceMs) => new Promise<void>((done) => {
          closing = true;
          server.close(() => done());
          // Connections become idle as their last responses finish: close each as soon as it is.
          server.closeIdleConnections();
          const idle = setInterval(() => server.closeIdleConnections(), 20);
          const timer = setTimeout(() => { for (const s of connections.sockets()) s.destroy(); }, graceMs);
          timer.unref();
          server.once('close', () => { clearTimeout(timer); clearInterval(idle); });
        }),
      });
    });
  });
}

class NodeExchange implements Exchange {
  readonly method: string;
  readonly path: string;
  readonly remoteAddress: string;
  readonly duplicateHeader: string | undefined;
  aborted = false;
  readonly #req: IncomingMessage;
  readonly #res: ServerResponse;
  readonly #options: AdapterOptions;
  readonly #headers = new Map<string, string>();
  #onAbort: (() => void) | undefined;
  #onDrain: (() => void) | undefined;
  /** The body read in progress (slow path only): told `undefined` when the exchange closes first. */
  #pendingBody: BodyCallback | undefined;

  constructor(req: IncomingMessage, res: ServerResponse, options: AdapterOptions, connections: Connections, connection: Connection | undefined) {
    this.#req = req;
    this.#res = res;
    this.#options = options;
    this.method = req.method ?? 'GET';
    const url = req.url ?? '/';
    const q = url.indexOf('?');
    this.path = q === -1 ? url : url.slice(0, q);
    this.remoteAddress = req.socket.remoteAddress ?? '';
    // From rawHeaders, not req.headers: node merges or drops repeats there, per header, its own way.
    const raw = req.rawHeaders;
    const all = options.allHeaders;
    let repeated: string | undefined;
    for (let i = 0; i < raw.length; i += 2) {
      const name = raw[i].toLowerCase();
      repeated ??= collectHeader(this.#headers, name, raw[i + 1], all);
    }
    this.duplicateHeader = repeated;
    // One listener for the connection's busy count and the abort (a response closes once: no once wrapper).
    res.on('close', () => {
      connections.end(connection);
      if (!res.writableFinished && !this.aborted) {
        this.aborted = true;
        const pending = this.#pendingBody;
        this.#pendingBody = undefined;
        pending?.(undefined);
        this.#onAbort?.();
      }
    });
  }

  header(name: string): string | undefined {
    return this.#headers.get(name);
  }

  onAbort(listener: () => void): void {
    this.#onAbort = listener;
  }

  readBody(limit: number, done: BodyCallback): void {
    if (this.aborted) return done(undefined);
    const max = Math.min(limit, this.#options.maxBodyBytes);
    const drop = dropLimit(max);
    const declared = Number(this.#headers.get('content-length'));
    if (declared > drop) return done(this.#tooLarge(true));
    const req = this.#req;
    // Fast path: the parser has already seen the whole message (the endpoint read after awaiting,
    // e.g. authentication), so it sits in the stream's buffer: take it at once, with no listener.
    if (req.complete && !req.readableFlowing) {
      const body = (req.read() as Buffer | null) ?? Buffer.alloc(0);
      return done(body.length > max ? this.#tooLarge(false) : body);
    }
    const chunks: Buffer[] = [];
    let size = 0;
    // Over the limit but within dropLimit: read to the end and dropped, then 413 (see dropLimit).
    let dropping = declared > max;
    const finish = (body: Buffer | 'too_large' | undefined) => {
      if (this.#pendingBody !== done) return; // settled already (the exchange closed, or too large)
      this.#pendingBody = undefined;
      done(body);
    };
    // No timer of our own: node:http answers 408 and closes when the whole request has not arrived
    // within requestTimeout (= bodyTimeoutMs), which closes the response and settles this read.
    this.#pendingBody = done;
    // `on`, not `once`, and never removed: the request ends once, and a settled read ignores what
    // comes after. (No 'error' listener: IncomingMessage emits 'error' only to listeners, and an
    // abort closes the response, which settles the read.)
    req.on('data', (chunk: Buffer) => {
      if (this.#pendingBody !== done) return;
      size += chunk.length;
      if (size > drop) return finish(this.#tooLarge(true));
      if (dropping || size > max) {
        // Nothing of a body that is being dropped is kept, not even what came before the limit.
        dropping = true;
        chunks.length = 0;
        return;
      }
      chunks.push(chunk);
    });
    req.on('end', () => finish(dropping ? this.#tooLarge(false) : chunks.length === 1 ? chunks[0] : Buffer.concat(chunks, size)));
  }

  /**
   * 413. `cut`: the rest of the body is not read and the connection is closed; else the body has
   * been read to its end, and the connection stays (see dropLimit).
   */
  #tooLarge(cut: boolean): 'too_large' {
    const { status, body } = kAdapterRefusal.payloadTooLarge;
    if (!cut) {
      this.respond(status, kJson, body);
      return 'too_large';
    }
    this.respond(status, kJsonClose, body);
    this.#req.resume();
    setImmediate(() => this.#req.destroy());
    return 'too_large';
  }

  respond(status: number, headers: readonly (readonly [string, string])[], body: string): void {
    if (this.aborted || this.#res.headersSent) return;
    const flat = flatHeaders(headers);
    flat.push('content-length', String(Buffer.byteLength(body)));
    this.#res.writeHead(status, flat).end(body);
  }

  startStream(status: number, headers: readonly (readonly [string, string])[]): void {
    if (this.aborted || this.#res.headersSent) return;
    this.#res.writeHead(status, flatHeaders(headers)).flushHeaders();
  }

  write(chunk: string): boolean {
    if (this.aborted || this.#res.destroyed) return false;
    this.#res.write(chunk);
    return true;
  }

  end(): void {
    if (!this.aborted) this.#res.end();
  }

  /** The response's own buffer plus the socket's (node:http counts both in writableLength). */
  get bufferedBytes(): number {
    return this.aborted ? 0 : this.#res.writableLength;
  }

  onDrain(listener: () => void): void {
    // 'drain' fires when a write returned false (past the 16 KiB high-water mark) and all is out.
    if (this.#onDrain === undefined) this.#res.on('drain', () => { if (!this.aborted) this.#onDrain?.(); });
    this.#onDrain = listener;
  }

  destroy(): void {
    if (this.aborted || this.#res.writableFinished) return;
    this.aborted = true;
    this.#res.destroy();
    this.#onAbort?.();
  }
}

/**
 * Headers as one flat [name, value, …] list: writeHead takes it as is (nothing was set with
 * setHeader), where a setHeader per header would validate and store each in a headers object first.
 */
function flatHeaders(headers: readonly (readonly [string, string])[]): string[] {
  const flat: string[] = [];
  for (const [k, v] of headers) flat.push(k, v);
  return flat;
}
