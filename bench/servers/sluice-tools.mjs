import { defineTool } from '../../dist/src/index.js';
export default [defineTool({
  name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
  handler: (args) => ({ content: [{ type: 'text', text: args.text }] }),
})];
