/**
 * Tasks over stdio (one thread, the store in-process): the 2025-11-25 dialect with input asked on
 * the tasks/result exchange and answered on stdin, and the 2026-07-28 extension polled to its end.
 */
import { describe, expect, it } from 'vitest';
import { stdioServer } from '../helpers/stdio.js';
import { until } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);
const kExt = 'io.modelcontextprotocol/tasks';

describe('tasks over stdio', () => {
  it('2025-11-25: a task asks for input on the tasks/result exchange; the answer on stdin resumes it', async () => {
    const s = stdioServer({ tools: kTools });
    try {
      s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } });
      await until(() => s.lines.some((l) => l.id === 1));
      expect(((s.lines.find((l) => l.id === 1)!.result as Record<string, unknown>).capabilities as Record<string, unknown>).tasks).toBeDefined();
      s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'ask', arguments: {}, task: {} } });
      await until(() => s.lines.some((l) => l.id === 2));
      const taskId = String(((s.lines.find((l) => l.id === 2)!.result as Record<string, unknown>).task as Record<string, unknown>).taskId);
      s.send({ jsonrpc: '2.0', id: 3, method: 'tasks/result', params: { taskId } });
      await until(() => s.lines.some((l) => l.method === 'elicitation/create'));
      const asked = s.lines.find((l) => l.method === 'elicitation/create')!;
      expect(((asked.params as Record<string, unknown>)._meta as Record<string, unknown>)['io.modelcontextprotocol/related-task']).toEqual({ taskId });
      s.send({ jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'Stdio' } } });
      await until(() => s.lines.some((l) => l.id === 3));
      expect(s.lines.find((l) => l.id === 3)!.result).toMatchObject({ content: [{ type: 'text', text: 'Hello, Stdio' }] });
    } finally {
      s.input.end();
      await s.done;
    }
  });

  it('2026-07-28: a task is created, polled with tasks/get and completes', async () => {
    const s = stdioServer({ tools: kTools });
    const meta = { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': { extensions: { [kExt]: {} } } };
    try {
      s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'sleepy', arguments: { ms: 100 }, _meta: meta } });
      await until(() => s.lines.some((l) => l.id === 1));
      const created = s.lines.find((l) => l.id === 1)!.result as Record<string, unknown>;
      expect(created.resultType).toBe('task');
      let status = '';
      for (let id = 10; status !== 'completed' && id < 60; id++) {
        s.send({ jsonrpc: '2.0', id, method: 'tasks/get', params: { taskId: created.taskId, _meta: meta } });
        await until(() => s.lines.some((l) => l.id === id));
        const got = s.lines.find((l) => l.id === id)!.result as Record<string, unknown>;
        status = String(got.status);
        if (status === 'completed') expect(got.result).toMatchObject({ content: [{ type: 'text', text: 'slept 100' }] });
        else await new Promise((r) => setTimeout(r, 60));
      }
      expect(status).toBe('completed');
    } finally {
      s.input.end();
      await s.done;
    }
  });
});
