// Slow-reader soak tools: `echo` (the well-behaved clients' call) and `flood`, a chatty tool that
// streams 1 kB progress notifications and 1 kB log messages for `ms` milliseconds or until
// cancelled (bench/slow-readers.ts). Two modes:
// - 'burst' (the default): a realistic chatty tool. A burst of 10 progress + 10 log messages, then
//   a 1 ms timer wait, polling ctx.cancelled between bursts. It spends little CPU of its own, so
//   what a slow reader costs the server is not hidden under the tool's own cost.
// - 'tight': the old CPU burner. One progress + one log per iteration as fast as the event loop
//   lets it, yielding with setImmediate every 50 iterations. It keeps the HTTP worker busy by itself.
import { defineTool } from '../../dist/src/index.js';

const progressText = 'x'.repeat(1000);
const logText = 'y'.repeat(1000);

export default [
  defineTool({
    name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } },
    handler: (args) => ({ content: [{ type: 'text', text: args.text }] }),
  }),
  defineTool({
    name: 'flood', description: 'streams progress and log notifications for ms milliseconds (mode burst: 10 + 10 per 1 ms; tight: as fast as it can)',
    inputSchema: { type: 'object', properties: { ms: { type: 'integer' }, mode: { type: 'string', enum: ['burst', 'tight'] } } },
    handler: async (args, ctx) => {
      const until = Date.now() + Math.min(Number(args.ms ?? 1000), 600_000);
      let i = 0;
      if (args.mode === 'tight') {
        while (!ctx.cancelled && Date.now() < until) {
          i++;
          ctx.progress(i, undefined, progressText);
          ctx.log('info', logText);
          // Yield now and then so the worker's other connections (echo, /metrics) still get served.
          if (i % 50 === 0) await new Promise((r) => setImmediate(r));
        }
        return `flooded ${i} (tight)`;
      }
      while (!ctx.cancelled && Date.now() < until) {
        for (let k = 0; k < 10; k++) {
          i++;
          ctx.progress(i, undefined, progressText);
          ctx.log('info', logText);
        }
        await new Promise((r) => setTimeout(r, 1));
      }
      return `flooded ${i} (burst)`;
    },
  }),
];
