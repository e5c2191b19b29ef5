/**
 * A custom client transport: the client talks to a Sluice server running in this same process,
 * over in-memory streams, with no socket and no child process. It shows the whole contract:
 * `send(message, { onSent, onMessage, signal })` resolves with the response; `onSent` fires once the
 * request is on its way (the client holds any cancel until then); `notify` carries notifications
 * (notifications/cancelled among them); `close` frees everything.
 */
import { PassThrough } from 'node:stream';
import { Client } from '../src/client/index.js';
import type { ClientTransport, JsonRpcMessage, SendOptions } from '../src/client/index.js';
import { defineTool, serveStdioServer } from '../src/index.js';

export class InProcessTransport implements ClientTransport {
  readonly cancelsByAbort = false; // the cancel is a notifications/cancelled message
  readonly #toServer = new PassThrough();
  readonly #fromServer = new PassThrough();
  readonly #waiting = new Map<unknown, { resolve(m: JsonRpcMessage): void; reject(e: Error): void; onMessage(m: JsonRpcMessage): void; token: unknown }>();
  readonly #served: Promise<void>;
  #buffer = '';

  constructor(tools: Parameters<typeof serveStdioServer>[0]['tools']) {
    this.#served = serveStdioServer({ tools, input: this.#toServer, output: this.#fromServer, log: () => {} });
    this.#fromServer.setEncoding('utf8');
    this.#fromServer.on('data', (chunk: string) => {
      this.#buffer += chunk;
      let i;
      while ((i = this.#buffer.indexOf('\n')) !== -1) {
        const message = JSON.parse(this.#buffer.slice(0, i)) as JsonRpcMessage;
        this.#buffer = this.#buffer.slice(i + 1);
        this.#route(message);
      }
    });
  }

  #route(message: JsonRpcMessage): void {
    const waiting = this.#waiting.get(message.id);
    if (waiting !== undefined && ('result' in message || 'error' in message)) {
      this.#waiting.delete(message.id);
      waiting.resolve(message);
      return;
    }
    const token = (message.params as { progressToken?: unknown } | undefined)?.progressToken;
    for (const w of this.#waiting.values()) if (token !== undefined && w.token === token) w.onMessage(message);
  }

  send(message: JsonRpcMessage, options: SendOptions): Promise<JsonRpcMessage> {
    const token = ((message.params as Record<string, unknown> | undefined)?._meta as Record<string, unknown> | undefined)?.progressToken;
    return new Promise((resolve, reject) => {
      this.#waiting.set(message.id, { resolve, reject, onMessage: options.onMessage, token });
      options.signal.addEventListener('abort', () => this.#waiting.delete(message.id), { once: true });
      this.#toServer.write(`${JSON.stringify(message)}\n`, () => options.onSent());
    });
  }

  notify(message: JsonRpcMessage): Promise<void> {
    return new Promise((resolve) => this.#toServer.write(`${JSON.stringify(message)}\n`, () => resolve()));
  }

  async close(): Promise<void> {
    for (const w of this.#waiting.values()) w.reject(new Error('closed'));
    this.#waiting.clear();
    this.#toServer.end();
    await this.#served;
  }
}

/** Runs the example: `node dist/examples/custom-transport.js`. */
export async function main(): Promise<string> {
  const greet = defineTool({
    name: 'greet',
    description: 'Greets someone.',
    inputSchema: { type: 'object', properties: { who: { type: 'string' } } },
    handler: ({ who }) => `Hello, ${String(who)}!`,
  });
  const client = new Client(new InProcessTransport([greet]), { era: 'legacy' });
  try {
    const result = await client.callTool('greet', { who: 'world' });
    return (result.content as { text: string }[])[0].text;
  } finally {
    await client.close();
  }
}

if (import.meta.url === `file://${process.argv[1]}`) console.log(await main());
