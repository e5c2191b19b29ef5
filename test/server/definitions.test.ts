// "Definitions that cannot break clients", end to end: a real Sluice server with the fixture tools
// (test/fixtures/definition-tools.mjs, each tool inline and in the pool), driven by the official SDK v1
// client. Every case here failed before tool definitions were compiled and results checked:
// the client threw on an array structuredContent or on a result not matching outputSchema,
// `pattern`/`format`/`anyOf`/`$ref` were ignored, and BigInt/cycles/functions gave -32603 or
// `null` inline but other answers in the pool.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { resultText as text, serveWithSdkClient } from '../helpers/sdk-session.js';
import type { SdkSession, ToolResult as Result } from '../helpers/sdk-session.js';
import { until } from '../helpers/wait.js';

const kTools = new URL('../fixtures/definition-tools.mjs', import.meta.url);
const kTimeout = { timeout: 10_000 };

let session: SdkSession;

beforeAll(async () => {
  session = await serveWithSdkClient(kTools, 'definitions-test');
});

/** What the bad prompts and resources below and the failing thenable log: a failure line naming each (nothing else is logged). */
const kBadResults = /thenable_failure|prompt_wrong_role|prompt_nothing|test:\/\/no-body|test:\/\/bad-blob|test:\/\/number\/\{n\}/;

afterAll(async () => {
  const logs = await session?.close() ?? [];
  expect(logs.filter((line) => !kBadResults.test(line))).toEqual([]);
});

const call = (name: string, args: Record<string, unknown> = {}): Promise<Result> => session.call(name, args);

describe('tools/list', () => {
  it('the SDK v1 client lists every tool, with the JSON Schemas a zod tool publishes', async () => {
    const { tools } = await session.client.listTools(undefined, kTimeout);
    expect(tools.length).toBe(64);
    const zod = tools.find((t) => t.name === 'zod_typed');
    expect(zod?.inputSchema).toMatchObject({ type: 'object', properties: { n: { type: 'number' }, word: { type: 'string' } }, required: ['n', 'word'] });
    expect(zod?.outputSchema).toMatchObject({ type: 'object', properties: { fixed: { type: 'string' } } });
  });
});

describe.each([['inline', ''], ['pool', '_pool']])('%s tools', (_where, suffix) => {
  const name = (base: string) => `${base}${suffix}`;

  it('an array return value is JSON text only: no structuredContent the client would reject', async () => {
    const result = await call(name('array_result'));
    expect(result).toEqual({ content: [{ type: 'text', text: '[1,2,3]' }] });
    expect(await call(name('number_result'))).toEqual({ content: [{ type: 'text', text: '42' }] });
    expect(await call(name('object_result'))).toEqual({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } });
    // A handler with no return (an action with nothing to report): no content, not the text "null".
    expect(await call(name('nothing_result'))).toEqual({ content: [] });
  });

  it('an explicit non-object structuredContent is a tool error naming the tool', async () => {
    const result = await call(name('array_structured'));
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(`tool ${name('array_structured')}: structuredContent must be a JSON object, got an array`);
  });

  it('an object with toJSON is judged as sent: a Date is JSON text, never a structuredContent the client would reject', async () => {
    expect(await call(name('date_result'))).toEqual({ content: [{ type: 'text', text: '"1970-01-01T00:00:00.000Z"' }] });
    const given = await call(name('date_structured'));
    expect(given.isError).toBe(true);
    expect(text(given)).toBe(`tool ${name('date_structured')}: structuredContent must be a JSON object, got a string (what its toJSON returns)`);
    const checked = await call(name('output_date'));
    expect(checked.isError).toBe(true);
    expect(text(checked)).toBe(`tool ${name('output_date')}: it has an outputSchema, but the handler returned an object whose toJSON returns a string`);
    // toJSON's object is what the outputSchema checks and the client gets, not the instance's fields.
    expect(await call(name('output_to_json'))).toEqual({ content: [{ type: 'text', text: '{"sum":3}' }], structuredContent: { sum: 3 } });
  });

  it('a thenable that is not a Promise is awaited: its value is the result, its rejection the tool\'s failure', async () => {
    expect(await call(name('thenable_result'))).toEqual({ content: [{ type: 'text', text: '{"a":1}' }], structuredContent: { a: 1 } });
    const failed = await call(name('thenable_failure'));
    expect(failed.isError).toBe(true);
    expect(text(failed)).toBe('the query failed');
  });

  it.each([
    ['bigint_result', 'a BigInt at $.n'],
    ['circular_result', 'a circular reference at $.next.back'],
    ['function_result', 'a function at $'],
    ['method_result', 'a function at $.describe'],
    ['map_result', 'a Map at $.totals (JSON would send it as {}: Object.fromEntries(map) sends its entries)'],
    ['set_result', 'a Set at $ (JSON would send it as {}: [...set] sends its values)'],
    ['error_result', 'an Error at $[1] (JSON would send it as {}: throw it to report a failure, or send its message)'],
  ])('%s: a result that is not JSON is the same isError content, naming the tool', async (base, where) => {
    const result = await call(name(base));
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(`tool ${name(base)}: the result cannot be sent as JSON: ${where}`);
  });

  it.each([
    ['text_not_string', '$.content[0].text: must be a string, got a number'],
    ['block_not_object', '$.content[0]: a content block must be an object, got a string'],
    ['image_without_mime', '$.content[0].mimeType: must be a string, got nothing'],
    ['image_not_base64', '$.content[0].data: must be base64 (A–Z, a–z, 0–9, + and /, padded with =), got a string that is not'],
    ['resource_without_body', '$.content[0].resource: resource contents need a text or a blob string'],
    ['is_error_not_boolean', '$.isError: must be a boolean, got a string'],
    ['meta_not_object', '$._meta: must be an object, got a string'],
  ])('%s: a result of the wrong shape is isError content saying where, not a schema error in the client', async (base, where) => {
    const result = await call(name(base));
    expect(result.isError).toBe(true);
    expect(text(result)).toBe(`tool ${name(base)}: the result is not a valid tools/call result: ${where}`);
  });

  it('outputSchema: a matching result passes; a mismatch or a missing structuredContent is a clear tool error, not a client failure', async () => {
    expect(await call(name('output_ok'))).toMatchObject({ structuredContent: { sum: 3 } });
    const mismatch = await call(name('output_mismatch'));
    expect(mismatch.isError).toBe(true);
    expect(text(mismatch)).toBe(`tool ${name('output_mismatch')}: the result does not match its outputSchema: $.sum: must be number`);
    const missing = await call(name('output_missing'));
    expect(missing.isError).toBe(true);
    expect(text(missing)).toBe(`tool ${name('output_missing')}: it has an outputSchema, but the handler returned a string`);
    // An error result need not match (the SDK client does not check it either).
    expect(await call(name('output_error_result'))).toMatchObject({ isError: true, content: [{ text: 'failed' }] });
  });

  it.each([
    [{ code: 'abc' }, '$.code: must match pattern "^[A-Z]{3}$"'],
    [{ email: 'not-an-email' }, '$.email: must match format "email"'],
    [{ id: 'not-a-uuid' }, '$.id: must be integer'],
    [{ extra: 1 }, '$.extra: not allowed'],
  ])('arguments %j are refused by the compiled schema (local ref, pattern, format, anyOf)', async (args, problem) => {
    const result = await call(name('strict_args'), args);
    expect(result.isError).toBe(true);
    expect(text(result)).toContain(`Invalid arguments: ${problem}`);
  });

  it('arguments that match reach the handler', async () => {
    const args = { code: 'ABC', email: 'a@example.com', id: '123e4567-e89b-12d3-a456-426614174000' };
    expect(await call(name('strict_args'), args)).toMatchObject({ structuredContent: { got: args } });
  });

  it('zod: arguments are parsed (transforms applied) and the output checked', async () => {
    expect(await call(name('zod_typed'), { n: 2, word: 'hi' })).toMatchObject({ structuredContent: { fixed: '2.00', word: 'HI' } });
    const bad = await call(name('zod_typed'), { n: 'two', word: 'hi' });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toMatch(/^Invalid arguments: \$\.n: .*number/);
  });

  it('zod with async refinements: checked before the handler runs', async () => {
    expect(text(await call(name('zod_async'), { n: 3 }))).toBe('n=3');
    const bad = await call(name('zod_async'), { n: -1 });
    expect(bad.isError).toBe(true);
    expect(text(bad)).toBe('Invalid arguments: $.n: must be positive');
  });
});

describe('resources with binary contents', () => {
  it.each(['u16', 'dataview', 'arraybuffer', 'buffer'])('a read returning %s: its bytes are the blob', async (view) => {
    const { contents } = await session.client.readResource({ uri: `test://bytes/${view}` }, kTimeout);
    expect(contents).toEqual([{ uri: `test://bytes/${view}`, blob: Buffer.from('hi').toString('base64') }]);
  });

  it('base64 with MIME line breaks is read as the client reads it (atob): it passes', async () => {
    const { contents } = await session.client.readResource({ uri: 'test://wrapped-blob' }, kTimeout);
    expect(contents).toEqual([{ uri: 'test://wrapped-blob', blob: 'aGVs\nbG8=\n' }]);
    expect(Buffer.from((contents[0] as { blob: string }).blob, 'base64').toString()).toBe('hello');
  });
});

describe('prompts, completions and resources whose get, complete or read returned something else', () => {
  // The client would have refused the answer with a schema error; now the server refuses it, logs
  // what is wrong and where (naming the definition, not the URI the client sent), and the client
  // gets an internal error.
  it.each([
    ['prompts/get prompt_wrong_role', () => session.client.getPrompt({ name: 'prompt_wrong_role' }, kTimeout), "prompt prompt_wrong_role: get returned something that is not a prompts/get result: $.messages[0].role: must be 'user' or 'assistant', got \"system\""],
    ['prompts/get prompt_nothing', () => session.client.getPrompt({ name: 'prompt_nothing' }, kTimeout), 'prompt prompt_nothing: get returned something that is not a prompts/get result: $: must be an object or a string, got nothing'],
    ['completion/complete of prompt_wrong_role', () => session.client.complete({ ref: { type: 'ref/prompt', name: 'prompt_wrong_role' }, argument: { name: 'a', value: '' } }, kTimeout), 'prompt prompt_wrong_role: complete.a returned a string, not an array of strings'],
    ['resources/read test://no-body', () => session.client.readResource({ uri: 'test://no-body' }, kTimeout), 'resource test://no-body: the read returned something that is not resource contents: $: resource contents need a text or a blob string'],
    ['resources/read test://bad-blob', () => session.client.readResource({ uri: 'test://bad-blob' }, kTimeout), 'resource test://bad-blob: the read returned something that is not resource contents: $.blob: must be base64 (A–Z, a–z, 0–9, + and /, padded with =), got a string that is not'],
    ['resources/read test://number/7', () => session.client.readResource({ uri: 'test://number/7' }, kTimeout), 'template test://number/{n}: the read returned something that is not resource contents: $[1]: resource contents must be an object, got a number'],
  ])('%s: an internal error for the client, the problem in the log', async (_what, request, logged) => {
    await expect(request()).rejects.toMatchObject({ code: -32603, message: expect.stringContaining('Internal error') });
    await until(() => session.server.logs.some((line) => line.includes(logged)), 5_000, `a log line: ${logged}`);
  });
});
