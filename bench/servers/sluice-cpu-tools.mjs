// S3: CPU-bound tools of a given duration, inline (in the HTTP worker) and in the pool, plus a
// `loop_delay` tool that turns on (start: true) or reads and turns off (start: false) an event-loop
// delay histogram in the thread it runs in: with one HTTP worker, the worker whose loop the inline
// tools block. It only runs while asked to, so its 1 ms timer cannot disturb the other runs.
import { monitorEventLoopDelay } from 'node:perf_hooks';
import { defineTool } from '../../dist/src/index.js';
const burn = (us) => { const end = process.hrtime.bigint() + BigInt(us) * 1000n; let x = 0; while (process.hrtime.bigint() < end) x++; return x; };
const schema = { type: 'object', properties: { us: { type: 'integer' } } };
let loop;
const ms = (ns) => ns / 1e6;
export default [
  defineTool({ name: 'cpu_inline', description: 'burns CPU inline', inputSchema: schema, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
  defineTool({ name: 'cpu_pool', description: 'burns CPU in the pool', inputSchema: schema, pool: true, handler: (a) => ({ content: [{ type: 'text', text: String(burn(a.us)) }] }) }),
  defineTool({
    name: 'loop_delay', description: 'event-loop delay of this thread between start and stop, in ms',
    inputSchema: { type: 'object', properties: { start: { type: 'boolean' } } },
    handler: (a) => {
      if (a.start === true) {
        loop?.disable();
        loop = monitorEventLoopDelay({ resolution: 1 });
        loop.enable();
        return { content: [{ type: 'text', text: '{}' }] };
      }
      if (loop === undefined) throw new Error('loop_delay: not started');
      loop.disable();
      const stats = { p50: ms(loop.percentile(50)), p99: ms(loop.percentile(99)), max: ms(loop.max), count: loop.count };
      loop = undefined;
      return { content: [{ type: 'text', text: JSON.stringify(stats) }] };
    },
  }),
];
