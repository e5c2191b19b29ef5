import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from 'sluice';

/** A plain, synchronous tool: its return value becomes the call's text result. */
export const greet = defineTool<{ name: string }>({
  name: 'greet',
  description: 'Says hello.',
  inputSchema: { type: 'object', properties: { name: { type: 'string' } }, required: ['name'] },
  handler: ({ name }) => `Hello, ${name}!`,
});

/** An async tool that reports progress and stops as soon as the call is cancelled. */
export const countdown = defineTool<{ from: number }>({
  name: 'countdown',
  description: 'Counts down from `from` to zero, one step a second, reporting progress.',
  inputSchema: { type: 'object', properties: { from: { type: 'integer', minimum: 1, maximum: 60 } }, required: ['from'] },
  handler: async ({ from }, ctx) => {
    // ctx.signal fires when the client cancels: the pending sleep rejects and the tool stops.
    ctx.signal.addEventListener('abort', () => console.error(`countdown: cancelled (${ctx.reason})`));
    for (let left = from; left > 0; left--) {
      ctx.progress(from - left, from, `${left} to go`);   // sent only if the caller asked for progress
      await sleep(1000, undefined, { signal: ctx.signal });
    }
    return { counted: from, message: 'Liftoff!' };        // structuredContent plus its JSON text
  },
});

// The server serves the default export.
export default [greet, countdown];
