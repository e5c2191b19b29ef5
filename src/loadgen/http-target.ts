/**
 * A load connection over Streamable HTTP, either era. Legacy: initialize + notifications/initialized
 * on open (the session id rides on every request), notifications/cancelled on a side connection,
 * DELETE on close; `--session-per-call` does all of that per iteration. 2026-07-28: every request
 * carries its own headers and _meta, and a cancel closes the request's stream.
 */
import { StringDecoder } from 'node:string_decoder';
import { bearerChallenge, scopeList } from '../client/www-authenticate.js';
import { kLegacyVersions } from '../protocol/wire.js';
import { AnswerTemplate } from './answer-template.js';
import { HttpConn } from './http-conn.js';
import type { Exchange, ResponseHead } from './http-conn.js';
import type { Negotiated } from './options.js';
import { OpenError } from './target.js';
import type { CallDone, Step, Target } from './target.js';
import { SseReader } from '../client/sse-reader.js';
import { answers, classify, kClientInfo, mcpHeaders, notificationBody, parseMessage, requestBody } from './wire.js';
import type { Message, Outcome } from './wire.js';

/** A body larger than this is refused (a hostile server must not grow the generator's memory). */
const kMaxBody = 16 * 1024 * 1024;

export interface HttpTargetOptions {
  url: URL;
  /** Extra headers on every request (names lower-case). */
  headers: Record<string, string>;
  negotiated: Negotiated;
  method: string;
  params: Record<string, unknown>;
  sessionPerCall: boolean;
}

/** The fixed part of every request's head: request line, host, content negotiation, the user's headers. */
function headPrefix(url: URL, headers: Record<string, string>, method = 'POST'): string {
  let head = `${method} ${url.pathname}${url.search} HTTP/1.1\r\nhost: ${url.host}\r\n`;
  if (method === 'POST') head += 'content-type: application/json\r\naccept: application/json, text/event-stream\r\n';
  for (const [name, value] of Object.entries(headers)) head += `${name}: ${value}\r\n`;
  return head;
}

function headerLines(headers: Record<string, string>): string {
  let text = '';
  for (const [name, value] of Object.entries(headers)) text += `${name}: ${value}\r\n`;
  return text;
}

/** Why an HTTP status is not an MCP answer, for people. */
export function statusMessage(head: ResponseHead): string {
  if (head.status === 401 || head.status === 403) {
    const challenge = bearerChallenge(head.wwwAuthenticate === undefined ? [] : [head.wwwAuthenticate]);
    const metadata = challenge?.params.resource_metadata;
    const where = metadata === undefined ? '' : `; resource metadata: ${metadata}`;
    if (head.status === 401) return `the server answered 401 Unauthorized: it wants a bearer token (--bearer TOKEN)${challenge?.params.error === undefined ? '' : `; it refused the one sent (${challenge.params.error})`}${where}`;
    // RFC 6750 §3.1: a token without a scope the resource needs; the challenge names the scope.
    if (challenge?.params.error === 'insufficient_scope') {
      const scope = scopeList(challenge.params.scope);
      return `the server answered 403 Forbidden: the bearer token lacks a scope it needs (insufficient_scope${scope === undefined || scope.length === 0 ? '' : `; it asks for scope ${scope.join(' ')}`})${where}`;
    }
    return `the server answered 403 Forbidden${challenge?.params.error === undefined ? '' : ` (${challenge.params.error})`}${where}`;
  }
  return `the server answered HTTP ${head.status}${head.contentType === '' ? '' : ` (${head.contentType.split(';')[0]})`}`;
}

/** The response to one request: the answer to `id` (JSON or SSE), progress notifications counted. */
class Answer implements Exchange {
  id: number | string = 0;
  head_: ResponseHead | undefined;
  #chunks: Buffer[] = [];
  #size = 0;
  #sse: SseReader | undefined;
  #decoder: StringDecoder | undefined;
  message: Message | undefined;
  answeredAt = 0;
  progress = 0;
  failure: Outcome | undefined;
  /** What the answer amounts to, once classified (by parsing it, or by the template). */
  #classified: Outcome | undefined;
  /** The load answers' template (setup answers have none). */
  template: AnswerTemplate | undefined;
  onEnd: () => void = () => {};

  reset(id: number | string, onEnd: () => void): this {
    this.id = id;
    this.head_ = undefined;
    if (this.#chunks.length > 0) this.#chunks = [];
    this.#size = 0;
    this.#classified = undefined;
    this.#sse = undefined;
    this.#decoder = undefined;
    this.message = undefined;
    this.answeredAt = 0;
    this.progress = 0;
    this.failure = undefined;
    this.onEnd = onEnd;
    return this;
  }

  head(head: ResponseHead): void {
    this.head_ = head;
    if (head.status >= 200 && head.status < 300 && head.contentType.startsWith('text/event-stream')) {
      this.#sse = new SseReader();
      this.#decoder = new StringDecoder('utf8'); // a character may be split between two reads
    }
  }

  data(buf: Buffer, start: number, end: number): string | undefined {
    if (this.#sse !== undefined) {
      for (const data of this.#sse.push(this.#decoder!.write(buf.subarray(start, end)))) this.#event(data);
      // An event that never ends grew without bound while the stream stayed open: it ends the response.
      return this.#sse.pending > kMaxBody ? 'an SSE event over 16 MiB' : undefined;
    }
    if (this.#size === 0 && this.template !== undefined && typeof this.id === 'number') {
      // The learnt bytes with this id: classified already, nothing kept (unless more of the body follows).
      this.#classified = this.template.match(buf, start, end, this.id);
      if (this.#classified !== undefined) {
        this.#size = end - start;
        return undefined;
      }
    } else if (this.#classified !== undefined) {
      // The body went on past the bytes that matched: it is read (and parsed) as any other.
      this.#classified = undefined;
      this.#chunks.push(this.template!.bytes(this.id as number));
    }
    this.#size += end - start;
    if (this.#size <= kMaxBody) this.#chunks.push(Buffer.from(buf.subarray(start, end))); // a copy: the connection reuses its read buffer
    return undefined;
  }

  #event(data: string): void {
    const message = parseMessage(data);
    if (message === undefined) {
      this.failure ??= { kind: 'invalid', detail: 'an SSE event that is not a JSON-RPC message' };
      return;
    }
    if (message.method === 'notifications/progress') this.progress++;
    if (this.message === undefined && answers(message, this.id)) {
      this.message = message;
      this.answeredAt = performance.now();
    }
  }

  end(): void {
    if (this.#sse === undefined && this.head_ !== undefined) {
      this.answeredAt = performance.now();
      if (this.#size > kMaxBody) this.failure = { kind: 'invalid', detail: 'a body over 16 MiB' };
      else if (this.#size > 0 && this.#classified === undefined) {
        const text = this.#chunks.length === 1 ? this.#chunks[0]!.toString('utf8') : Buffer.concat(this.#chunks).toString('utf8');
        const message = parseMessage(text);
        if (message !== undefined && answers(message, this.id)) {
          this.message = message;
          this.#classified = classify(message);
          if (this.template !== undefined && typeof this.id === 'number') this.template.learn(text, this.id, this.#classified);
        } else if (this.head_.status >= 200 && this.head_.status < 300) this.failure = { kind: 'invalid', detail: `HTTP ${this.head_.status} with a body that is not the answer (${JSON.stringify(text.slice(0, 60))})` };
      }
    }
    this.onEnd();
  }

  fail(kind: 'reset' | 'invalid', message: string): void {
    this.answeredAt = performance.now();
    this.failure = { kind, detail: message };
    this.onEnd();
  }

  /** What the exchange amounts to. */
  outcome(): Outcome {
    if (this.failure !== undefined) return this.failure;
    const head = this.head_!;
    // A JSON-RPC error carried by a 4xx (e.g. 400 with -32602) counts by its code, as a client reads it.
    if (this.#classified !== undefined) return this.#classified;
    if (this.message !== undefined) return classify(this.message);
    if (head.status < 200 || head.status >= 300) return { kind: 'http', code: head.status, detail: statusMessage(head) };
    return { kind: 'no-answer', detail: `HTTP ${head.status} without the answer${this.#sse === undefined ? '' : ' (the stream ended first)'}` };
  }
}

export class HttpTarget implements Target {
  readonly #options: HttpTargetOptions;
  readonly #conn: HttpConn;
  /** Notifications and cancels go here, so they never wait behind the call they cancel. */
  #side: HttpConn | undefined;
  #sideQueue: Promise<void> = Promise.resolve();
  #session: string | undefined;
  #version: string;
  #callHead = '';
  #bodyPrefix = '';
  #bodySuffix = '';
  #bodyBytes = 0;
  /** The load request's bytes, reused: only the id's digits change (rebuilt when their count does). */
  #request: Buffer | undefined;
  #idAt = 0;
  #idDigits = 0;
  readonly #answer = new Answer();
  #done: CallDone | undefined;
  onStep?: (step: Step, ms: number) => void;

  constructor(options: HttpTargetOptions) {
    this.#options = options;
    this.#conn = new HttpConn(options.url);
    this.#version = options.negotiated.version;
    // The body is built once around its id: every request differs by the id alone.
    const body = requestBody(0, options.method, options.params, options.negotiated.era);
    const at = body.indexOf('"id":0') + 5;
    this.#bodyPrefix = body.slice(0, at);
    this.#bodySuffix = body.slice(at + 1);
    this.#bodyBytes = Buffer.byteLength(this.#bodyPrefix) + Buffer.byteLength(this.#bodySuffix);
    this.#answer.template = new AnswerTemplate();
  }

  get bytesIn(): number { return this.#conn.bytesIn + (this.#side?.bytesIn ?? 0); }
  get bytesOut(): number { return this.#conn.bytesOut + (this.#side?.bytesOut ?? 0); }

  async open(): Promise<void> {
    if (!this.#options.sessionPerCall) await this.#start(this.#conn);
    this.#prepare();
  }

  /** The head of the load requests, once the session (if any) is known. */
  #prepare(): void {
    const o = this.#options;
    const headers = mcpHeaders(o.method, o.params, { era: o.negotiated.era, version: this.#version, paramHeaders: o.negotiated.paramHeaders });
    if (this.#session !== undefined) headers['mcp-session-id'] = this.#session;
    this.#callHead = headPrefix(o.url, o.headers) + headerLines(headers);
    this.#request = undefined;
  }

  /** Legacy: initialize and notifications/initialized on `conn`; the session id is kept. */
  async #start(conn: HttpConn): Promise<void> {
    if (this.#options.negotiated.era !== 'legacy') return;
    this.#session = undefined;
    const params = { protocolVersion: kLegacyVersions[0], capabilities: {}, clientInfo: kClientInfo };
    const t0 = performance.now();
    const init = await this.#exchange(conn, 'initialize', requestBody('init', 'initialize', params, 'legacy'), { 'mcp-protocol-version': kLegacyVersions[0] }, 'init');
    const outcome = init.outcome();
    if (outcome.kind !== 'ok') throw new OpenError(`initialize failed: ${outcome.detail ?? outcome.kind}`);
    const version = (outcome.result as { protocolVersion?: unknown }).protocolVersion;
    if (typeof version === 'string') this.#version = version;
    this.#session = init.head_?.sessionId;
    this.onStep?.('initialize', performance.now() - t0);
    const t1 = performance.now();
    const note = await this.#exchange(conn, 'notifications/initialized', notificationBody('notifications/initialized'), this.#sessionHeaders(), undefined);
    if (note.failure !== undefined || (note.head_ !== undefined && note.head_.status >= 300)) {
      throw new OpenError(`notifications/initialized failed: ${note.failure?.detail ?? statusMessage(note.head_!)}`);
    }
    this.onStep?.('initialized', performance.now() - t1);
  }

  #sessionHeaders(): Record<string, string> {
    const headers: Record<string, string> = { 'mcp-protocol-version': this.#version };
    if (this.#session !== undefined) headers['mcp-session-id'] = this.#session;
    return headers;
  }

  /** One setup request on `conn`, as a promise (not on the per-request path). */
  #exchange(conn: HttpConn, method: string, body: string, headers: Record<string, string>, id: string | undefined, verb = 'POST'): Promise<Answer> {
    const o = this.#options;
    const all = { ...(verb === 'POST' ? mcpHeaders(method, {}, method === 'initialize' ? undefined : { era: o.negotiated.era, version: this.#version }) : {}), ...headers };
    const text = `${headPrefix(o.url, o.headers, verb)}${headerLines(all)}content-length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
    return new Promise((resolve) => {
      const answer = new Answer();
      answer.reset(id ?? '', () => resolve(answer));
      conn.send(text, answer);
    });
  }

  call(id: number, done: CallDone): void {
    if (this.#options.sessionPerCall) {
      void this.#callInSession(id, done);
      return;
    }
    this.#done = done;
    this.#send(id);
  }

  #send(id: number): void {
    let digits = 1;
    for (let v = id; v >= 10; v = Math.floor(v / 10)) digits++;
    let request = this.#request;
    if (request === undefined || digits !== this.#idDigits) {
      const head = `${this.#callHead}content-length: ${this.#bodyBytes + digits}\r\n\r\n${this.#bodyPrefix}`;
      this.#idAt = Buffer.byteLength(head);
      this.#idDigits = digits;
      request = this.#request = Buffer.from(`${head}${'0'.repeat(digits)}${this.#bodySuffix}`, 'utf8');
    } else if (this.#conn.writePending) {
      request = this.#request = Buffer.from(request); // the last request's bytes are still queued: they are not overwritten
    }
    for (let i = this.#idAt + digits - 1, v = id; i >= this.#idAt; i--, v = Math.floor(v / 10)) request[i] = 48 + (v % 10);
    this.#conn.send(request, this.#answer.reset(id, this.#ended), false, request.length);
  }

  readonly #ended = (): void => {
    const done = this.#done;
    this.#done = undefined;
    done?.(this.#answer.outcome(), this.#answer.answeredAt, this.#answer.progress);
  };

  /** --session-per-call: a new session, the call, the DELETE, each step timed. */
  async #callInSession(id: number, done: CallDone): Promise<void> {
    this.#done = done;
    try {
      await this.#start(this.#conn);
    } catch (error) {
      this.#finishWith({ kind: 'invalid', detail: (error as Error).message });
      return;
    }
    if (this.#done !== done) return; // aborted meanwhile
    this.#prepare();
    const t0 = performance.now();
    const callDone = await new Promise<[Outcome, number, number]>((resolve) => {
      this.#done = (outcome, at, progress) => resolve([outcome, at, progress]);
      this.#send(id);
    });
    this.onStep?.('call', performance.now() - t0);
    if (this.#session !== undefined) {
      const t1 = performance.now();
      await this.#exchange(this.#conn, '', '', this.#sessionHeaders(), undefined, 'DELETE');
      this.onStep?.('delete', performance.now() - t1);
    }
    done(callDone[0], performance.now(), callDone[2]);
  }

  #finishWith(outcome: Outcome): void {
    const done = this.#done;
    this.#done = undefined;
    done?.(outcome, performance.now(), 0);
  }

  cancel(id: number): void {
    if (this.#options.negotiated.era === 'modern') {
      // Closing the request's stream is the 2026-07-28 cancel: the answer stops now.
      this.#conn.abort();
      this.#finishWith({ kind: 'no-answer', detail: 'cancelled' });
      return;
    }
    const side = this.#side ??= new HttpConn(this.#options.url);
    const body = notificationBody('notifications/cancelled', { requestId: id, reason: 'sluice bench --cancel-after' });
    this.#sideQueue = this.#sideQueue.then(() => this.#exchange(side, 'notifications/cancelled', body, this.#sessionHeaders(), undefined).then(() => {}));
  }

  abort(kind: 'timeout' | 'no-answer', detail: string): void {
    this.#conn.abort();
    this.#finishWith({ kind, detail });
  }

  async close(): Promise<void> {
    const session = this.#session;
    this.#conn.close();
    if (session !== undefined && !this.#options.sessionPerCall) {
      const conn = this.#side ??= new HttpConn(this.#options.url);
      await Promise.race([
        this.#sideQueue.then(() => this.#exchange(conn, '', '', this.#sessionHeaders(), undefined, 'DELETE')),
        new Promise((resolve) => setTimeout(resolve, 1000).unref()),
      ]);
    }
    this.#side?.close();
  }
}
