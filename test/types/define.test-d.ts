// Type-level tests: compiled (never run) by test/types/types.test.ts with `tsc -p test/types`.
// A line marked @ts-expect-error must fail to compile; every other line must compile under strict.
import * as z from 'zod';
import { defineTool } from '../../src/index.js';
import type { StandardSchemaV1, Tool } from '../../src/index.js';
import { Client } from '../../src/client/index.js';
import type { CallToolResult, ListToolsResult } from '../../src/client/index.js';

type Equal<A, B> = (<T>() => T extends A ? 1 : 2) extends (<T>() => T extends B ? 1 : 2) ? true : false;
function assertType<T extends true>(): T | undefined { return undefined; }

// zod 4: args typed from the schema's output.
export const typed: Tool = defineTool({
  name: 'n', description: 'n', inputSchema: z.object({ n: z.number() }),
  handler: (args) => args.n.toFixed(),
});

defineTool({
  name: 'n2', description: 'n2', inputSchema: z.object({ n: z.number(), tag: z.string().optional(), when: z.string().transform((s) => s.length) }),
  handler: (args) => {
    assertType<Equal<typeof args, { n: number; tag?: string | undefined; when: number }>>();
    // @ts-expect-error n is a number, not a string
    args.n.toUpperCase();
    return 'ok';
  },
});

// outputSchema (zod): the handler returns the schema's input type, or a full result.
defineTool({
  name: 'o', description: 'o', inputSchema: z.object({}), outputSchema: z.object({ sum: z.number() }),
  handler: () => ({ sum: 3 }),
});
defineTool({
  name: 'o2', description: 'o2', inputSchema: z.object({}), outputSchema: z.object({ sum: z.number() }),
  handler: () => ({ content: [{ type: 'text', text: '3' }], structuredContent: { sum: 3 } }),
});
defineTool({
  name: 'o3', description: 'o3', inputSchema: z.object({}), outputSchema: z.object({ sum: z.number() }),
  // @ts-expect-error sum must be a number
  handler: () => ({ sum: 'three' }),
});

// A thenable that is not a Promise (a query builder) is a valid return, checked against the outputSchema too.
const query = { then: (ok: (rows: { sum: number }) => void) => ok({ sum: 3 }) } as PromiseLike<{ sum: number }>;
defineTool({
  name: 't', description: 't', inputSchema: z.object({}), outputSchema: z.object({ sum: z.number() }),
  handler: () => query,
});
defineTool({
  name: 't2', description: 't2', inputSchema: z.object({}), outputSchema: z.object({ sum: z.number() }),
  // @ts-expect-error sum must be a number, thenable or not
  handler: () => ({ then: (ok: (rows: { sum: string }) => void) => ok({ sum: '3' }) }) as PromiseLike<{ sum: string }>,
});

// Any Standard Schema (here a hand-made one), with the JSON Schema given alongside.
const point: StandardSchemaV1<{ x: number }, { x: number }> = {
  '~standard': { version: 1, vendor: 'hand', validate: (v) => ({ value: v as { x: number } }) },
};
defineTool({
  name: 's', description: 's', inputSchema: point, jsonSchema: { input: { type: 'object', properties: { x: { type: 'number' } } } },
  handler: (args) => args.x.toFixed(),
});

// JSON Schema stays supported: args are a plain record.
defineTool({
  name: 'j', description: 'j', inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler: (args) => {
    assertType<Equal<typeof args, Record<string, unknown>>>();
    return String(args.text);
  },
});
const noArgs = { type: 'object', properties: {} } as const;
defineTool({ name: 'c', description: 'c', inputSchema: noArgs, handler: () => [1, 2] });
// A handler with no return value (an action with nothing to report), sync or async.
defineTool({ name: 'v', description: 'v', inputSchema: noArgs, handler: () => {} });
defineTool({ name: 'va', description: 'va', inputSchema: noArgs, handler: async () => { await Promise.resolve(); } });
// A handler may still annotate its arguments by hand (as tools written before typed schemas do).
defineTool({ name: 'h', description: 'h', inputSchema: noArgs, handler: (a: { us?: number }) => String(a.us) });

// The client's results are typed.
export async function client(c: Client): Promise<string[]> {
  const names: string[] = (await c.listTools()).tools.map((t) => t.name);
  const list: ListToolsResult = await c.listTools();
  const schemaType: 'object' = list.tools[0]!.inputSchema.type;
  const result: CallToolResult = await c.callTool('n', { n: 1 });
  const first = result.content[0];
  if (first?.type === 'text') names.push(first.text);
  const structured: Record<string, unknown> | undefined = result.structuredContent;
  const isError: boolean | undefined = result.isError;
  const contents = (await c.readResource('x://y')).contents.map((x) => x.uri);
  const prompts = (await c.listPrompts()).prompts.map((p) => p.arguments?.map((a) => a.name));
  const messages = (await c.getPrompt('p')).messages.map((m) => m.role);
  const templates = (await c.listResourceTemplates()).resourceTemplates.map((t) => t.uriTemplate);
  const resources = (await c.listResources()).resources.map((r) => r.name);
  const values: string[] = (await c.complete({ type: 'ref/prompt', name: 'p' }, { name: 'a', value: '' })).completion.values;
  return [...names, schemaType, String(structured), String(isError), ...contents, String(prompts), ...messages, ...templates, ...resources, ...values];
}

// JSON Schema with the arguments typed by hand (the form before Standard Schema support) still compiles.
defineTool<{ name: string; times?: number }>({
  name: 'typed_by_hand',
  description: 'JSON Schema, typed by the type parameter.',
  inputSchema: { type: 'object', properties: { name: { type: 'string' }, times: { type: 'integer' } }, required: ['name'] },
  handler: ({ name, times }) => name.repeat(times ?? 1),
});
// @ts-expect-error: the hand-given type is enforced in the handler
defineTool<{ name: string }>({ name: 'wrong', description: 'w', inputSchema: { type: 'object' }, handler: ({ name }) => name.toFixed() });
