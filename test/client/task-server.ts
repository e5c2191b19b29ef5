/**
 * A scripted MCP server on 127.0.0.1 that speaks both task dialects as the spec writes them
 * (reference §1.1–1.2), to pin the client to the wire rather than to Sluice's server. Tools:
 * - `sync`: answers at once (no task, whatever the client asks);
 * - `ask`: a task that goes working → input_required (one elicitation) → working → completed,
 *   its text naming the answer;
 * - `fail`: a task that fails with a JSON-RPC error (code -32050, data { why });
 * - `work`: a task that completes after a few steps (text `worked`);
 * - `slow`: a task that works until cancelled.
 * Every task advances one step per tasks/get, so tests are deterministic. Everything received is logged.
 */
import { createServer } from 'node:http';
import type { IncomingHttpHeaders, IncomingMessage, Server, ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

type Json = Record<string, unknown>;
type Status = 'working' | 'input_required' | 'completed' | 'failed' | 'cancelled';

export interface Received {
  method: string | undefined;
  params: Json | undefined;
  headers: IncomingHttpHeaders;
  /** For a response the client posted back (legacy): its id and body. */
  response?: Json;
}

interface ScriptedTask {
  taskId: string;
  tool: string;
  status: Status;
  statusMessage?: string;
  createdAt: string;
  lastUpdatedAt: string;
  steps: number;
  answer?: Json;
  /** The step tasks/update answered at. */
  answeredAt?: number;
  result?: Json;
  error?: { code: number; message: string; data?: unknown };
  /** Legacy: tasks/result requests waiting for the end. */
  waiters: ((task: ScriptedTask) => void)[];
}

export interface ScriptedServer {
  url: string;
  received: Received[];
  tasks: Map<string, ScriptedTask>;
  close(): Promise<void>;
}

const kTasksExt = 'io.modelcontextprotocol/tasks';
const kRelated = 'io.modelcontextprotocol/related-task';

export async function startScriptedServer(pollMs = 20): Promise<ScriptedServer> {
  const received: Received[] = [];
  const tasks = new Map<string, ScriptedTask>();
  let next = 0;
  /** Legacy: server requests waiting for the client's response, by id. */
  const pendingAnswers = new Map<string, (result: Json) => void>();

  const now = () => new Date().toISOString();
  const set = (task: ScriptedTask, status: Status, statusMessage?: string) => {
    if (task.status === 'cancelled' || task.status === 'completed' || task.status === 'failed') return; // terminal is final
    task.status = status;
    if (statusMessage === undefined) delete task.statusMessage;
    else task.statusMessage = statusMessage;
    task.lastUpdatedAt = now();
    if (status === 'completed' || status === 'failed' || status === 'cancelled') for (const w of task.waiters.splice(0)) w(task);
  };
  const finish = (task: ScriptedTask) => {
    if (task.tool === 'fail') {
      task.error = { code: -32050, message: 'the job broke', data: { why: 'scripted' } };
      set(task, 'failed', 'the job broke');
    } else if (task.tool === 'work') {
      task.result = { content: [{ type: 'text', text: 'worked' }] };
      set(task, 'completed');
    } else if (task.tool === 'ask') {
      task.result = { content: [{ type: 'text', text: `deleted ${String((task.answer?.content as Json | undefined)?.name)}` }] };
      set(task, 'completed');
    }
  };
  /** One step per tasks/get (modern) or per poll (legacy: the ask task waits for its elicitation instead). */
  const advance = (task: ScriptedTask, modern: boolean) => {
    task.steps++;
    if (task.tool === 'slow') return;
    if ((task.tool === 'fail' || task.tool === 'work') && task.steps >= 2) finish(task);
    if (task.tool === 'work' && task.steps === 1) set(task, 'working', 'halfway');
    if (task.tool === 'ask' && modern) {
      if (task.status === 'working' && task.answer === undefined && task.steps >= 2) set(task, 'input_required', 'waiting for a confirmation');
      else if (task.status === 'working' && task.answer !== undefined && task.steps > task.answeredAt! + 1) finish(task); // one poll sees 'deleting'
    }
  };
  const wire = (task: ScriptedTask, modern: boolean): Json => {
    const base: Json = { taskId: task.taskId, status: task.status, createdAt: task.createdAt, lastUpdatedAt: task.lastUpdatedAt };
    if (task.statusMessage !== undefined) base.statusMessage = task.statusMessage;
    if (!modern) return { ...base, ttl: 60_000, pollInterval: pollMs };
    Object.assign(base, { ttlMs: 60_000, pollIntervalMs: pollMs });
    if (task.status === 'completed') base.result = task.result;
    if (task.status === 'failed') base.error = task.error;
    if (task.status === 'input_required') {
      base.inputRequests = { confirm: { method: 'elicitation/create', params: { message: 'Which file?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } } } } };
    }
    return base;
  };

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (req.method === 'DELETE') {
      res.writeHead(200).end();
      return;
    }
    const body = JSON.parse(await readAll(req)) as Json;
    const method = typeof body.method === 'string' ? body.method : undefined;
    const params = body.params as Json | undefined;
    received.push({ method, params, headers: req.headers, ...(method === undefined ? { response: body } : {}) });
    const modern = req.headers['mcp-protocol-version'] === '2026-07-28' || method === 'server/discover';
    const reply = (payload: Json) => {
      res.writeHead(200, { 'content-type': 'application/json', ...(method === 'initialize' ? { 'mcp-session-id': 'scripted-session' } : {}) });
      res.end(JSON.stringify({ jsonrpc: '2.0', id: body.id, ...payload }));
    };
    const error = (code: number, message: string) => reply({ error: { code, message } });
    if (method === undefined) {
      // A response to one of our requests (legacy elicitation).
      pendingAnswers.get(String(body.id))?.((body.result ?? {}) as Json);
      res.writeHead(202).end();
      return;
    }
    if (body.id === undefined) {
      res.writeHead(202).end();
      return;
    }
    const optedIn = ((params?._meta as Json | undefined)?.['io.modelcontextprotocol/clientCapabilities'] as Json | undefined)?.extensions as Json | undefined;
    const hasOptIn = optedIn !== undefined && kTasksExt in optedIn;
    const taskOf = (): ScriptedTask | undefined => tasks.get(String(params?.taskId));
    if (modern && (method === 'tasks/list' || method === 'tasks/result')) return error(-32601, 'Method not found'); // removed in 2026-07-28
    if (modern && method.startsWith('tasks/')) {
      if (req.headers['mcp-method'] !== method || req.headers['mcp-name'] !== params?.taskId) return error(-32020, 'header mismatch');
      if (!hasOptIn) return error(-32021, 'tasks need the extension');
    }
    switch (method) {
      case 'server/discover':
        return reply({ result: { supportedVersions: ['2026-07-28'], capabilities: { extensions: { [kTasksExt]: {} } }, _meta: { 'io.modelcontextprotocol/serverInfo': { name: 'scripted', version: '1' } } } });
      case 'initialize':
        return reply({ result: { protocolVersion: '2025-11-25', capabilities: { tasks: { list: {}, cancel: {}, requests: { tools: { call: {} } } } }, serverInfo: { name: 'scripted', version: '1' } } });
      case 'tools/call': {
        const tool = String(params?.name);
        const wantsTask = modern ? hasOptIn : params?.task !== undefined;
        if (tool === 'sync' || !wantsTask) return reply({ result: { content: [{ type: 'text', text: `sync ${tool}` }], ...(modern ? { resultType: 'complete' } : {}) } });
        const task: ScriptedTask = { taskId: `t${++next}-${tool}`, tool, status: 'working', createdAt: now(), lastUpdatedAt: now(), steps: 0, waiters: [] };
        tasks.set(task.taskId, task);
        return reply({ result: modern ? { resultType: 'task', ...wire(task, true) } : { task: wire(task, false) } });
      }
      case 'tasks/get': {
        const task = taskOf();
        if (task === undefined) return error(-32602, 'unknown task');
        advance(task, modern);
        return reply({ result: modern ? { resultType: 'complete', ...wire(task, true) } : wire(task, false) });
      }
      case 'tasks/update': {
        const task = taskOf();
        if (task === undefined) return error(-32602, 'unknown task');
        const answer = (params?.inputResponses as Json | undefined)?.confirm as Json | undefined;
        if (answer !== undefined && task.status === 'input_required') {
          task.answer = answer;
          task.answeredAt = task.steps;
          set(task, 'working', 'deleting');
        }
        return reply({ result: { resultType: 'complete' } });
      }
      case 'tasks/cancel': {
        const task = taskOf();
        if (task === undefined) return error(-32602, 'unknown task');
        const terminal = task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
        if (terminal && !modern) return error(-32602, 'the task is already terminal');
        set(task, 'cancelled', 'cancelled by the client');
        return reply({ result: modern ? { resultType: 'complete' } : wire(task, false) });
      }
      case 'tasks/list':
        if (modern) return error(-32601, 'Method not found');
        return reply({ result: { tasks: [...tasks.values()].map((t) => wire(t, false)) } });
      case 'tasks/result': {
        if (modern) return error(-32601, 'Method not found');
        const task = taskOf();
        if (task === undefined) return error(-32602, 'unknown task');
        res.writeHead(200, { 'content-type': 'text/event-stream' });
        const send = (m: Json) => res.write(`data: ${JSON.stringify(m)}\n\n`);
        const meta = { [kRelated]: { taskId: task.taskId } };
        if (task.tool === 'fail' || task.tool === 'work') setTimeout(() => finish(task), pollMs * 3); // legacy tasks run on their own, polled or not
        if (task.tool === 'ask' && task.answer === undefined) {
          set(task, 'input_required', 'waiting for a confirmation');
          const id = `elicit-${task.taskId}`;
          const answered = new Promise<Json>((resolve) => pendingAnswers.set(id, resolve));
          send({ jsonrpc: '2.0', id, method: 'elicitation/create', params: { message: 'Which file?', requestedSchema: { type: 'object', properties: { name: { type: 'string' } } }, _meta: meta } });
          task.answer = await answered;
          set(task, 'working', 'deleting');
          finish(task);
        }
        const end = (t: ScriptedTask) => {
          if (t.status === 'completed') send({ jsonrpc: '2.0', id: body.id, result: { ...t.result, _meta: meta } });
          else if (t.status === 'failed') send({ jsonrpc: '2.0', id: body.id, error: t.error });
          else send({ jsonrpc: '2.0', id: body.id, error: { code: -32603, message: 'the task was cancelled' } });
          res.end();
        };
        if (task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled') end(task);
        else task.waiters.push(end);
        return;
      }
      default:
        return error(-32601, 'Method not found');
    }
  };

  const server: Server = createServer((req, res) => {
    handle(req, res).catch((e: unknown) => { res.writeHead(500).end(String(e)); });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/mcp`,
    received,
    tasks,
    close: () => new Promise((resolve) => { server.closeAllConnections(); server.close(() => resolve()); }),
  };
}

function readAll(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    let text = '';
    req.setEncoding('utf8');
    req.on('data', (c: string) => { text += c; });
    req.on('end', () => resolve(text));
    req.on('error', reject);
  });
}
