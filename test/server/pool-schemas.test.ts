// A pool thread trusts the schemas its serving thread checked (trustSchemasCheckedElsewhere): the
// serving thread imports the tools module first and checks every call's arguments, so a pool thread
// whose tools have no JSON Schema outputSchema never loads Ajv (about 120 ms of CPU per thread).
// Real server, real HTTP worker and pool thread, official SDK v1 client. What must not change with
// it: arguments that break the schema never reach a pool tool; outputSchemas are still enforced in
// the pool (test/server/definitions.test.ts, `pool tools`).
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultText as text, serveWithSdkClient } from '../helpers/sdk-session.js';
import type { SdkSession, ToolResult } from '../helpers/sdk-session.js';

const kTools = new URL('../fixtures/pool-schema-tools.mjs', import.meta.url);

let session: SdkSession;

beforeAll(async () => {
  session = await serveWithSdkClient(kTools, 'pool-schemas-test');
});

afterAll(async () => {
  expect(await session?.close() ?? []).toEqual([]);
});

const call = (name: string, args: Record<string, unknown> = {}): Promise<ToolResult> => session.call(name, args);
const structured = (r: ToolResult): Record<string, unknown> => r.structuredContent as Record<string, unknown>;

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
