import { PassThrough } from 'node:stream';
import { serveStdioServer } from '../../src/index.js';
import type { StdioServerOptions } from '../../src/index.js';

/** A stdio server on in-memory streams: write lines (`send`), read the JSON lines it answers (`lines`). */
export function stdioServer(options: Omit<StdioServerOptions, 'input' | 'output' | 'log'>) {
  const input = new PassThrough();
  const output = new PassThrough();
  const lines: Record<string, unknown>[] = [];
  let buffered = '';
  output.on('data', (chunk: Buffer) => {
    buffered += chunk.toString('utf8');
    let i;
    while ((i = buffered.indexOf('\n')) !== -1) {
      lines.push(JSON.parse(buffered.slice(0, i)) as Record<string, unknown>);
      buffered = buffered.slice(i + 1);
    }
  });
  const logs: string[] = [];
  const done = serveStdioServer({ ...options, input, output, log: (_level, message) => { logs.push(message); } });
  const send = (message: unknown) => input.write(`${typeof message === 'string' ? message : JSON.stringify(message)}\n`);
  return { input, lines, logs, done, send };
}
