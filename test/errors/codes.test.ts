/**
 * Every error code Sluice has, each produced by a small real scenario (undici's test/errors.js
 * idea): every SluiceErrorCode (local errors and refusals) and every
 * JSON-RPC code of the wire table (`ErrorCode`) the server emits. A code without a scenario fails
 * here, so a new code lands with one. Assertions are on `code` (and `rpcCode`), never on wording.
 *
 * The client codes run against a real Sluice server on 127.0.0.1 (tools from
 * test/errors/fixtures/codes-tools.mjs) or, for answers a Sluice server never gives (a non-JSON
 * body, an expired session), against a few lines of node:http on 127.0.0.1.
 */
import { createServer as createHttpServer } from 'node:http';
import type { IncomingMessage, Server as HttpServer, ServerResponse } from 'node:http';
import { createServer as createNetServer } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Redis } from 'ioredis';
import { MemoryTaskStore, RedisTaskStore, attachRegistry, createRegistry, createServer, defineTool } from '../../src/index.js';
import type { Server } from '../../src/index.js';
import { Client, HttpClientTransport, InsufficientScopeError, RpcError, StdioClientTransport, UnauthorizedError } from '../../src/client/index.js';
import { SluiceError, kSluiceErrorCodes } from '../../src/errors.js';
import type { SluiceErrorCode } from '../../src/errors.js';
import { ErrorCode, ProtocolError } from '../../src/protocol/wire.js';
import { importToolsModule } from '../../src/catalog/catalog.js';
import { toPromptResult } from '../../src/catalog/prompts.js';
import { metaValidator } from '../../src/tools/meta-validators.js';
import { listenNode } from '../../src/transport/http/node/adapter.js';
import { findUws } from '../../src/transport/http/uws/load.js';
import { checkPortFree } from '../../src/process/port-probe.js';
import { post } from '../helpers/http.js';
import { initialize, modernMeta } from '../helpers/server.js';
import { startRedis } from '../helpers/redis.js';

const kTools = new URL('./fixtures/codes-tools.mjs', import.meta.url);
const kModern = '2026-07-28';

let server: Server;
let url: string;
/** A node:http server answering whatever `stub` says (for answers a Sluice server never gives). */
let stub: HttpServer;
let stubUrl: string;
let stubHandler: (req: IncomingMessage, body: Record<string, unknown>, res: ServerResponse) => void = (_q, _b, res) => res.end();

beforeAll(async () => {
  server = createServer({ tools: kTools, port: 0, workers: 1, janitor: false, registry: { maxRowsPerScope: 1 } }, { log: () => {} });
  url = (await server.listen()).url;
  stub = createHttpServer((req, res) => {
    let text = '';
    req.setEncoding('utf8').on('data', (c: string) => { text += c; }).on('end', () => {
      let body: Record<string, unknown> = {};
      try { body = JSON.parse(text) as Record<string, unknown>; } catch { /* not ours to check */ }
      stubHandler(req, body, res);
    });
  });
  await new Promise<void>((resolve) => stub.listen(0, '127.0.0.1', resolve));
  stubUrl = `http://127.0.0.1:${(stub.address() as AddressInfo).port}/mcp`;
}, 60_000);

afterAll(async () => {
  await server?.close();
  await new Promise<void>((resolve) => { if (stub === undefined) resolve(); else stub.close(() => resolve()); });
});

/** The `code` a promise rejects with ('resolved' when it does not reject). */
async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
    return 'resolved';
  } catch (error) {
    return error;
  }
}

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await rejection(promise);
  return (error as { code?: string }).code ?? String(error);
}

function thrownCode(fn: () => unknown): string {
  try {
    fn();
    return 'returned';
  } catch (error) {
    return (error as { code?: string }).code ?? String(error);
  }
}

/** A client with its own transport, closed after `use`. */
async function withClient<T>(target: string, era: 'legacy' | 'modern', use: (client: Client) => Promise<T>): Promise<T> {
  const client = new Client(new HttpClientTransport({ url: target }), { era });
  try {
    return await use(client);
  } finally {
    await client.close();
  }
}

const legacyResult = (body: Record<string, unknown>, result: unknown) => JSON.stringify({ jsonrpc: '2.0', id: body.id, result });

// ---------------------------------------------------------------------------------------------
// SluiceErrorCode → a scenario returning the code it produced.

const kSluiceScenarios: Record<SluiceErrorCode, () => Promise<string> | string> = {
  invalid_option: () => thrownCode(() => createRegistry({ maxRows: 0 })),
  invalid_scope: () => thrownCode(() => createRegistry({ maxRows: 16 }).track(1, 42 as never)),
  invalid_request_id: () => {
    const refused = createRegistry({ maxRows: 16 }).track({ not: 'an id' } as never, 's');
    return refused.ok ? 'tracked' : refused.error;
  },
  cancellation_limit_reached: () => {
    const reg = createRegistry({ maxRows: 16, maxRowsPerScope: 1 });
    reg.cancel(1, 'first', 's');
    const refused = reg.cancel(2, 'second', 's');
    return refused.ok ? 'recorded' : refused.error;
  },
  in_flight_capacity_exhausted: () => {
    const reg = createRegistry({ maxRows: 16, inFlightCapacity: 1 });
    const first = reg.track(1, 's');
    const second = reg.track(2, 's');
    if (first.ok) reg.untrack(first);
    return second.ok ? 'tracked' : second.error;
  },
  // The caller's timeout: the call rejects with a CancelledError.
  request_cancelled: () => withClient(url, 'modern', (c) => codeOf(c.callTool('block', {}, { timeoutMs: 100 }))),
  bad_descriptor: () => thrownCode(() => attachRegistry({ kind: 'not a registry' } as never)),
  // A module that claims to be uWebSockets.js but is JavaScript is refused.
  uws_native_unavailable: () => {
    const imitation = { App() { return {}; }, us_listen_socket_close() {}, us_socket_local_port() { return 0; } };
    const fake = Object.assign((id: string) => { if (id.endsWith('.node')) return imitation; throw new Error(`cannot find ${id}`); }, {
      resolve: (id: string) => { if (id === 'uWebSockets.js') return '/nowhere/uWebSockets.js/uws.js'; throw new Error(`cannot find ${id}`); },
    }) as unknown as NodeRequire;
    return thrownCode(() => findUws(fake));
  },
  // 192.0.2.1 (TEST-NET-1) is no address of this machine.
  listen_failed: () => codeOf(listenNode({ host: '192.0.2.1', port: 0, maxBodyBytes: 1024, bodyTimeoutMs: 1000, allHeaders: false, handler: () => {} })),
  server_closed: async () => {
    const closed = createServer({ tools: [], port: 0 }, { log: () => {} });
    await closed.close();
    return codeOf(closed.listen());
  },
  port_in_use: async () => {
    const holder = createNetServer();
    await new Promise<void>((resolve) => holder.listen(0, '127.0.0.1', resolve));
    try {
      return await codeOf(checkPortFree('127.0.0.1', (holder.address() as AddressInfo).port));
    } finally {
      holder.close();
    }
  },
  tools_module_failed: () => codeOf(importToolsModule(new URL('./fixtures/no-such-module.mjs', import.meta.url).href)),
  // The fixture tool calls process.exit() in the server's HTTP worker and returns what it caught.
  process_exit_refused: () => withClient(url, 'modern', async (c) => {
    const result = await c.callTool('exit_code');
    return (result.content[0] as { text: string }).text;
  }),
  invalid_definition: () => thrownCode(() => defineTool({ name: 'x' } as never)),
  // A prompt whose get returned a number: not a prompts/get result.
  invalid_result: () => thrownCode(() => toPromptResult({ name: 'p' }, 42 as never)),
  // A dist/ built by tsc alone: the meta-schema validators the build makes after it are not there.
  build_incomplete: () => thrownCode(() => metaValidator('draft2020', new URL('./fixtures/', import.meta.url))),
  // A call pending when the client closes, and a call made after: both the close, neither a cancel.
  transport_closed: async () => {
    const codes = await Promise.all((['legacy', 'modern'] as const).map(async (era) => {
      const client = new Client(new HttpClientTransport({ url }), { era });
      await client.connect();
      const pending = codeOf(client.callTool('block'));
      await new Promise((r) => setTimeout(r, 200));
      await client.close();
      return [await pending, await codeOf(client.ping())];
    }));
    const stdio = new Client(new StdioClientTransport({ command: process.execPath, args: ['-e', "process.stdin.resume()"] }), { era: 'legacy' });
    const pending = codeOf(stdio.ping());
    await stdio.close();
    codes.push([await pending]);
    expect(new Set(codes.flat())).toEqual(new Set(['transport_closed']));
    return codes[0][0];
  },
  // A stdio server that exits on its first line.
  server_exited: async () => {
    const client = new Client(new StdioClientTransport({ command: process.execPath, args: ['-e', "process.stdin.once('data', () => process.exit(3))"] }), { era: 'legacy' });
    try {
      return await codeOf(client.ping());
    } finally {
      await client.close();
    }
  },
  // The server forgets every session at once: the client renews it once, then reports the 404.
  session_expired: async () => {
    let sessions = 0;
    stubHandler = (req, body, res) => {
      if (body.method === 'initialize') {
        res.writeHead(200, { 'content-type': 'application/json', 'mcp-session-id': `s${++sessions}` });
        res.end(legacyResult(body, { protocolVersion: '2025-11-25', capabilities: {}, serverInfo: { name: 'stub', version: '1' } }));
      } else if (body.id === undefined) {
        res.writeHead(202).end();
      } else {
        res.writeHead(req.headers['mcp-session-id'] === undefined ? 400 : 404).end();
      }
    };
    const code = await withClient(stubUrl, 'legacy', (c) => codeOf(c.ping()));
    expect(sessions).toBe(2); // the first session, and the one renewal
    return code;
  },
  invalid_response: async () => {
    stubHandler = (_req, _body, res) => { res.writeHead(200, { 'content-type': 'text/plain' }).end('hello, not JSON'); };
    return withClient(stubUrl, 'legacy', (c) => codeOf(c.ping()));
  },
  invalid_params: () => withClient(url, 'modern', (c) => codeOf(c.callTool('echo', { text: 1n }))),
  rpc_error: () => withClient(url, 'modern', async (c) => {
    const error = await rejection(c.request('no/such/method'));
    // One class both ways, under both names.
    expect(error).toBeInstanceOf(ProtocolError);
    expect(error).toBeInstanceOf(RpcError);
    expect(error).toBeInstanceOf(SluiceError);
    expect(error).toMatchObject({ rpcCode: ErrorCode.MethodNotFound });
    return (error as SluiceError).code;
  }),
  missing_client_capability: () => withClient(url, 'modern', async (c) => {
    const error = await rejection(c.callTool('needs_elicitation'));
    expect(error).toMatchObject({ rpcCode: ErrorCode.MissingRequiredClientCapability, data: { requiredCapabilities: { elicitation: {} } } });
    return (error as SluiceError).code;
  }),
  // One owner may keep one task: its second is refused.
  task_limit_reached: async () => {
    const store = new MemoryTaskStore({ maxTasksPerOwner: 1 });
    try {
      const task = (taskId: string) => ({ taskId, owner: 'session:a', dialect: 'modern', toolName: 't', runner: '1' }) as const;
      await store.create(task('first'));
      return await codeOf(store.create(task('second')));
    } finally {
      await store.close();
    }
  },
  // One client (by address, across sessions) may keep one task: a second, in another session, is refused.
  task_quota_reached: async () => {
    const store = new MemoryTaskStore({ maxTasksPerClient: 1 });
    try {
      const task = (taskId: string, owner: string) => ({ taskId, owner, client: 'ip:192.0.2.1', dialect: 'modern', toolName: 't', runner: '1' }) as const;
      await store.create(task('first', 'session:a'));
      return await codeOf(store.create(task('second', 'session:b')));
    } finally {
      await store.close();
    }
  },
  // A cursor that is no cursor of this list.
  invalid_cursor: async () => {
    const store = new MemoryTaskStore();
    try {
      return await codeOf(store.list('session:a', 'not-a-cursor', 10));
    } finally {
      await store.close();
    }
  },
  // A resource server refusing the token (401 invalid_token, RFC 6750 + RFC 9728 challenge).
  unauthorized: async () => {
    stubHandler = (_req, _body, res) => {
      res.writeHead(401, { 'www-authenticate': 'Bearer error="invalid_token", resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp"' }).end();
    };
    const client = new Client(new HttpClientTransport({ url: stubUrl, bearer: 'expired' }), { era: 'modern' });
    try {
      const error = await rejection(client.ping());
      expect(error).toBeInstanceOf(UnauthorizedError);
      return (error as SluiceError).code;
    } finally {
      await client.close();
    }
  },
  // A token without the scopes the request needs (403 insufficient_scope).
  insufficient_scope: async () => {
    stubHandler = (_req, _body, res) => {
      res.writeHead(403, { 'www-authenticate': 'Bearer error="insufficient_scope", scope="tools:call", resource_metadata="https://rs.example/.well-known/oauth-protected-resource/mcp"' }).end();
    };
    const client = new Client(new HttpClientTransport({ url: stubUrl, bearer: 'narrow' }), { era: 'modern' });
    try {
      const error = await rejection(client.ping());
      expect(error).toBeInstanceOf(InsufficientScopeError);
      return (error as SluiceError).code;
    } finally {
      await client.close();
    }
  },
  // Cluster mode with no Redis listening where it is told to look (a free port nothing holds).
  cluster_unavailable: async () => {
    const port = await new Promise<number>((resolve) => {
      const probe = createNetServer().listen(0, '127.0.0.1', () => { const p = (probe.address() as AddressInfo).port; probe.close(() => resolve(p)); });
    });
    return codeOf(createServer({ tools: [], port: 0, tasks: false, cluster: { redis: `redis://127.0.0.1:${port}` } }, { log: () => {} }).listen());
  },
};

// ---------------------------------------------------------------------------------------------
// Wire codes (ErrorCode) → a scenario against the server returning the JSON-RPC code it answered.

const modernHeaders = (method: string, version = kModern): Record<string, string> => ({ 'mcp-protocol-version': version, 'mcp-method': method });
const errorCodeOf = (body: string): number => (JSON.parse(body) as { error: { code: number } }).error.code;
const rpcCodeOf = async (promise: Promise<unknown>): Promise<number> => ((await rejection(promise)) as { rpcCode: number }).rpcCode;

const kWireScenarios: Record<keyof typeof ErrorCode, () => Promise<number>> = {
  ParseError: async () => errorCodeOf((await post(url, '{"jsonrpc":"2.0","id":1,"method":')).body),
  InvalidRequest: async () => errorCodeOf((await post(url, { jsonrpc: '1.0', id: 1, method: 'ping' })).body),
  MethodNotFound: () => withClient(url, 'modern', (c) => rpcCodeOf(c.request('no/such/method'))),
  InvalidParams: () => withClient(url, 'modern', (c) => rpcCodeOf(c.callTool('no_such_tool'))),
  InternalError: () => withClient(url, 'legacy', (c) => rpcCodeOf(c.getPrompt('broken'))),
  HeaderMismatch: async () => errorCodeOf((await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta() } }, { 'mcp-method': 'tools/list' })).body),
  MissingRequiredClientCapability: () => withClient(url, 'modern', (c) => rpcCodeOf(c.callTool('needs_elicitation'))),
  UnsupportedProtocolVersion: async () => errorCodeOf((await post(
    url,
    { jsonrpc: '2.0', id: 1, method: 'tools/list', params: { _meta: modernMeta({ 'io.modelcontextprotocol/protocolVersion': 'v999' }) } },
    modernHeaders('tools/list', 'v999'),
  )).body),
  ResourceNotFound: () => withClient(url, 'legacy', (c) => rpcCodeOf(c.readResource('test://nothing-here'))),
  // maxRowsPerScope is 1: a second outstanding cancellation in one session is refused.
  CancellationLimitReached: async () => {
    const session = await initialize(url);
    const headers = { 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' };
    const call = (id: number) => post(url, { jsonrpc: '2.0', id, method: 'tools/call', params: { name: 'sleep', arguments: { ms: 1500 } } }, headers);
    const cancel = (id: number) => post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'test' } }, headers);
    const running = [call(1), call(2)];
    const deadline = Date.now() + 10_000;
    while (!(server.registry.inFlight(1, `session:${session}`) && server.registry.inFlight(2, `session:${session}`))) {
      if (Date.now() > deadline) throw new Error('the calls never started');
      await new Promise((r) => setTimeout(r, 10));
    }
    const first = await cancel(1);
    const second = await cancel(2);
    await Promise.all(running);
    expect(first.status).toBe(202);
    expect(second.status).toBe(429);
    return errorCodeOf(second.body);
  },
  // A question to a client that never answers it (the client declared elicitation, then ignored it).
  ClientAnswerTimeout: async () => {
    const asker = defineTool({ name: 'asker', description: 'asks the client', inputSchema: { type: 'object' }, handler: (_args, ctx) => ctx.request('elicitation/create', { message: 'Name?', requestedSchema: { type: 'object', properties: {} } }) });
    const asking = createServer({ tools: [asker], port: 0, clientRequestTimeoutMs: 200 }, { log: () => {} });
    try {
      const { url: askUrl } = await asking.listen();
      const opened = await post(askUrl, { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } });
      const headers = { 'mcp-session-id': String(opened.headers['mcp-session-id']), 'mcp-protocol-version': '2025-11-25' };
      const streamed = await post(askUrl, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'asker', arguments: {} } }, headers);
      const final = streamed.body.split('\n').filter((l) => l.startsWith('data: ')).map((l) => JSON.parse(l.slice(6)) as { id?: unknown }).find((m) => m.id === 1);
      return errorCodeOf(JSON.stringify(final));
    } finally {
      await asking.close();
    }
  },
};

describe('every SluiceErrorCode has a scenario that produces it', () => {
  it('the table names every code, and only codes', () => {
    expect(Object.keys(kSluiceScenarios).sort()).toEqual([...kSluiceErrorCodes].sort());
  });

  it.each([...kSluiceErrorCodes])('%s', async (code) => {
    const scenario = kSluiceScenarios[code];
    expect(scenario, `no scenario for '${code}': add one to kSluiceScenarios`).toBeTypeOf('function');
    expect(await scenario()).toBe(code);
  });
});

describe('every JSON-RPC code of the wire table has a scenario the server answers with it', () => {
  const names = Object.keys(ErrorCode) as (keyof typeof ErrorCode)[];

  it('the table names every wire code, and only those', () => {
    expect(Object.keys(kWireScenarios).sort()).toEqual([...names].sort());
  });

  it.each(names)('%s', async (name) => {
    const scenario = kWireScenarios[name];
    expect(scenario, `no scenario for ErrorCode.${name}: add one to kWireScenarios`).toBeTypeOf('function');
    expect(await scenario()).toBe(ErrorCode[name]);
  });
});
