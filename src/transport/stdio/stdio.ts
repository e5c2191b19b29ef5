import type { Readable, Writable } from 'node:stream';
import type { Engine, Reply } from '../../protocol/engine.js';
import { requestInfo } from '../../protocol/eras/request-info.js';
import type { EdgeFacts, LegacySession } from '../../protocol/eras/request-info.js';
import type { Classified } from '../../protocol/message.js';
import { kBusy, kLineTooLong, readMessage, refusalBody } from '../../protocol/refusals.js';
import { ProtocolError } from '../../protocol/wire.js';
import type { JsonRpcId } from '../../protocol/wire.js';

export interface StdioOptions {
  readonly input: Readable;
  readonly output: Writable;
  /** Longest line accepted; a longer one is discarded and answered with a parse error. */
  readonly maxLineBytes: number;
}

/**
 * Answers written and not yet read by the client, past which its requests are not read until they
 * have been: bounded memory, with room for a client that writes a batch of requests before it reads.
 */
const kUnreadOutputBytes = 1 << 20;

/** The whole stdio connection is one client: one scope. */
const kScope = 'session:stdio';

/**
 * The edge facts of a stdio connection: no headers, one client, and one session for the whole
 * connection (what initialize declared, what logging/setLevel set). One object per connection.
 */
class StdioEdge implements EdgeFacts, LegacySession {
  readonly hasHeaders = false;
  readonly headerVersion = undefined;
  /** notifications/cancelled is the cancel in both eras here: modern requests share the scope. */
  readonly isolateModern = false;
  readonly sessionScope = kScope;
  logLevel = 0; // the whole connection is one session: logging/setLevel applies to it
  clientCapabilities: Record<string, unknown> | undefined;
  get levelStore(): this {
    return this;
  }

  setLogLevel(level: number): void {
    this.logLevel = level;
  }

  clientScope(): string {
    return kScope;
  }

  legacySession(message: Classified): LegacySession {
    if (message.kind === 'request' && message.method === 'initialize') {
      const caps = message.params?.capabilities;
      this.clientCapabilities = caps !== null && typeof caps === 'object' && !Array.isArray(caps) ? (caps as Record<string, unknown>) : {};
    }
    return this;
  }
}

/**
 * Newline-delimited JSON-RPC over a pair of streams. `notifications/cancelled` is the cancel in
 * both eras. Resolves when the input ends and every request has finished.
 */
export function serveStdio(engine: Engine, options: StdioOptions): Promise<void> {
  const { input, output, maxLineBytes } = options;
  return new Promise<void>((resolve) => {
    let outputOpen = true;
    let draining = false;
    const resume = () => {
      draining = false;
      if (outputOpen) input.resume();
    };
    const write = (line: string) => {
      if (!outputOpen || output.write(`${line}\n`) || draining || output.writableLength < kUnreadOutputBytes) return;
      // A client that reads slower than it asks: its requests are not read until what was written
      // has gone, so answers never pile up in memory (HTTP bounds a slow reader the same way).
      draining = true;
      input.pause();
      output.once('drain', resume);
    };
    const connection = new StdioConnection(engine, write, resolve);
    const lines = new LineSplitter(maxLineBytes, (line) => connection.line(line), () => connection.refuse(null, kLineTooLong));
    const onData = (chunk: Buffer) => lines.push(chunk);
    input.on('data', onData);
    // A client that closed its end of our output (EPIPE) can be told nothing more: what it asked
    // for is cancelled and nothing more is read, never an unhandled 'error' that kills the process.
    output.on('error', (error: NodeJS.ErrnoException) => {
      if (!outputOpen) return;
      outputOpen = false;
      input.off('data', onData);
      input.pause();
      connection.outputFailed(error.code ?? error.message);
    });
    // The input's end is the client's end: open listen streams finish, then the server does.
    const inputEnded = () => connection.inputEnded();
    // At a clean end, a last line without its newline (`printf '{…}' | sluice serve --stdio`) is
    // served, not dropped; a stream torn down mid-line ('close' alone) leaves it unread.
    input.once('end', () => {
      lines.end();
      inputEnded();
    });
    input.once('close', inputEnded);
  });
}

/** Whether a line holds only JSON whitespace (a blank line is no message: skipped). */
function blank(bytes: Buffer): boolean {
  for (let i = 0; i < bytes.length; i++) {
    const b = bytes[i];
    if (b !== 0x20 && b !== 0x09 && b !== 0x0d) return false;
  }
  return true;
}

/**
 * One stdio connection: each line is read as the protocol reads any framed message (`readMessage`:
 * the same refusals as HTTP bodies), then `requestInfo`, then the engine. A notification is never
 * answered here, not even with an error: a refused one is logged instead.
 */
class StdioConnection {
  readonly #engine: Engine;
  readonly #write: (line: string) => void;
  readonly #finished: () => void;
  readonly #edge = new StdioEdge();
  readonly #done = (): void => {
    this.#active--;
    this.#settle();
  };
  #active = 0;
  #ended = false;

  constructor(engine: Engine, write: (line: string) => void, finished: () => void) {
    this.#engine = engine;
    this.#write = write;
    this.#finished = finished;
  }

  refuse(id: JsonRpcId | null, error: ProtocolError): void {
    this.#write(refusalBody(id, error));
  }

  line(bytes: Buffer): void {
    if (blank(bytes)) return;
    const message = readMessage(bytes);
    if (message.kind === 'refused') return this.refuse(message.id, message.error);
    const engine = this.#engine;
    const info = requestInfo(message, this.#edge);
    if (info instanceof ProtocolError) {
      if (message.kind === 'request') this.refuse(message.id, info);
      else engine.config.log('warn', `sluice: ${message.kind === 'response' ? 'a response' : message.method} refused: ${info.message}`);
      return;
    }
    if (message.kind === 'response') return engine.handleResponse(message, info.scope);
    if (message.kind === 'notification') {
      const refused = engine.handleNotification(message.method, message.params, info);
      if (refused !== undefined) engine.config.log('warn', `sluice: ${message.method} refused: ${refusalBody(null, refused)}`);
      return;
    }
    this.#active++;
    const reply = new StdioReply(this.#write, this.#done);
    const running = engine.handleRequest(message.id, message.method, message.params, info, reply);
    if (running === undefined) reply.finish();
  }

  /** The client stopped reading: its running requests are cancelled and the connection ends when they have. */
  outputFailed(why: string): void {
    const cancelled = this.#engine.cancelAll('the client stopped reading the server\'s output');
    this.#engine.config.log('warn', `sluice: the client stopped reading stdout (${why}): ${cancelled} running request${cancelled === 1 ? '' : 's'} cancelled; no more input is read`);
    this.inputEnded();
  }

  inputEnded(): void {
    if (this.#ended) return;
    this.#ended = true;
    this.#engine.closeListeners();
    // Nothing the client could answer can arrive now.
    this.#engine.cancelAwaitingClient('the client closed its input');
    this.#settle();
  }

  #settle(): void {
    if (this.#ended && this.#active === 0) this.#finished();
  }
}

/**
 * Splits a byte stream into lines of at most `maxLineBytes`. A longer line is refused once
 * (`tooLong`) and the rest of it dropped unread, then the next line is read as usual. `end` hands
 * over a last line that had no newline.
 */
class LineSplitter {
  readonly #max: number;
  readonly #line: (bytes: Buffer) => void;
  readonly #tooLong: () => void;
  #pending: Buffer[] = [];
  #pendingSize = 0;
  /** Dropping the rest of an over-long line, up to its newline. */
  #discarding = false;

  constructor(maxLineBytes: number, line: (bytes: Buffer) => void, tooLong: () => void) {
    this.#max = maxLineBytes;
    this.#line = line;
    this.#tooLong = tooLong;
  }

  push(chunk: Buffer): void {
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, i);
      start = i + 1;
      if (this.#discarding) {
        this.#discarding = false;
        this.#clear();
        continue;
      }
      if (this.#pendingSize + piece.length > this.#max) {
        this.#clear();
        this.#tooLong();
        continue;
      }
      const line = this.#pendingSize === 0 ? piece : Buffer.concat([...this.#pending, piece]);
      this.#clear();
      this.#line(line);
    }
    if (start < chunk.length && !this.#discarding) {
      const rest = chunk.subarray(start);
      this.#pendingSize += rest.length;
      if (this.#pendingSize > this.#max) {
        this.#discarding = true; // drop the rest of this line, then carry on with the next
        this.#clear();
        this.#tooLong();
      } else {
        this.#pending.push(Buffer.from(rest));
      }
    }
  }

  /** The input ended: what is pending is its last line, newline or not. */
  end(): void {
    if (this.#pendingSize === 0 || this.#discarding) return;
    const line = Buffer.concat(this.#pending);
    this.#clear();
    this.#line(line);
  }

  #clear(): void {
    // Most lines arrive whole, with nothing pending: no new array per line then.
    if (this.#pendingSize === 0) return;
    this.#pending = [];
    this.#pendingSize = 0;
  }
}

class StdioReply implements Reply {
  readonly canStream = true;
  readonly #write: (line: string) => void;
  readonly #onDone: () => void;
  #done = false;

  constructor(write: (line: string) => void, onDone: () => void) {
    this.#write = write;
    this.#onDone = onDone;
  }

  notify(json: string): void {
    if (!this.#done) this.#write(json);
  }

  respond(json: string): void {
    if (this.#done) return;
    this.#write(json);
    this.finish();
  }

  cancelled(): void {
    this.finish();
  }

  busy(id: JsonRpcId): void {
    if (this.#done) return;
    this.#write(refusalBody(id, kBusy));
    this.finish();
  }

  finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#onDone();
  }
}
