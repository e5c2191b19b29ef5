// A pool thread trusts the schemas its serving thread checked (trustSchemasCheckedElsewhere): the
// serving thread imports the tools module first and checks every call's arguments, so a pool thread
// whose tools have no JSON Schema outputSchema never loads Ajv (about 120 ms of CPU per thread).
// Real server, real HTTP worker and pool thread, official SDK v1 client. What must not change with
// it: arguments that break the schema never reach a pool tool; outputSchemas are still enforced in
// the pool (test/server/definitions.test.ts, `pool tools`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client as ClientV1 } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/pool-schema-tools.mjs', import.meta.url);
const kTimeout = { timeout: 10_000 };

let server: TestServer;
let client: ClientV1;

beforeAll(async () => {
  server = await startServer({ tools: kTools, workers: 1, poolThreads: 1 });
  client = new ClientV1({ name: 'pool-schemas-test', version: '1.0.0' });
  await client.connect(new StreamableHTTPClientTransport(new URL(server.address.url)), kTimeout);
});

afterAll(async () => {
  await client?.close();
  await server?.close();
  expect(server?.logs ?? []).toEqual([]);
});

type Result = Awaited<ReturnType<ClientV1['callTool']>>;
const call = (name: string, args: Record<string, unknown> = {}): Promise<Result> => client.callTool({ name, arguments: args }, undefined, kTimeout);
const text = (r: Result): string => (r.content as Array<{ type: string; text?: string }>).map((c) => c.text ?? '').join('');
const structured = (r: Result): Record<string, unknown> => r.structuredContent as Record<string, unknown>;

describe('a pool thread and the schemas its serving thread checked', () => {
  it('the serving thread has Ajv; the pool thread, whose tools have no outputSchema, never loads it', async () => {
    const serving = structured(await call('where'));
    const pool = structured(await call('where_pool'));
    expect(pool.threadId).not.toBe(serving.threadId);
    expect(serving.ajvLoaded).toBe(true);
    expect(pool.ajvLoaded).toBe(false);
  });

  it('arguments that break the schema are refused before the pool; those that match reach the pool tool unchanged', async () => {
    for (const bad of [{ code: 'abc', n: 1 }, { code: 'ABC', n: 0 }, { code: 'ABC' }, { code: 'ABC', n: 1, extra: true }, { code: 'ABC', n: 1.5 }]) {
      const refused = await call('strict_pool', bad);
      expect(refused.isError, JSON.stringify(bad)).toBe(true);
      expect(text(refused)).toMatch(/^Invalid arguments: \$/);
    }
    const ok = structured(await call('strict_pool', { code: 'ABC', n: 2 }));
    expect(ok).toEqual({ got: { code: 'ABC', n: 2 }, threadId: expect.any(Number), ajvLoaded: false });
  });
});
