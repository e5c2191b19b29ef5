import { isUtf8 } from 'node:buffer';
import type { Readable, Writable } from 'node:stream';
import type { Engine, Reply } from '../../protocol/engine.js';
import { requestInfo } from '../../protocol/eras/request-info.js';
import type { Classified, EdgeFacts, LegacySession } from '../../protocol/eras/request-info.js';
import { classify } from '../../protocol/message.js';
import { ErrorCode, ProtocolError, errorBody } from '../../protocol/wire.js';
import type { JsonRpcId } from '../../protocol/wire.js';

export interface StdioOptions {
  readonly input: Readable;
  readonly output: Writable;
  /** Longest line accepted; a longer one is discarded and answered with a parse error. */
  readonly maxLineBytes: number;
}

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
  let pending: Buffer[] = [];
  let pendingSize = 0;
  let discarding = false;
  let active = 0;
  let ended = false;
  const edge = new StdioEdge();
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => { finish = resolve; });
  const write = (line: string) => { output.write(`${line}\n`); };
  const settle = () => { if (ended && active === 0) finish(); };

  const handleLine = (bytes: Buffer) => {
    // Broken UTF-8 is refused as HTTP refuses it, not decoded lossily into U+FFFD.
    if (!isUtf8(bytes)) {
      write(errorBody(null, ErrorCode.ParseError, 'Parse error: the line is not valid UTF-8'));
      return;
    }
    const line = bytes.toString('utf8');
    if (line.trim() === '') return;
    let value: unknown;
    try {
      value = JSON.parse(line);
    } catch {
      write(errorBody(null, ErrorCode.ParseError, 'Parse error'));
      return;
    }
    if (Array.isArray(value)) {
      write(errorBody(null, ErrorCode.InvalidRequest, 'Batches are not supported: one message per line'));
      return;
    }
    const message = classify(value);
    if (message.kind === 'invalid') {
      write(errorBody(message.id, message.code, message.message));
      return;
    }
    const info = requestInfo(message, edge);
    if (info instanceof ProtocolError) {
      // A notification is never answered on stdio, not even with an error: it is logged instead.
      if (message.kind === 'request') write(errorBody(message.id, info.rpcCode, info.message, info.data));
      else engine.config.log('warn', `sluice: ${message.kind === 'response' ? 'a response' : message.method} refused: ${info.message}`);
      return;
    }
    if (message.kind === 'response') {
      engine.handleResponse(message, info.scope);
      return;
    }
    if (message.kind === 'notification') {
      const refused = engine.handleNotification(message.method, message.params, info);
      // A notification is never answered on stdio, not even with an error: it is logged instead.
      if (refused !== undefined) engine.config.log('warn', `sluice: ${message.method} refused: ${errorBody(null, refused.rpcCode, refused.message, refused.data)}`);
      return;
    }
    active++;
    const reply = new StdioReply(write, () => { active--; settle(); });
    const running = engine.handleRequest(message.id, message.method, message.params, info, reply);
    if (running === undefined) reply.finish();
  };

  input.on('data', (chunk: Buffer) => {
    let start = 0;
    for (let i = chunk.indexOf(10); i !== -1; i = chunk.indexOf(10, start)) {
      const piece = chunk.subarray(start, i);
      start = i + 1;
      if (discarding) {
        discarding = false;
        pending = [];
        pendingSize = 0;
        continue;
      }
      if (pendingSize + piece.length > maxLineBytes) {
        pending = [];
        pendingSize = 0;
        write(errorBody(null, ErrorCode.ParseError, 'Line too long'));
        continue;
      }
      const line = pendingSize === 0 ? piece : Buffer.concat([...pending, piece]);
      pending = [];
      pendingSize = 0;
      handleLine(line);
    }
    if (start < chunk.length && !discarding) {
      const rest = chunk.subarray(start);
      pendingSize += rest.length;
      if (pendingSize > maxLineBytes) {
        discarding = true; // drop the rest of this line, then carry on with the next
        pending = [];
        pendingSize = 0;
        write(errorBody(null, ErrorCode.ParseError, 'Line too long'));
      } else {
        pending.push(Buffer.from(rest));
      }
    }
  });
  // The input's end is the client's end: open listen streams finish, then the server does.
  const inputEnded = () => {
    if (ended) return;
    ended = true;
    engine.closeListeners();
    settle();
  };
  input.once('end', inputEnded);
  input.once('close', inputEnded);
  return done;
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
    this.#write(errorBody(id, ErrorCode.InternalError, 'Server busy: too many requests in flight'));
    this.finish();
  }

  finish(): void {
    if (this.#done) return;
    this.#done = true;
    this.#onDone();
  }
}
