/**
 * The official SDK v1 client's experimental tasks API (2025-11-25) against Sluice: callToolStream
 * (task created, status, result), getTask, cancelTask, and input the task needs answered through the
 * client's own elicitation handler on the tasks/result stream.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '@modelcontextprotocol/sdk/client/index.js';
import { StreamableHTTPClientTransport } from '@modelcontextprotocol/sdk/client/streamableHttp.js';
import { ElicitRequestSchema } from '@modelcontextprotocol/sdk/types.js';
import { recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-tools.mjs', import.meta.url);

async function connect(url: string): Promise<Client> {
  const client = new Client({ name: 'tasks-v1', version: '1.0.0' }, { capabilities: { elicitation: { form: {} } } });
  client.setRequestHandler(ElicitRequestSchema, async () => ({ action: 'accept', content: { name: 'Lin' } }));
  await client.connect(new StreamableHTTPClientTransport(new URL(url)));
  return client;
}

describe('official SDK v1 client, experimental tasks', () => {
  let s: TestServer;
  beforeAll(async () => { s = await startServer({ tools: kTools }); });
  afterAll(async () => { await s?.close(); });

  it('sees the tasks capability and streams a task from creation to its result', async () => {
    const client = await connect(s.address.url);
    try {
      expect(client.getServerCapabilities()?.tasks).toBeDefined();
      await client.listTools(); // learns which tools are task tools
      const kinds: string[] = [];
      let result: unknown;
      for await (const message of client.experimental.tasks.callToolStream({ name: 'sleepy', arguments: { ms: 200 } }, undefined, { task: { ttl: 60_000 } })) {
        kinds.push(message.type);
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      expect(kinds[0]).toBe('taskCreated');
      expect(kinds[kinds.length - 1]).toBe('result');
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'slept 200' }] });
    } finally {
      await client.close();
    }
  });

  it('answers the task\'s elicitation through its own handler', async () => {
    const client = await connect(s.address.url);
    try {
      let result: unknown;
      for await (const message of client.experimental.tasks.callToolStream({ name: 'ask', arguments: {} }, undefined, { task: {} })) {
        if (message.type === 'result') result = message.result;
        if (message.type === 'error') throw message.error;
      }
      expect(result).toMatchObject({ content: [{ type: 'text', text: 'Hello, Lin' }] });
    } finally {
      await client.close();
    }
  });

  it('getTask and cancelTask: the tool sees the cancel', async () => {
    const client = await connect(s.address.url);
    try {
      const record = recordPath();
      let taskId: string | undefined;
      const stream = client.experimental.tasks.callToolStream({ name: 'sleepy', arguments: { ms: 30_000, record } }, undefined, { task: {} });
      const first = await stream.next();
      if (!first.done && first.value.type === 'taskCreated') taskId = first.value.task.taskId;
      expect(taskId).toBeDefined();
      expect((await client.experimental.tasks.getTask(taskId!)).status).toBe('working');
      const cancelled = await client.experimental.tasks.cancelTask(taskId!);
      expect(cancelled.status).toBe('cancelled');
      await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 5000, 'the tool to see the cancel');
      await stream.return(undefined);
    } finally {
      await client.close();
    }
  });
});
