/**
 * What a held 2025-11-25 `tasks/result` wait costs the server in memory: N waits on a task that
 * never ends, each on its own connection (as N clients would hold them), against a real Sluice
 * server in a child process (so the bench's own sockets are not counted). In the same run it reads
 * the server's RSS (/proc) and its serving thread's heap (after a full GC, through a tool that runs
 * on that thread) before the waits, while they are held, and after the clients vanish.
 *
 *   npm run build && node dist/bench/long-poll-memory.js [--waits 2000] [--workers 1] [--rounds 3]
 *
 * With one HTTP worker every wait is on that worker, so its heap is the whole JS cost; RSS adds what
 * lives outside the JS heaps (libuv handles, the HTTP parser, buffers; the kernel's socket buffers
 * are in neither). The figure per wait is (held − before) ÷ N. Every wait comes from one session of
 * one client, with that client's bounds raised to N: by default a client holds at most 100 per worker.
 */
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { fileURLToPath } from 'node:url';
import { isMainThread } from 'node:worker_threads';
import { createServer, defineTool } from '../src/index.js';
import { benchArgs } from './lib/args.js';
import { rssMb } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';

const pause = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** Never ends until cancelled (or the server closes): the task the waits wait on. */
export const forever = defineTool({
  name: 'forever', description: 'Runs until cancelled.', taskSupport: 'optional',
  inputSchema: { type: 'object', properties: {} },
  handler: async (_args, ctx) => {
    while (!ctx.cancelled) await pause(1_000);
    return 'cancelled';
  },
});

/** The heap of the thread it runs on (an HTTP worker), after a full GC. */
export const heap = defineTool({
  name: 'heap', description: 'heapUsed of this thread after a full GC, in bytes.',
  inputSchema: { type: 'object', properties: {} },
  handler: () => {
    const gc = (globalThis as { gc?: () => void }).gc;
    if (gc === undefined) throw new Error('run the server with --expose-gc');
    gc();
    gc();
    return String(process.memoryUsage().heapUsed);
  },
});

type Options = { waits: number; workers: number; rounds: number; serve: boolean };

/** The command line, read on the main thread only: the HTTP workers load this file as their tools module. */
function options(): Options {
  return benchArgs('Usage: node dist/bench/long-poll-memory.js [options]\nWhat a held 2025-11-25 tasks/result wait costs the server in memory.', {
    waits: { type: 'number', integer: true, default: 2_000, help: 'waits held at once' },
    workers: { type: 'number', integer: true, default: 1, help: 'the server\'s HTTP workers' },
    rounds: { type: 'number', integer: true, default: 3, help: 'rounds of hold and release' },
    serve: { type: 'flag', help: 'internal: be the server (the bench starts itself with it)' },
  });
}

/** The child: a server on a free port with limits high enough that all N waits are held. */
async function serve({ waits, workers }: Options): Promise<void> {
  const server = createServer({
    tools: new URL(import.meta.url), port: 0, workers, metrics: true, janitor: false,
    maxInFlightPerClient: waits + 1_000,
    tasks: { limits: { maxResultWaitsPerClient: waits + 100, maxResultWaits: waits + 100 } },
  });
  const address = await server.listen();
  process.stdout.write(`READY ${address.port}\n`);
  process.on('SIGTERM', () => { void server.close().then(() => process.exit(0)); });
}

interface Reply { status: number; session: string | undefined; body: string }

class Client {
  session = '';
  #id = 1;
  readonly open = new Set<ClientRequest>();
  constructor(readonly port: number) {}

  post(body: unknown): Promise<Reply> {
    const text = JSON.stringify(body);
    return new Promise((resolve, reject) => {
      const req = request({
        host: '127.0.0.1', port: this.port, path: '/mcp', method: 'POST', agent: false,
        headers: {
          'content-type': 'application/json', accept: 'application/json, text/event-stream', 'content-length': Buffer.byteLength(text),
          'mcp-protocol-version': '2025-11-25', ...(this.session === '' ? {} : { 'mcp-session-id': this.session }),
        },
      }, (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { data += c; });
        res.on('end', () => { this.open.delete(req); resolve({ status: res.statusCode ?? 0, session: res.headers['mcp-session-id'] as string | undefined, body: data }); });
        res.on('error', reject);
      });
      this.open.add(req);
      req.on('error', (error) => { this.open.delete(req); reject(error); });
      req.end(text);
    });
  }

  call(method: string, params: Record<string, unknown>): Promise<Reply> {
    return this.post({ jsonrpc: '2.0', id: this.#id++, method, params });
  }

  vanish(): void {
    for (const req of this.open) req.destroy();
    this.open.clear();
  }
}

function resultOf(reply: Reply): Record<string, unknown> {
  const text = reply.body.trim().startsWith('{') ? reply.body : reply.body.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5)).pop() ?? '{}';
  return (JSON.parse(text) as { result?: Record<string, unknown> }).result ?? {};
}

async function metric(port: number, name: string): Promise<number> {
  const text = await (await fetch(`http://127.0.0.1:${port}/metrics`)).text();
  return Number(text.split('\n').find((l) => l.startsWith(`${name} `))?.split(' ')[1]);
}

async function until(check: () => Promise<boolean>, what: string, ms = 60_000): Promise<void> {
  const end = Date.now() + ms;
  while (!(await check())) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await pause(50);
  }
}

interface Sample { heap: number; rss: number }

async function sample(client: Client, pid: number): Promise<Sample> {
  const reply = await client.call('tools/call', { name: 'heap', arguments: {} });
  const content = resultOf(reply).content as Array<{ text: string }> | undefined;
  const heapBytes = Number(content?.[0]?.text);
  if (!Number.isFinite(heapBytes)) throw new Error(`heap tool answered ${reply.status} ${reply.body.slice(0, 200)}`);
  await pause(200);
  return { heap: heapBytes, rss: rssMb(pid) * 1024 * 1024 };
}

/** Opens `n` waits on `taskId`, each on its own connection, and waits until the server holds them all. */
async function hold(port: number, session: string, taskId: string, n: number, base: number): Promise<Client> {
  const waiter = new Client(port);
  waiter.session = session;
  for (let i = 0; i < n; i++) {
    waiter.call('tasks/result', { taskId }).catch(() => {});
    if (i % 200 === 199) await pause(20); // let the server accept as we go
  }
  await until(async () => (await metric(port, 'sluice_requests_in_flight')) >= base + n, `${n} waits held`);
  return waiter;
}

async function main({ waits, workers, rounds }: Options): Promise<void> {
  const self = fileURLToPath(import.meta.url);
  const server = await startServer(['--expose-gc', self, '--serve', '--waits', String(waits), '--workers', String(workers)]);
  try {
    const client = new Client(server.port);
    const init = await client.post({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'bench', version: '1' } } });
    client.session = init.session ?? '';
    await client.post({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const taskId = (resultOf(await client.call('tools/call', { name: 'forever', arguments: {}, task: {} })).task as { taskId: string }).taskId;
    const base = await metric(server.port, 'sluice_requests_in_flight');
    // Warm-up: one round of waits opened and dropped, so lazily made code and pools are not counted.
    (await hold(server.port, client.session, taskId, Math.min(waits, 500), base)).vanish();
    await until(async () => (await metric(server.port, 'sluice_requests_in_flight')) === base, 'the warm-up waits to be released');
    console.log(`long-poll memory: ${waits} tasks/result waits on one never-ending task, ${workers} HTTP worker(s), Node ${process.version}`);
    console.log('round | heap before | heap held | heap after | RSS before | RSS held | RSS after | heap/wait | RSS/wait');
    for (let round = 1; round <= rounds; round++) {
      const before = await sample(client, server.pid);
      const waiter = await hold(server.port, client.session, taskId, waits, base);
      const held = await sample(client, server.pid);
      waiter.vanish();
      await until(async () => (await metric(server.port, 'sluice_requests_in_flight')) === base, 'the waits to be released');
      const after = await sample(client, server.pid);
      const mb = (b: number) => `${(b / 1048576).toFixed(1)} MB`;
      const per = (a: number, b: number) => `${((b - a) / waits / 1024).toFixed(1)} KiB`;
      console.log(`${round} | ${mb(before.heap)} | ${mb(held.heap)} | ${mb(after.heap)} | ${mb(before.rss)} | ${mb(held.rss)} | ${mb(after.rss)} | ${per(before.heap, held.heap)} | ${per(before.rss, held.rss)}`);
    }
  } finally {
    await stopServer(server);
  }
}

if (isMainThread) {
  const o = options();
  if (o.serve) await serve(o);
  else await main(o);
}
