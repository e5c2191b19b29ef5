// A scripted 2025-11-25 stdio server for one task tool, `ask`: tasks/result sends an elicitation
// (with related-task _meta) and answers with the text the client gave. Argument: a log file of what it received.
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const log = process.argv[2];
const send = (m) => process.stdout.write(`${JSON.stringify({ jsonrpc: '2.0', ...m })}\n`);
const waiting = new Map();
let task;
createInterface({ input: process.stdin }).on('line', (line) => {
  const m = JSON.parse(line);
  appendFileSync(log, `${line}\n`);
  if (m.method === undefined) return waiting.get(m.id)?.(m);
  if (m.id === undefined) return;
  const now = new Date().toISOString();
  switch (m.method) {
    case 'initialize':
      return send({ id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tasks: { requests: { tools: { call: {} } } } }, serverInfo: { name: 'stdio-tasks', version: '1' } } });
    case 'tools/call':
      task = { taskId: 'stdio-task-1', status: 'working', createdAt: now, lastUpdatedAt: now, ttl: null, pollInterval: 20 };
      return send({ id: m.id, result: { task } });
    case 'tasks/get':
      return send({ id: m.id, result: task });
    case 'tasks/result': {
      const meta = { 'io.modelcontextprotocol/related-task': { taskId: m.params.taskId } };
      // An unrelated server request first: declined by the client (no task of its own).
      send({ id: 'other', method: 'elicitation/create', params: { message: 'not for a task' } });
      send({ id: 'e1', method: 'elicitation/create', params: { message: 'Name?', requestedSchema: { type: 'object' }, _meta: meta } });
      waiting.set('e1', (reply) => {
        task = { ...task, status: 'completed', lastUpdatedAt: new Date().toISOString() };
        send({ id: m.id, result: { content: [{ type: 'text', text: `hello ${reply.result?.content?.name}` }], _meta: meta } });
      });
      return;
    }
    default:
      return send({ id: m.id, error: { code: -32601, message: 'Method not found' } });
  }
});
