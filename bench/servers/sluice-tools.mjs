import { defineTool } from '../../dist/src/index.js';
export default [defineTool({
  name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  handler: (args) => ({ content: [{ type: 'text', text: args.text }] }),
}), defineTool({
  // The same echo from an async handler (bench/async-ab.ts: what a promise costs over a plain return).
  name: 'echo_async', description: 'echo, async', inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  handler: async (args) => ({ content: [{ type: 'text', text: args.text }] }),
})];
