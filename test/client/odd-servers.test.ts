/**
 * The client's HTTP transport against servers that answer the way other stacks do, or the way a
 * hostile one would: a raw node:http server on 127.0.0.1 plays the server. The Python SDK's
 * streamable HTTP server writes its SSE through sse-starlette, whose lines end in CRLF (before,
 * the client never found the end of an event there and waited until the stream ended).
 */
import { createServer } from 'node:http';
import type { IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client, HttpClientTransport, StdioClientTransport } from '../../src/client/index.js';
import { SseReader } from '../../src/client/sse-reader.js';
import { SluiceError } from '../../src/errors.js';

type Writer = (res: ServerResponse, id: unknown) => void;
let toolsCall: Writer = (res) => res.end();
let server: Server;
let url = '';

const result = (id: unknown, text: string) => JSON.stringify({ jsonrpc: '2.0', id, result: { content: [{ type: 'text', text }] } });
const sse = (res: ServerResponse) => res.writeHead(200, { 'content-type': 'text/event-stream', 'cache-control': 'no-cache' });
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      if (req.method !== 'POST') return void res.writeHead(405).end();
      const body = JSON.parse(Buffer.concat(chunks).toString()) as { id?: unknown; method: string };
      if (body.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': 'odd-session' });
        return void res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'odd', version: '1' } } }));
      }
      if (body.id === undefined) return void res.writeHead(202).end();
      toolsCall(res, body.id);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}/mcp`;
});

afterAll(async () => {
  await new Promise((resolve) => server.close(resolve));
});

async function call(options: { maxResponseBytes?: number } = {}): Promise<unknown> {
  const client = new Client(new HttpClientTransport({ url, ...options }), { era: 'legacy' });
  try {
    return await client.callTool('echo', {}, { timeoutMs: 5_000 });
  } finally {
    await client.close();
  }
}

describe('SSE as other servers write it', () => {
  it('CRLF line ends, an event name and a keep-alive comment (sse-starlette, the Python SDK server): the answer arrives', async () => {
    toolsCall = (res, id) => {
      sse(res);
      res.write(': ping - 2026-12-07 00:00:00\r\n\r\n');
      res.write(`event: message\r\ndata: ${result(id, 'over CRLF')}\r\n\r\n`);
      // The stream stays open, as a server's may: the answer must not wait for its end.
    };
    expect(await call()).toEqual({ content: [{ type: 'text', text: 'over CRLF' }] });
  });

  it('a CRLF split between two writes, and the data split over two lines of one event', async () => {
    toolsCall = (res, id) => {
      sse(res);
      const text = result(id, 'split');
      const half = text.indexOf(',') + 1; // where a line break is JSON whitespace (data lines join with LF)
      void (async () => {
        res.write(`data: ${text.slice(0, half)}\r`);
        await sleep(20);
        res.write(`\ndata: ${text.slice(half)}\r`);
        await sleep(20);
        res.write('\n\r');
        await sleep(20);
        res.write('\n');
      })();
    };
    expect(await call()).toEqual({ content: [{ type: 'text', text: 'split' }] });
  });

  it('CR alone as the line end', async () => {
    toolsCall = (res, id) => {
      sse(res);
      res.end(`data: ${result(id, 'CR')}\r\r`);
    };
    expect(await call()).toEqual({ content: [{ type: 'text', text: 'CR' }] });
  });

  it('events whose data is JSON but no message (a number, null, an array) are skipped, not a crash', async () => {
    toolsCall = (res, id) => {
      sse(res);
      res.end(`data: 5\n\ndata: null\n\ndata: [1]\n\ndata: "text"\n\ndata: ${result(id, 'after the junk')}\n\n`);
    };
    expect(await call()).toEqual({ content: [{ type: 'text', text: 'after the junk' }] });
  });
});

describe('responses that are not the answer', () => {
  const json = (res: ServerResponse, body: unknown) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(body));

  it('an error or a result that is not an object, or neither, is invalid_response: no TypeError past the caller, no null result', async () => {
    const cases: Array<[string, (id: unknown) => unknown]> = [
      ['an error that is null, not a JSON-RPC error object', (id) => ({ jsonrpc: '2.0', id, error: null })],
      ['an error that is a string, not a JSON-RPC error object', (id) => ({ jsonrpc: '2.0', id, error: 'no' })],
      ['a result that is null, not an object', (id) => ({ jsonrpc: '2.0', id, result: null })],
      ['a result that is an array, not an object', (id) => ({ jsonrpc: '2.0', id, result: [] })],
      ['a result that is nothing, not an object', (id) => ({ jsonrpc: '2.0', id })],
    ];
    for (const [what, body] of cases) {
      toolsCall = (res, id) => json(res, body(id));
      await expect(call(), what).rejects.toMatchObject({ code: 'invalid_response', message: `the server answered tools/call with ${what}` });
      // The same through an SSE stream (where a message with neither is not a response at all: skipped).
      if (what.includes('nothing')) continue;
      toolsCall = (res, id) => { sse(res); res.end(`data: ${JSON.stringify(body(id))}\n\n`); };
      await expect(call(), `${what}, over SSE`).rejects.toMatchObject({ code: 'invalid_response', message: `the server answered tools/call with ${what}` });
    }
  });

  it("a JSON body answering another id is invalid_response; an error with id null is still the POST's answer", async () => {
    toolsCall = (res, id) => json(res, { jsonrpc: '2.0', id: 999, result: { content: [] } });
    await expect(call()).rejects.toMatchObject({ code: 'invalid_response', message: expect.stringMatching(/^the server answered request \d+ with a response to id 999$/) });
    toolsCall = (res) => json(res, { jsonrpc: '2.0', id: null, error: { code: -32600, message: 'bad headers' } });
    await expect(call()).rejects.toMatchObject({ rpcCode: -32600, message: 'bad headers' });
  });
});

describe('maxResponseBytes: a server that does not stop', () => {
  it('an SSE event that never ends fails the call with invalid_response, and the stream is closed', async () => {
    let closed: Promise<void> = Promise.resolve();
    toolsCall = (res) => {
      sse(res);
      closed = new Promise((resolve) => res.once('close', () => resolve()));
      res.write('data: ');
      const timer = setInterval(() => { if (!res.destroyed) res.write('x'.repeat(1024)); }, 1);
      res.once('close', () => clearInterval(timer));
    };
    const error = await call({ maxResponseBytes: 64 * 1024 }).then(() => undefined, (e: unknown) => e);
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toMatchObject({ code: 'invalid_response', message: expect.stringContaining('maxResponseBytes') });
    await closed;
  });

  it('a JSON body over the bound fails the same way; one under it is read', async () => {
    toolsCall = (res, id) => {
      res.writeHead(200, { 'content-type': 'application/json' }).end(result(id, 'y'.repeat(100_000)));
    };
    await expect(call({ maxResponseBytes: 50_000 })).rejects.toMatchObject({ code: 'invalid_response', message: expect.stringContaining('maxResponseBytes') });
    expect(await call({ maxResponseBytes: 200_000 })).toMatchObject({ content: [{ text: 'y'.repeat(100_000) }] });
  });

  it('a bound that is not a positive integer is refused at construction', () => {
    for (const bad of [0, -1, 1.5, Number.NaN, '10' as unknown as number]) {
      expect(() => new HttpClientTransport({ url: 'http://127.0.0.1:1/mcp', maxResponseBytes: bad })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
    }
  });
});

describe('SseReader', () => {
  it('reads the same events whatever the line ends and however the text is cut', () => {
    const stream = 'event: message\r\ndata: {"a":1}\r\n\r\n: comment\n\ndata\ndata: two\rdata:three\r\rdatax: not data\n\n';
    const expected = ['{"a":1}', '\ntwo\nthree'];
    for (let cut = 0; cut <= stream.length; cut++) {
      const reader = new SseReader();
      expect([...reader.push(stream.slice(0, cut)), ...reader.push(stream.slice(cut))], `cut at ${cut}`).toEqual(expected);
      expect(reader.pending).toBe(0);
    }
  });

  it('property: a stream cut into any number of pieces gives the events the whole stream gives', () => {
    const line = fc.stringMatching(/^[^\r\n]{0,12}$/);
    const end = fc.constantFrom('\n', '\r\n', '\r');
    const field = fc.tuple(fc.constantFrom('data: ', 'data:', 'data', ': ', 'event: ', 'id: '), line, end).map(([name, value, e]) => `${name}${value}${e}`);
    const event = fc.tuple(fc.array(field, { maxLength: 4 }), end).map(([fields, e]) => `${fields.join('')}${e}`);
    fc.assert(fc.property(fc.array(event, { maxLength: 8 }), fc.array(fc.nat(), { maxLength: 12 }), (events, cuts) => {
      const stream = events.join('');
      const whole = new SseReader().push(stream);
      const points = [...new Set(cuts.map((c) => c % (stream.length + 1)))].sort((a, b) => a - b);
      const reader = new SseReader();
      const pieces: string[] = [];
      let from = 0;
      for (const p of [...points, stream.length]) {
        pieces.push(...reader.push(stream.slice(from, p)));
        from = p;
      }
      expect(pieces).toEqual(whole);
      expect(reader.pending).toBe(pendingOf(stream));
    }), { numRuns: 500 });
  });
});

/** What a reader holds after the whole of `stream`: the text after its last blank line. */
function pendingOf(stream: string): number {
  const reader = new SseReader();
  reader.push(stream);
  return reader.pending;
}

/**
 * A stdio server in a few lines: answers initialize, and each tools/call by what its name asks for:
 * `noise` first prints what a tool's console.log would (a number, null, a string, an array), `flood`
 * prints a line of 200 000 characters before its answer's line. Three end the server with their
 * answer: `last_words` writes it without a newline and exits; `late_words` exits at once and leaves
 * a child process, which holds stdout, to write it 300 ms later; `held_silence` exits leaving a
 * child that holds stdout for 5 s and writes nothing; `exit_three` exits with code 3 and no answer.
 */
const kStdioServer = `
const rl = require('node:readline').createInterface({ input: process.stdin });
const send = (m) => process.stdout.write(JSON.stringify(m) + '\\n');
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') return send({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'odd-stdio', version: '1' } } });
  const name = m.params.name;
  if (name === 'noise') process.stdout.write('42\\nnull\\n"text"\\n[1]\\ntrue\\n');
  if (name === 'flood') { for (let i = 0; i < 200; i++) process.stdout.write('x'.repeat(1000)); process.stdout.write('\\n'); return; }
  const answer = JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: name }] } });
  if (name === 'last_words') { process.stdout.write(answer); process.exit(0); }
  const heir = (code) => require('node:child_process').spawn(process.execPath, ['-e', code], { stdio: ['ignore', 'inherit', 'ignore'] });
  if (name === 'late_words') { heir('setTimeout(() => process.stdout.write(' + JSON.stringify(answer + '\\n') + '), 300)'); process.exit(0); }
  if (name === 'held_silence') { heir('setTimeout(() => {}, 5000)'); process.exit(0); }
  if (name === 'exit_three') process.exit(3);
  send(JSON.parse(answer));
});
`;

describe('stdio: what a server prints on stdout besides its messages', () => {
  const stdioClient = (options: { maxResponseBytes?: number } = {}) =>
    new Client(new StdioClientTransport({ command: process.execPath, args: ['-e', kStdioServer], ...options }), { era: 'legacy' });

  it("JSON that is no message (a tool's console.log(42), console.log(null)) is skipped, not a crash", async () => {
    const client = stdioClient();
    try {
      expect(await client.callTool('noise', {}, { timeoutMs: 5_000 })).toEqual({ content: [{ type: 'text', text: 'noise' }] });
    } finally {
      await client.close();
    }
  });

  it('a line over maxResponseBytes fails the calls waiting with invalid_response; the next call is answered', async () => {
    const client = stdioClient({ maxResponseBytes: 50_000 });
    try {
      await expect(client.callTool('flood', {}, { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'invalid_response', message: expect.stringContaining('maxResponseBytes') });
      expect(await client.callTool('after', {}, { timeoutMs: 5_000 })).toEqual({ content: [{ type: 'text', text: 'after' }] });
    } finally {
      await client.close();
    }
  });

  it('a bound that is not a positive integer is refused before the server is started', () => {
    expect(() => new StdioClientTransport({ command: process.execPath, args: ['-e', ''], maxResponseBytes: 0 })).toThrow(expect.objectContaining({ code: 'invalid_option' }));
  });
  it('an answer the server wrote just before it exited arrives: without its newline, or after the exit', async () => {
    for (const name of ['last_words', 'late_words']) {
      const client = stdioClient();
      try {
        expect(await client.callTool(name, {}, { timeoutMs: 5_000 })).toEqual({ content: [{ type: 'text', text: name }] });
      } finally {
        await client.close();
      }
    }
  });

  it('a server that exits with no answer: server_exited naming its exit code', async () => {
    const client = stdioClient();
    try {
      await expect(client.callTool('exit_three', {}, { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'server_exited', message: 'the server process exited (code 3)' });
    } finally {
      await client.close();
    }
  });

  it('a command that cannot start: the call fails with server_exited naming why, and close() returns', async () => {
    // The spawn's 'error' event had no listener: it was thrown in the caller's process (uncaught).
    const client = new Client(new StdioClientTransport({ command: '/nonexistent/sluice-server' }), { era: 'legacy' });
    try {
      await expect(client.callTool('echo', {}, { timeoutMs: 5_000 })).rejects.toMatchObject({
        code: 'server_exited', message: 'the server process did not start (spawn /nonexistent/sluice-server ENOENT)',
      });
      await expect(client.callTool('echo', {}, { timeoutMs: 5_000 })).rejects.toMatchObject({ code: 'server_exited' });
    } finally {
      await client.close();
    }
  });

  it('a server that exits leaving its stdout held open and no answer: server_exited within about a second, not a hang', async () => {
    const client = stdioClient();
    try {
      // Before the call's own timeout (whose code is not this one): the wait for stdout is bounded.
      await expect(client.callTool('held_silence', {}, { timeoutMs: 4_000 })).rejects.toMatchObject({ code: 'server_exited' });
    } finally {
      await client.close();
    }
  });
});
