/**
 * Demo tools: `echo`; `sleep` (async, reports progress, honours ctx.signal); `spin` (CPU-bound, runs
 * in the pool, polls ctx.cancelled). `npm start` serves them.
 */
import { threadId } from 'node:worker_threads';
import { defineTool } from '../src/index.js';

export const echo = defineTool({
  name: 'echo',
  description: 'Returns its text argument.',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  handler: (args) => String(args.text),
});

export const sleep = defineTool({
  name: 'sleep',
  description: 'Waits `ms` milliseconds, reporting progress every 100 ms; stops at once when cancelled.',
  inputSchema: { type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: 3_600_000 } }, required: ['ms'] },
  handler: async (args, ctx) => {
    const ms = Number(args.ms);
    const started = Date.now();
    while (Date.now() - started < ms) {
      ctx.throwIfCancelled();
      await new Promise<void>((resolve, reject) => {
        const onAbort = () => { clearTimeout(timer); reject(ctx.signal.reason); };
        const timer = setTimeout(() => { ctx.signal.removeEventListener('abort', onAbort); resolve(); }, Math.min(100, ms - (Date.now() - started)));
        ctx.signal.addEventListener('abort', onAbort, { once: true });
      });
      ctx.progress(Date.now() - started, ms, 'sleeping');
    }
    return { slept: ms, thread: threadId };
  },
});

export const spin = defineTool({
  name: 'spin',
  description: 'Burns CPU for `ms` milliseconds in the pool, checking for cancellation as it goes.',
  inputSchema: { type: 'object', properties: { ms: { type: 'integer', minimum: 0, maximum: 3_600_000 } }, required: ['ms'] },
  pool: true,
  handler: (args, ctx) => {
    const ms = Number(args.ms);
    const started = Date.now();
    let loops = 0;
    while (Date.now() - started < ms) {
      if (ctx.cancelled) return { cancelled: true, after: Date.now() - started, loops, thread: threadId };
      loops++;
    }
    return { spun: ms, loops, thread: threadId };
  },
});

export default [echo, sleep, spin];
