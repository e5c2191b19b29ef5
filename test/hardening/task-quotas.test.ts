/**
 * Round 3, finding 2: the task bounds were per session, and sessions are free. One anonymous
 * client rotating sessions (initialize, fill maxTasksPerOwner, DELETE, again) filled the node-wide
 * table, and another client's task was then refused; the same shape filled the stored bytes and
 * another client's finished task lost its result. Now tasks, stored bytes and tasks/result waits
 * are counted per client (principal, else address bucket) before any node-wide bound.
 *
 * Real server, two HTTP workers, 2025-11-25 sessions. The attacker connects from 127.0.0.2, the
 * other client from 127.0.0.1 (two address buckets on loopback).
 */
import { request } from 'node:http';
import type { ClientRequest } from 'node:http';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { kAccept, startServer } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

const kTools = new URL('../fixtures/task-quota-tools.mjs', import.meta.url);

interface Reply { status: number; headers: Record<string, string | string[] | undefined>; body: Record<string, unknown> }

function parse(text: string): Record<string, unknown> {
  const trimmed = text.trim();
  if (trimmed === '') return {};
  if (trimmed.startsWith('{')) return JSON.parse(trimmed) as Record<string, unknown>;
  const data = trimmed.split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim());
  return data.length === 0 ? {} : JSON.parse(data[data.length - 1]) as Record<string, unknown>;
}

/** A legacy client from one source address; `open()` starts a new session (the attacker rotates them). */
class Client {
  session = '';
  #next = 1;
  readonly requests = new Set<ClientRequest>();
  constructor(readonly url: string, readonly from: string) {}

  send(method: string, body: unknown, extra: Record<string, string> = {}): Promise<Reply> {
    const text = JSON.stringify(body);
    const target = new URL(this.url);
    return new Promise((resolve, reject) => {
      const req = request({
        host: target.hostname, port: target.port, path: target.pathname, method, localAddress: this.from, agent: false,
        headers: {
          'content-type': 'application/json', accept: kAccept, 'content-length': Buffer.byteLength(text), 'mcp-protocol-version': '2025-11-25',
          ...(this.session !== '' ? { 'mcp-session-id': this.session } : {}), ...extra,
        },
      }, (res) => {
        let data = '';
        res.setEncoding('utf8');
        res.on('data', (c: string) => { data += c; });
        res.on('end', () => { this.requests.delete(req); resolve({ status: res.statusCode ?? 0, headers: res.headers, body: parse(data) }); });
        res.on('error', reject);
      });
      this.requests.add(req);
      req.on('error', (error) => { this.requests.delete(req); reject(error); });
      req.end(text);
    });
  }

  async open(): Promise<void> {
    this.session = '';
    const res = await this.send('POST', { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'q', version: '1' } } });
    expect(res.status).toBe(200);
    this.session = String(res.headers['mcp-session-id']);
    await this.send('POST', { jsonrpc: '2.0', method: 'notifications/initialized' });
  }

  async close(): Promise<void> {
    await this.send('DELETE', {});
    this.session = '';
  }

  call(method: string, params: Record<string, unknown>): Promise<Reply> {
    return this.send('POST', { jsonrpc: '2.0', id: this.#next++, method, params });
  }

  /** tools/call as a task: the reply, and the task id when there is one. */
  async task(name: string, args: Record<string, unknown> = {}): Promise<{ reply: Reply; taskId: string | undefined }> {
    const reply = await this.call('tools/call', { name, arguments: args, task: {} });
    const task = (reply.body.result as { task?: { taskId: string } } | undefined)?.task;
    return { reply, taskId: task?.taskId };
  }

  /** Cuts every request still open (the client vanishes). */
  vanish(): void {
    for (const req of this.requests) req.destroy();
    this.requests.clear();
  }
}

async function metric(url: string, name: string): Promise<number> {
  const text = await (await fetch(new URL('/metrics', url))).text();
  const line = text.split('\n').find((l) => l.startsWith(`${name} `));
  return Number(line?.split(' ')[1]);
}

async function finished(c: Client, taskId: string): Promise<Record<string, unknown>> {
  for (let i = 0; i < 200; i++) {
    const task = (await c.call('tasks/get', { taskId })).body.result as Record<string, unknown>;
    if (task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled') return task;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`task ${taskId} did not finish`);
}

describe('task bounds per client, not per session', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({
      tools: kTools, workers: 2, metrics: true,
      // The node holds 60 tasks and 160 KiB; one client 30 tasks and 64 KiB; one session 10 tasks.
      tasks: { limits: { maxTasks: 60, maxTasksPerOwner: 10, maxTasksPerClient: 30, maxStoredBytes: 160 * 1024, maxStoredBytesPerClient: 64 * 1024, maxResultWaitsPerClient: 5, maxResultWaits: 12 } },
    });
  });
  afterAll(async () => { await s?.close(); });

  it('a session-rotating attacker is stopped at maxTasksPerClient (429 + Retry-After); another client still gets its tasks', async () => {
    const attacker = new Client(s.address.url, '127.0.0.2');
    let created = 0;
    let refusal: Reply | undefined;
    // Ten sessions of ten tasks each would be 100: twice what the node holds.
    for (let round = 0; round < 10 && refusal === undefined; round++) {
      await attacker.open();
      for (let i = 0; i < 10; i++) {
        const { reply, taskId } = await attacker.task('big', { bytes: 10 });
        if (taskId !== undefined) created++;
        else { refusal = reply; break; }
      }
      await attacker.close();
    }
    expect(created).toBe(30);
    expect(refusal?.status).toBe(429);
    expect(refusal?.headers['retry-after']).toBeDefined();
    expect((refusal?.body.error as { message: string }).message).toMatch(/maxTasksPerClient/);

    const other = new Client(s.address.url, '127.0.0.1');
    await other.open();
    for (let i = 0; i < 10; i++) {
      const { reply, taskId } = await other.task('big', { bytes: 10 });
      expect(reply.status, JSON.stringify(reply.body)).toBe(200);
      expect(taskId).toBeDefined();
    }
    expect(await metric(s.address.url, 'sluice_task_quota_refused_total')).toBeGreaterThanOrEqual(1);
  });
});

describe('stored bytes per client', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({
      tools: kTools, workers: 2,
      tasks: { limits: { maxTasks: 1_000, maxTasksPerOwner: 10, maxTasksPerClient: 500, maxStoredBytes: 160 * 1024, maxStoredBytesPerClient: 64 * 1024 } },
    });
  });
  afterAll(async () => { await s?.close(); });

  it('an attacker filling results across sessions fills only its own share; another client\'s finished task keeps its result', async () => {
    const attacker = new Client(s.address.url, '127.0.0.2');
    const outcomes: string[] = [];
    // 20 KiB results, two per session, five sessions: 200 KiB would fill the node (160 KiB); three fill one client's 64 KiB.
    for (let round = 0; round < 5; round++) {
      await attacker.open();
      const ids: string[] = [];
      for (let i = 0; i < 2; i++) {
        const { reply, taskId } = await attacker.task('big', { bytes: 20 * 1024 });
        if (taskId !== undefined) ids.push(taskId);
        else {
          expect(reply.status).toBe(429);
          expect(reply.headers['retry-after']).toBeDefined();
          outcomes.push(`refused ${(reply.body.error as { message: string }).message}`);
        }
      }
      for (const id of ids) {
        const task = await finished(attacker, id);
        outcomes.push(`${String(task.status)} ${String(task.statusMessage ?? '')}`);
      }
      await attacker.close();
    }
    // Three results fit its share; every later one failed (or was refused) on the client's own bound.
    expect(outcomes.filter((o) => o.startsWith('completed'))).toHaveLength(3);
    expect(outcomes.filter((o) => !o.startsWith('completed')).every((o) => /maxStoredBytesPerClient/.test(o))).toBe(true);

    const other = new Client(s.address.url, '127.0.0.1');
    await other.open();
    for (let i = 0; i < 3; i++) {
      const { taskId } = await other.task('big', { bytes: 20 * 1024 });
      const task = await finished(other, taskId!);
      expect(task.status).toBe('completed');
      const result = (await other.call('tasks/result', { taskId })).body.result as { content: Array<{ text: string }> };
      expect(result.content[0].text.length).toBe(20 * 1024);
    }
  });
});

describe('tasks/result waits per client', () => {
  let s: TestServer;
  beforeAll(async () => {
    s = await startServer({
      tools: kTools, workers: 2, metrics: true,
      tasks: { limits: { maxResultWaitsPerClient: 5, maxResultWaits: 12 } },
    });
  });
  afterAll(async () => { await s?.close(); });

  it('hundreds of waits on a never-ending task: at most maxResultWaitsPerClient per worker are held, the rest 429; another client still waits; nothing stays in flight when the attacker vanishes', async () => {
    const url = s.address.url;
    const attacker = new Client(url, '127.0.0.2');
    const sessions: Array<{ session: string; taskId: string }> = [];
    for (let i = 0; i < 3; i++) {
      await attacker.open();
      sessions.push({ session: attacker.session, taskId: (await attacker.task('forever')).taskId! });
    }
    const baseline = await metric(url, 'sluice_requests_in_flight'); // the three tasks' own rows
    expect(baseline).toBe(3);
    // 300 waits, spread over the three sessions (one client, one address bucket).
    const outcomes: Array<Promise<number>> = [];
    for (let i = 0; i < 300; i++) {
      const { session, taskId } = sessions[i % 3];
      attacker.session = session;
      outcomes.push(attacker.call('tasks/result', { taskId }).then((r) => r.status, () => -1));
    }
    // Every wait past the bound is refused at once; the held ones stay open.
    const refusedCount = async (): Promise<number> => {
      const settled = await Promise.all(outcomes.map((p) => Promise.race([p, new Promise<number>((r) => setTimeout(() => r(0), 0))])));
      return settled.filter((status) => status === 429).length;
    };
    const deadline = Date.now() + 15_000;
    while (await refusedCount() < 290 && Date.now() < deadline) await new Promise((r) => setTimeout(r, 100));
    const refused = await refusedCount();
    // Two workers, five each at most: 290 to 295 refused (the kernel may put every connection on one worker).
    expect(refused).toBeGreaterThanOrEqual(290);
    expect(refused).toBeLessThanOrEqual(295);
    const statuses = await Promise.all(outcomes.map((p) => Promise.race([p, new Promise<number>((r) => setTimeout(() => r(0), 0))])));
    expect(statuses.filter((x) => x !== 0 && x !== 429), 'waits answered otherwise').toEqual([]);
    const held = await metric(url, 'sluice_requests_in_flight') - baseline;
    expect(held).toBe(300 - refused);

    // Another client: its own task, its own wait, answered when its task ends.
    const other = new Client(url, '127.0.0.1');
    await other.open();
    const { taskId } = await other.task('forever');
    const wait = other.call('tasks/result', { taskId });
    await new Promise((r) => setTimeout(r, 200));
    expect((await other.call('tasks/cancel', { taskId })).status).toBe(200);
    expect((await wait).status).toBe(200);

    // The attacker vanishes: every wait it held is released.
    attacker.vanish();
    await Promise.all(outcomes);
    const end = Date.now() + 10_000;
    while (await metric(url, 'sluice_requests_in_flight') !== baseline && Date.now() < end) await new Promise((r) => setTimeout(r, 50));
    expect(await metric(url, 'sluice_requests_in_flight')).toBe(baseline);
  });
});
