import { setTimeout as sleep } from 'node:timers/promises';
import { defineTool } from 'sluice';

/** A slow tool: `steps` steps of 200 ms, progress after each; stops at once when cancelled. */
export const slow = defineTool<{ steps: number }>({
  name: 'slow',
  description: 'Works for `steps` × 200 ms, reporting progress.',
  inputSchema: { type: 'object', properties: { steps: { type: 'integer', minimum: 0, maximum: 1000 } }, required: ['steps'] },
  handler: async ({ steps }, ctx) => {
    const started = Date.now();
    ctx.signal.addEventListener('abort', () => console.error(`slow: cancelled after ${Date.now() - started} ms (${ctx.reason})`));
    for (let i = 1; i <= steps; i++) {
      await sleep(200, undefined, { signal: ctx.signal });
      ctx.progress(i, steps);
    }
    return `done: ${steps} steps in ${Date.now() - started} ms`;
  },
});

export default [slow];
