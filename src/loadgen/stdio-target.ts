/**
 * A load connection to a stdio MCP server: one spawned process, newline-delimited JSON-RPC.
 * Legacy: initialize + notifications/initialized first; 2026-07-28: _meta on every request. A
 * cancel is a notifications/cancelled line in both eras (a pipe has no per-request stream to close).
 */
import { spawn } from 'node:child_process';
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { serverEnding } from '../client/stdio.js';
import { kLegacyVersions } from '../protocol/wire.js';
import type { Negotiated } from './options.js';
import { OpenError } from './target.js';
import type { CallDone, Step, Target } from './target.js';
import { answers, classify, kClientInfo, notificationBody, parseMessage, requestBody } from './wire.js';
import type { Message, Outcome } from './wire.js';

/** A line longer than this is refused (the process is replaced). */
const kMaxLine = 16 * 1024 * 1024;

/** The server's last stderr line worth quoting (an error, not Node's version banner). */
function lastWords(stderr: string): string {
  const lines = stderr.split('\n').map((l) => l.trim()).filter((l) => l !== '' && !/^Node\.js v/.test(l));
  const line = lines.find((l) => /error/i.test(l)) ?? lines[lines.length - 1];
  return line === undefined ? '' : `: ${line.slice(0, 300)}`;
}

export interface StdioTargetOptions {
  command: string;
  args: string[];
  negotiated: Negotiated;
  method: string;
  params: Record<string, unknown>;
}

export class StdioTarget implements Target {
  readonly #options: StdioTargetOptions;
  #child: ChildProcessWithoutNullStreams | undefined;
  #buffer = '';
  #waiting = new Map<number | string, (message: Message) => void>();
  #done: CallDone | undefined;
  #id: number | string = -1;
  #progress = 0;
  #bodyPrefix: string;
  #bodySuffix: string;
  #exited: Promise<void> = Promise.resolve();
  #stderr = '';
  bytesIn = 0;
  bytesOut = 0;
  onStep?: (step: Step, ms: number) => void;

  constructor(options: StdioTargetOptions) {
    this.#options = options;
    const body = requestBody(0, options.method, options.params, options.negotiated.era);
    const at = body.indexOf('"id":0') + 5;
    this.#bodyPrefix = body.slice(0, at);
    this.#bodySuffix = `${body.slice(at + 1)}\n`;
  }

  async open(): Promise<void> {
    this.#spawn();
    if (this.#options.negotiated.era !== 'legacy') {
      // No handshake in 2026-07-28, but the process must be up before the clock starts: one server/discover.
      const answer = await this.#request('ready', requestBody('ready', 'server/discover', {}, 'modern'));
      if (answer.error !== undefined) throw new OpenError(`server/discover failed: ${(answer.error as { message?: string }).message ?? 'an error'}`);
      return;
    }
    const params = { protocolVersion: kLegacyVersions[0], capabilities: {}, clientInfo: kClientInfo };
    const answer = await this.#request('init', requestBody('init', 'initialize', params, 'legacy'));
    const outcome = classify(answer);
    if (outcome.kind !== 'ok') throw new OpenError(`initialize failed: ${outcome.detail ?? outcome.kind}`);
    this.#write(`${notificationBody('notifications/initialized')}\n`);
  }

  #spawn(): void {
    const child = spawn(this.#options.command, this.#options.args, { stdio: ['pipe', 'pipe', 'pipe'] });
    this.#child = child;
    this.#buffer = '';
    this.#exited = new Promise((resolve) => child.once('close', () => resolve()));
    child.stdin.on('error', () => {});
    child.stderr.on('data', (c: Buffer) => { if (this.#stderr.length < 4096) this.#stderr += c.toString(); });
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      if (this.#child !== child) return;
      this.bytesIn += Buffer.byteLength(chunk);
      this.#read(chunk);
    });
    // A last line without its newline is still the server's last message.
    child.stdout.once('end', () => { if (this.#child === child && this.#buffer !== '') this.#read('\n'); });
    let unstarted: Error | undefined;
    child.on('error', (error) => { if (child.pid === undefined) unstarted = error; }); // after a start: a failed kill, nothing to do
    // 'close', not 'exit': it comes once the process has exited and its output is all read, so an
    // answer written just before the exit counts (a call still waiting after it is a reset; one
    // whose pipe a child process holds open ends at the call's own timeout).
    child.once('close', (code, signal) => {
      if (this.#child !== child) return;
      this.#child = undefined;
      const ended = serverEnding(unstarted ?? { code, signal });
      for (const [, resolve] of this.#waiting) resolve({ error: { code: undefined, message: `${ended}${lastWords(this.#stderr)}` } });
      this.#waiting.clear();
      this.#finish({ kind: 'reset', detail: ended });
    });
  }

  #write(text: string): void {
    this.bytesOut += Buffer.byteLength(text);
    this.#child?.stdin.write(text);
  }

  #request(id: string, body: string): Promise<Message> {
    return new Promise((resolve) => {
      if (this.#child === undefined) {
        resolve({ error: { message: 'the server process is not running' } });
        return;
      }
      this.#waiting.set(id, resolve);
      this.#write(`${body}\n`);
    });
  }

  #read(chunk: string): void {
    this.#buffer += chunk;
    let end;
    while ((end = this.#buffer.indexOf('\n')) !== -1) {
      const line = this.#buffer.slice(0, end);
      this.#buffer = this.#buffer.slice(end + 1);
      if (line.trim() === '') continue;
      const message = parseMessage(line);
      if (message === undefined) {
        this.#finish({ kind: 'invalid', detail: `a line that is not a JSON-RPC message (${JSON.stringify(line.slice(0, 60))})` });
        continue;
      }
      if (message.method === 'notifications/progress') { this.#progress++; continue; }
      if (message.id !== undefined && this.#waiting.has(message.id as string)) {
        const resolve = this.#waiting.get(message.id as string)!;
        this.#waiting.delete(message.id as string);
        resolve(message);
        continue;
      }
      if (this.#done !== undefined && answers(message, this.#id)) this.#finish(classify(message));
      else if (message.method !== undefined && message.id !== undefined) {
        // A server request (sampling, elicitation, roots): declined, so the call can go on.
        this.#write(`${JSON.stringify({ jsonrpc: '2.0', id: message.id, error: { code: -32601, message: 'sluice bench answers no server requests' } })}\n`);
      }
    }
    if (this.#buffer.length > kMaxLine) {
      this.#buffer = '';
      this.#finish({ kind: 'invalid', detail: 'a line over 16 MiB' });
      this.#restart();
    }
  }

  #finish(outcome: Outcome): void {
    const done = this.#done;
    if (done === undefined) return;
    this.#done = undefined;
    done(outcome, performance.now(), this.#progress);
  }

  call(id: number, done: CallDone): void {
    this.#done = done;
    this.#id = id;
    this.#progress = 0;
    if (this.#child === undefined) {
      this.#finish({ kind: 'reset', detail: 'the server process exited' });
      return;
    }
    this.#write(this.#bodyPrefix + id + this.#bodySuffix);
  }

  cancel(id: number): void {
    this.#write(`${notificationBody('notifications/cancelled', { requestId: id, reason: 'sluice bench --cancel-after' })}\n`);
  }

  abort(kind: 'timeout' | 'no-answer', detail: string): void {
    // A call the server never answers holds the pipe's turn: the answer, if it comes, is dropped by id.
    this.#finish({ kind, detail });
  }

  /** A process that sent a line too long to read is replaced (with a new session). */
  #restart(): void {
    this.#child?.kill('SIGKILL');
    this.#child = undefined;
    void this.open().catch(() => {});
  }

  async close(): Promise<void> {
    const child = this.#child;
    if (child === undefined) return;
    this.#child = undefined;
    child.stdin.end();
    const timer = setTimeout(() => child.kill('SIGKILL'), 1000);
    timer.unref();
    child.kill('SIGTERM');
    await this.#exited;
    clearTimeout(timer);
  }
}
