// S4: a tool that spins until cancelled and writes the moment it saw the cancel (CLOCK_MONOTONIC,
// the same clock in every process) to the file its `record` argument names.
import { appendFileSync } from 'node:fs';
import { defineTool } from '../../dist/src/index.js';

/** The handler: spins (yielding now and then) until cancelled, then records when it saw it. */
export async function spinUntilCancelled(args, ctx) {
  const started = Date.now();
  appendFileSync(args.record, 'started\n');
  while (!ctx.cancelled && Date.now() - started < 10_000) {
    // Poll tightly for a while, yielding to the event loop now and then.
    for (let i = 0; i < 20000 && !ctx.cancelled; i++);
    if (!ctx.cancelled) await new Promise((r) => setImmediate(r));
  }
  appendFileSync(args.record, `seen ${process.hrtime.bigint()}\n`);
  return 'done';
}

export default [defineTool({
  name: 'wait_cancel', description: 'spins until cancelled', inputSchema: { type: 'object', properties: { record: { type: 'string' } } },
  handler: spinUntilCancelled,
})];
