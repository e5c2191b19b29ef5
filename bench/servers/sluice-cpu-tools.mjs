// S3: CPU-bound tools of a given duration, inline (in the HTTP worker) and in the pool, plus a
// `loop_delay` tool that reads (and with reset: true, restarts) the event-loop delay histogram of
// the thread it runs in: with one HTTP worker, that is the worker whose loop the inline tools block.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { defineTool } from '../../dist/src/index.js';
const burn = (us) => { const end = process.hrtime.bigint() + BigInt(us) * 1000n; let x = 0; while (process.hrtime.bigint() < end) x++; return x; };
const schema = { type: 'object', properties: { us: { type: 'integer' } } };
const loop = monitorEventLoopDelay({ resolution: 1 });
loop.enable();
const ms = (ns) => ns / 1e6;
export default [
  defineTool({ name: 'cpu_inline', description: 'burns CPU inline', inputSchema: schema, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
  defineTool({ name: 'cpu_pool', description: 'burns CPU in the pool', inputSchema: schema, pool: true, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
  defineTool({
    name: 'loop_delay', description: 'event-loop delay of this thread since the last reset, in ms',
    inputSchema: { type: 'object', properties: { reset: { type: 'boolean' } } },
    handler: (a) => {
      const stats = { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max), count: loop.count };
      if (a.reset === true) loop.reset();
      return { content: [{ type: 'text', text: JSON.stringify(stats) }] };
    },
  }),
];
