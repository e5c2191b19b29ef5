// Slow-reader soak tools: `echo` (the well-behaved clients' call) and `flood`, which streams 1 kB
// progress notifications and 1 kB log messages as fast as the event loop lets it, for `ms`
// milliseconds or until cancelled. Its client is expected to stop reading (bench/slow-readers.ts).
import { defineTool } from '../../dist/src/index.js';
export default [
  defineTool({
    name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    handler: (args) => ({ content: [{ type: 'text', text: args.text }] }),
  }),
  defineTool({
    name: 'flood', description: 'streams progress and log notifications as fast as it can for ms milliseconds',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer' } } },
    handler: async (args, ctx) => {
      const progressText = 'x'.repeat(1000);
      const logText = 'y'.repeat(1000);
      const until = Date.now() + Math.min(Number(args.ms ?? 1000), 600_000);
      let i = 0;
      while (!ctx.cancelled && Date.now() < until) {
        i++;
        ctx.progress(i, undefined, progressText);
        ctx.log('info', logText);
        // Yield now and then so the worker's other connections (echo, /metrics) still get served.
        if (i % 50 === 0) await new Promise((r) => setImmediate(r));
      }
      return `flooded ${i}`;
    },
  }),
];
