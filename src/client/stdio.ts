import { spawn } from 'node:child_process';
import type { ChildProcess } from 'node:child_process';
import { SluiceError } from '../errors.js';
import { answerServerRequest, encodeMessage, parseMessage, responseBound } from './transport.js';
import type { ClientTransport, JsonRpcMessage, SendOptions } from './transport.js';

export interface StdioTransportOptions {
  command: string;
  args?: readonly string[];
  env?: NodeJS.ProcessEnv;
  cwd?: string;
  /** Where the server's stderr goes (default: ignored). */
  stderr?: 'inherit' | 'ignore';
  /**
   * The longest line (characters) the server may write. Past it the line is dropped up to its
   * end, and every call waiting then fails with `invalid_response` (the line was one of their
   * answers, or nothing), so a server that never ends a line cannot exhaust the client's memory.
   * Default 64 MiB.
   */
  maxResponseBytes?: number;
}

interface Waiting {
  resolve(message: JsonRpcMessage): void;
  reject(error: Error): void;
  onMessage(message: JsonRpcMessage): void;
  progressToken: unknown;
  /** A tasks/result request's task, and the handler of the server requests related to it. */
  taskId: unknown;
  onRequest: SendOptions['onRequest'];
}

/**
 * How a stdio server's process ended, in words (the client's server_exited errors and sluice
 * bench's stdio connections say the same): the spawn's error when it never started, else its
 * exit code or signal.
 */
export function serverEnding(ended: { readonly code: number | null; readonly signal: NodeJS.Signals | null } | Error): string {
  if (ended instanceof Error) return `the server process did not start (${ended.message})`;
  return `the server process exited (${ended.signal ?? `code ${ended.code}`})`;
}

/**
 * Spawns an MCP server and speaks newline-delimited JSON-RPC to it. One writer (a request's line is
 * always written before its cancel line) and one reader that routes every response by id, so a
 * cancelled call can never swallow another call's response.
 */
export class StdioClientTransport implements ClientTransport {
  readonly cancelsByAbort = false;
  readonly #child: ChildProcess;
  readonly #waiting = new Map<string, Waiting>();
  #buffer = '';
  /** Past `maxResponseBytes`: the rest of the current line is dropped, up to its newline. */
  #skipping = false;
  readonly #maxLine: number;
  #closed = false;
  /** The server process has exited (or never started): a call made now would wait forever. */
  #gone = false;
  /** How it ended, for the calls that fail because of it. */
  #ending = 'the server process exited';
  #exited: Promise<void>;

  constructor(options: StdioTransportOptions) {
    this.#maxLine = responseBound(options.maxResponseBytes);
    this.#child = spawn(options.command, [...(options.args ?? [])], {
      env: options.env ?? process.env,
      cwd: options.cwd,
      stdio: ['pipe', 'pipe', options.stderr ?? 'ignore'],
    });
    let ended!: () => void;
    this.#exited = new Promise((resolve) => { ended = resolve; });
    this.#child.once('exit', (code, signal) => {
      this.#gone = true;
      this.#ending = serverEnding({ code, signal });
      ended();
      this.#afterOutput(() => this.#failAll(new SluiceError('server_exited', this.#ending)));
    });
    // A command that cannot start (not found, not executable) emits 'error' and never 'exit': without
    // this listener the error event was thrown in the caller's process. (Once started, a child's
    // 'error' is a failed kill or message: nothing to do.)
    this.#child.on('error', (error) => {
      if (this.#child.pid !== undefined || this.#gone) return;
      this.#gone = true;
      this.#ending = serverEnding(error);
      ended();
      this.#failAll(new SluiceError('server_exited', this.#ending, { cause: error }));
    });
    this.#child.stdin?.on('error', () => {});
    const stdout = this.#child.stdout;
    stdout?.setEncoding('utf8');
    stdout?.on('data', (chunk: string) => this.#read(chunk));
    // A last line without its newline is still the server's last message, as the server reads one.
    stdout?.once('end', () => {
      if (!this.#skipping && this.#buffer !== '') this.#read('\n');
    });
  }

  /**
   * Runs `then` once everything the server wrote is read: 'exit' may come before the last of its
   * output does (an answer written just before it exited). A grandchild that holds stdout open
   * gets a second.
   */
  #afterOutput(then: () => void): void {
    const stdout = this.#child.stdout;
    if (stdout === null || stdout.readableEnded || stdout.destroyed) return then();
    let ran = false;
    const done = (): void => {
      if (ran) return;
      ran = true;
      clearTimeout(timer);
      then();
    };
    const timer = setTimeout(done, 1_000);
    timer.unref();
    stdout.once('end', done);
    stdout.once('close', done);
  }

  /** The server process (for its pid, or to watch it). */
  get process(): ChildProcess {
    return this.#child;
  }

  send(message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage> {
    if (this.#closed) return Promise.reject(new SluiceError('transport_closed', 'the transport is closed'));
    if (this.#gone) return Promise.reject(new SluiceError('server_exited', this.#ending));
    let line: string;
    try {
      line = encodeMessage(message); // before anything is registered: a refusal leaves nothing behind
    } catch (error) {
      return Promise.reject(error);
    }
    const key = JSON.stringify(message.id);
    const params = message.params as Record<string, unknown> | undefined;
    const progressToken = (params?._meta as Record<string, unknown> | undefined)?.progressToken;
    return new Promise((resolve, reject) => {
      this.#waiting.set(key, { resolve, reject, onMessage: options.onMessage, progressToken, taskId: params?.taskId, onRequest: options.onRequest });
      // The abort of a stdio request changes nothing on the wire here: the client sends the cancel
      // line; the entry is dropped so a late response is ignored.
      options.signal.addEventListener('abort', () => { this.#waiting.delete(key); }, { once: true });
      this.#write(line, options.onSent);
    });
  }

  async notify(message: JsonRpcMessage): Promise<void> {
    if (this.#closed) return;
    const line = encodeMessage(message); // async: a refusal is the returned promise's rejection
    return new Promise((resolve) => this.#write(line, resolve));
  }

  /** One writer: lines (a message's JSON) go out in the order they were handed over. */
  #write(line: string, done: () => void): void {
    const stdin = this.#child.stdin;
    if (stdin === null || stdin.destroyed) {
      done();
      return;
    }
    stdin.write(`${line}\n`, () => done());
  }

  #read(chunk: string): void {
    if (this.#skipping) {
      const end = chunk.indexOf('\n');
      if (end === -1) return;
      this.#skipping = false;
      chunk = chunk.slice(end + 1);
    }
    this.#buffer += chunk;
    let newline;
    while ((newline = this.#buffer.indexOf('\n')) !== -1) {
      const line = this.#buffer.slice(0, newline).trim();
      this.#buffer = this.#buffer.slice(newline + 1);
      if (line === '') continue;
      const message = parseMessage(line);
      // Not ours to interpret: a server writing garbage on stdout, or a tool's console.log(42).
      if (message !== undefined) this.#route(message);
    }
    if (this.#buffer.length > this.#maxLine) {
      this.#buffer = '';
      this.#skipping = true;
      this.#failAll(new SluiceError('invalid_response', `the server wrote a line of more than ${this.#maxLine} characters (maxResponseBytes)`));
    }
  }

  #route(message: JsonRpcMessage): void {
    if ('id' in message && ('result' in message || 'error' in message)) {
      const key = JSON.stringify(message.id);
      const waiting = this.#waiting.get(key);
      if (waiting === undefined) return; // late (cancelled or timed out): dropped
      this.#waiting.delete(key);
      waiting.resolve(message);
      return;
    }
    if ('method' in message && 'id' in message) {
      // A request from the server: the waiting tasks/result of its related task answers it; else declined.
      const related = (((message.params as Record<string, unknown> | undefined)?._meta as Record<string, unknown> | undefined)?.['io.modelcontextprotocol/related-task'] as Record<string, unknown> | undefined)?.taskId;
      const owner = related === undefined ? undefined : [...this.#waiting.values()].find((w) => w.onRequest !== undefined && w.taskId === related);
      void answerServerRequest(message, owner).then((reply) => this.#write(encodeMessage(reply), () => {}));
      return;
    }
    const token = (message.params as Record<string, unknown> | undefined)?.progressToken;
    for (const waiting of this.#waiting.values()) {
      if (token !== undefined && waiting.progressToken === token) waiting.onMessage(message);
    }
  }

  #failAll(error: Error): void {
    for (const waiting of this.#waiting.values()) waiting.reject(error);
    this.#waiting.clear();
  }

  async close(): Promise<void> {
    if (this.#closed) return this.#exited;
    this.#closed = true;
    this.#failAll(new SluiceError('transport_closed', 'the transport was closed'));
    this.#child.stdin?.end();
    if (this.#child.exitCode === null && this.#child.signalCode === null && this.#child.pid !== undefined) {
      const term = setTimeout(() => this.#child.kill('SIGTERM'), 1000);
      const kill = setTimeout(() => this.#child.kill('SIGKILL'), 3000);
      await this.#exited;
      clearTimeout(term);
      clearTimeout(kill);
    }
    this.#child.stdout?.destroy();
  }
}
