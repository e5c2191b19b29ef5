import type { Readable, Writable } from 'node:stream';
import { Engine } from '../../protocol/engine.js';
import type { Era, Reply, RequestInfo } from '../../protocol/engine.js';
import { classify } from '../../protocol/message.js';
import { ErrorCode, errorBody, kDefaultLegacyVersion, kMetaLogLevel, kMetaProtocolVersion, kModernVersion } from '../../protocol/wire.js';
import { kLogLevels } from '../../tools/context.js';
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
  let sessionLogLevel = 0; // the whole connection is one session: logging/setLevel applies to it
  let clientCapabilities: Record<string, unknown> | undefined;
  const setLogLevel = (level: number) => { sessionLogLevel = level; };
  let finish: () => void = () => {};
  const done = new Promise<void>((resolve) => { finish = resolve; });
  const write = (line: string) => { output.write(`${line}\n`); };
  const settle = () => { if (ended && active === 0) finish(); };

  const handleLine = (line: string) => {
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
    if (message.kind === 'response') {
      engine.handleResponse(message, kScope);
      return;
    }
    if (message.kind === 'request' && message.method === 'initialize') {
      const caps = message.params?.capabilities;
      clientCapabilities = caps !== null && typeof caps === 'object' && !Array.isArray(caps) ? (caps as Record<string, unknown>) : {};
    }
    const params = message.params as Record<string, unknown> | undefined;
    const meta = params !== null && typeof params === 'object' ? (params._meta as Record<string, unknown> | undefined) : undefined;
    const modern = meta !== null && typeof meta === 'object' && meta[kMetaProtocolVersion] !== undefined && message.method !== 'initialize';
    const era: Era = modern ? 'modern' : 'legacy';
    const requested = modern ? kLogLevels.indexOf(meta![kMetaLogLevel] as (typeof kLogLevels)[number]) : sessionLogLevel;
    const info: RequestInfo = {
      era, version: modern ? kModernVersion : kDefaultLegacyVersion, scope: kScope,
      logLevel: requested < 0 ? undefined : requested, setLogLevel, clientCapabilities,
    };
    if (message.kind === 'notification') {
      const outcome = engine.handleNotification(message.method, message.params, info);
      // A notification is never answered on stdio, not even with an error: it is logged instead.
      if (!outcome.ok) engine.config.log('warn', `sluice: ${message.method} refused: ${outcome.body}`);
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
      const line = pendingSize === 0 ? piece.toString('utf8') : Buffer.concat([...pending, piece]).toString('utf8');
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
