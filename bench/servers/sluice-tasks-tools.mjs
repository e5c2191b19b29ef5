// The tasks bench's tools: echo (the baseline call), `park` (a task that waits for its cancel
// without using CPU) and `wait_cancel_task` (spins until cancelled, then writes the moment it saw
// the cancel, CLOCK_MONOTONIC, to its `record` file). `wait_cancel` is the same as a plain call.
import { appendFileSync } from 'node:fs';
import { defineTool } from '../../dist/src/index.js';

async function spin(args, ctx) {
  const started = Date.now();
  appendFileSync(args.record, 'started\n');
  while (!ctx.cancelled && Date.now() - started < 10_000) {
    for (let i = 0; i < 20000 && !ctx.cancelled; i++);
    if (!ctx.cancelled) await new Promise((r) => setImmediate(r));
  }
  appendFileSync(args.record, `seen ${process.hrtime.bigint()}\n`);
  return 'done';
}

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
