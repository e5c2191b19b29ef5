// The tasks bench's tools: echo (the baseline call), `park` (a task that waits for its cancel
// without using CPU) and `wait_cancel_task` (spins until cancelled, then writes the moment it saw
// the cancel, CLOCK_MONOTONIC, to its `record` file). `wait_cancel` is the same as a plain call.
import { defineTool } from '../../dist/src/index.js';
import { spinUntilCancelled as spin } from './sluice-cancel-tools.mjs';

const recordArg = { type: 'object', properties: { record: { type: 'string' } } };

export default [
  defineTool({ name: 'echo', description: 'echo', inputSchema: { type: 'object', properties: { text: { type: 'string' } } }, handler: ({ text }) => String(text) }),
  defineTool({
    name: 'park', description: 'waits for its cancel', taskSupport: 'optional', inputSchema: { type: 'object', properties: {} },
    handler: (_args, ctx) => new Promise((resolve) => ctx.signal.addEventListener('abort', () => resolve('cancelled'), { once: true })),
  }),
  defineTool({ name: 'wait_cancel_task', description: 'spins until cancelled', taskSupport: 'optional', inputSchema: recordArg, handler: spin }),
  defineTool({ name: 'wait_cancel', description: 'spins until cancelled', inputSchema: recordArg, handler: spin }),
];
