/**
 * The cancel event on a request span does not depend on who hears of the cancel first. A handler
 * polling `ctx.cancelled` can see the flag and return before the thread's cancel watcher wakes (its
 * `Atomics.waitAsync` settles in a later task); the span must still say the cancel was received,
 * before the tool observed it. A CI run lost that event this way in the two-node trace test, where
 * the cancel came over the cluster bus while the `block` tool polled every 20 ms.
 *
 * In-process, so the order is exact: the cancel is made on this thread, and the gate that lets the
 * handler read its flag opens in the same turn, so the handler returns in microtasks, before the
 * watcher's task runs.
 */
import * as api from '@opentelemetry/api';
import { BasicTracerProvider, InMemorySpanExporter, SimpleSpanProcessor } from '@opentelemetry/sdk-trace-base';
import { describe, expect, it } from 'vitest';
import { ServerTracer } from '../../src/telemetry/tracing/server.js';
import { defineTool } from '../../src/tools/define.js';
import { until } from '../helpers/wait.js';
import { FakeReply, info, makeEngine } from '../protocol/helpers.js';

const opened: Array<() => void> = [];
const noArgs = { type: 'object', properties: {} };
const tools = [
  // Waits for the test's gate, then reads its flag once: a tool that polls.
  defineTool({
    name: 'poll', description: 'Reads ctx.cancelled once its gate opens.', inputSchema: noArgs,
    handler: async (_a, ctx) => {
      await new Promise<void>((r) => opened.push(r));
      return ctx.cancelled ? 'saw the cancel' : 'ran to the end';
    },
  }),
];

/** Starts the `poll` tool as `id` on an engine with spans, and lets its first turn end (the run is armed). */
async function startPoll(id: string) {
  const exporter = new InMemorySpanExporter();
  const provider = new BasicTracerProvider({ spanProcessors: [new SimpleSpanProcessor(exporter)] });
  const { engine, config } = makeEngine({ tools, tracer: new ServerTracer(api, provider.getTracer('sluice'), 'tcp') });
  const reply = new FakeReply();
  const scope = info('legacy');
  opened.length = 0;
  engine.handleRequest(id, 'tools/call', { name: 'poll' }, scope, reply);
  await new Promise((r) => setImmediate(r)); // after the engine's own: the turn's arming has run
  return { exporter, config, reply, scope };
}

describe('the cancel event on a request span', () => {
  it('is recorded, before the observed event, when the handler sees its flag before the watcher wakes', async () => {
    const { exporter, config, reply, scope } = await startPoll('p1'); // armed: on the watcher
    expect(opened).toHaveLength(1);
    expect(config.registry.watching).toBe(1);

    expect(config.registry.cancel('p1', 'polled first', scope.scope)).toMatchObject({ ok: true });
    opened[0]!(); // same turn: the handler reads the flag in microtasks, before the watcher's wake
    await Promise.resolve();
    await Promise.resolve();
    await Promise.resolve();
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']); // ended by the handler, not the watcher
    const [span] = exporter.getFinishedSpans();
    expect(span?.name).toBe('tools/call poll');
    const names = span!.events.map((e) => e.name);
    expect(names).toEqual(['mcp.cancel.received', 'mcp.cancel.observed']);
    expect(span!.events[0]!.attributes).toMatchObject({ 'mcp.cancel.reason': 'polled first', 'mcp.cancel.scope': scope.scope });
    expect(span!.attributes['error.type']).toBe('cancelled');

    await until(() => config.registry.watching === 0); // the watcher's wake comes later and adds nothing
    expect(exporter.getFinishedSpans()).toHaveLength(1);
    expect(span!.events.map((e) => e.name)).toEqual(['mcp.cancel.received', 'mcp.cancel.observed']);
  });

  it('is recorded once when the watcher hears the cancel first and the handler then sees its flag', async () => {
    const { exporter, config, reply, scope } = await startPoll('p2');
    config.registry.cancel('p2', 'watcher first', scope.scope);
    await until(() => reply.calls.length === 2); // the watcher wakes: the reply is told, the handler still waits
    expect(reply.calls).toEqual(['started', 'cancelled']);
    opened[0]!();
    await until(() => reply.calls.length === 3);
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']);
    const [span] = exporter.getFinishedSpans();
    expect(span!.events.map((e) => e.name)).toEqual(['mcp.cancel.received', 'mcp.cancel.observed']);
    expect(span!.events[0]!.attributes).toMatchObject({ 'mcp.cancel.reason': 'watcher first' });
  });
});
