import { request } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { agentOnOtherWorker, post } from '../helpers/http.js';
import { initialize, modernMeta, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

const legacy = (session: string) => ({ 'mcp-session-id': session, 'mcp-protocol-version': '2025-11-25' });
const modernHeaders = (method: string, name?: string) => ({ 'mcp-protocol-version': '2026-07-28', 'mcp-method': method, ...(name === undefined ? {} : { 'mcp-name': name }) });

/** Opens a POST and hands back its SSE events as they arrive. */
function openStream(url: string, message: unknown, headers: Record<string, string>) {
  const events: Record<string, unknown>[] = [];
  let buffer = '';
  let ended = false;
  const req = request(url, { method: 'POST', agent: false, headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream', ...headers } }, (res) => {
    res.on('data', (chunk: Buffer) => {
      buffer += chunk.toString('utf8');
      let i;
      while ((i = buffer.indexOf('\n\n')) !== -1) {
        const event = buffer.slice(0, i);
        buffer = buffer.slice(i + 2);
        const data = event.split('\n').find((l) => l.startsWith('data: '));
        if (data !== undefined) events.push(JSON.parse(data.slice(6)) as Record<string, unknown>);
      }
    });
    res.on('end', () => { ended = true; });
  });
  req.on('error', () => { ended = true; });
  req.end(JSON.stringify(message));
  return { events, req, get ended() { return ended; } };
}

describe('resources and prompts go through the same cancellation', () => {
  it('a resources/read and a prompts/get in flight are tracked and cancellable (legacy)', async () => {
    const resourceRecord = recordPath();
    process.env.SLUICE_TEST_RECORD = resourceRecord;
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url);
    const promptRecord = recordPath();
    const read = post(url, { jsonrpc: '2.0', id: 'r1', method: 'resources/read', params: { uri: 'test://slow' } }, legacy(session));
    const get = post(url, { jsonrpc: '2.0', id: 'g1', method: 'prompts/get', params: { name: 'slow_prompt', arguments: { record: promptRecord } } }, legacy(session));
    await until(() => recorded(resourceRecord).length > 0 && recorded(promptRecord).length > 0, 10_000, 'both to start');
    expect(running.server.registry.inFlight('r1', `session:${session}`)).toBe(true);
    for (const id of ['r1', 'g1']) {
      expect((await post(url, { jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: id, reason: 'not needed' } }, legacy(session))).status).toBe(202);
    }
    await until(() => recorded(resourceRecord).some((l) => l.startsWith('cancelled')) && recorded(promptRecord).some((l) => l.startsWith('cancelled')), 10_000, 'both to see the cancel');
    expect([(await read).status, (await get).status]).toEqual([202, 202]);
    expect(recorded(resourceRecord).at(-1)).toContain('reason=not needed');
    delete process.env.SLUICE_TEST_RECORD;
  });

  it('lists, reads, gets and completes (both eras)', async () => {
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url);
    const list = JSON.parse((await post(url, { jsonrpc: '2.0', id: 1, method: 'resources/list' }, legacy(session))).body);
    expect(list.result.resources.map((r: { uri: string }) => r.uri)).toContain('test://slow');
    const prompts = JSON.parse((await post(url, { jsonrpc: '2.0', id: 2, method: 'prompts/list', params: {} }, modernHeaders('prompts/list'))).body);
    expect(prompts.error.code).toBe(-32602); // no _meta: malformed in the modern era
    const modern = JSON.parse((await post(url, { jsonrpc: '2.0', id: 3, method: 'prompts/list', params: { _meta: modernMeta() } }, modernHeaders('prompts/list'))).body);
    expect(modern.result).toMatchObject({ resultType: 'complete', cacheScope: 'public', prompts: [{ name: 'slow_prompt' }] });
    const missing = JSON.parse((await post(url, { jsonrpc: '2.0', id: 4, method: 'resources/read', params: { uri: 'test://none' } }, legacy(session))).body);
    expect(missing.error).toMatchObject({ code: -32002, data: { uri: 'test://none' } });
    const missingModern = JSON.parse((await post(url, { jsonrpc: '2.0', id: 5, method: 'resources/read', params: { uri: 'test://none', _meta: modernMeta() } }, modernHeaders('resources/read', 'test://none'))).body);
    expect(missingModern.error).toMatchObject({ code: -32602, data: { uri: 'test://none' } });
    const noArg = JSON.parse((await post(url, { jsonrpc: '2.0', id: 6, method: 'prompts/get', params: { name: 'slow_prompt' } }, legacy(session))).body);
    expect(noArg.error.code).toBe(-32602);
    const cursor = JSON.parse((await post(url, { jsonrpc: '2.0', id: 7, method: 'tools/list', params: { cursor: 'garbage!' } }, legacy(session))).body);
    expect(cursor.error.code).toBe(-32602);
    const completion = JSON.parse((await post(url, { jsonrpc: '2.0', id: 8, method: 'completion/complete', params: { ref: { type: 'ref/prompt', name: 'slow_prompt' }, argument: { name: 'record', value: 'x' } } }, legacy(session))).body);
    expect(completion.result).toEqual({ completion: { values: [], total: 0, hasMore: false } });
  });
});

describe('2026-07-28 multi-round requests', () => {
  it('round trips state, and a disconnect during the second round is that round\'s cancel', async () => {
    running = await startServer();
    const { url } = running.address;
    const record = recordPath();
    const first = JSON.parse((await post(url, { jsonrpc: '2.0', id: 'a', method: 'tools/call', params: { name: 'two_rounds', arguments: { record }, _meta: modernMeta() } }, modernHeaders('tools/call', 'two_rounds'))).body);
    expect(first.result).toMatchObject({ resultType: 'input_required', inputRequests: { name: { method: 'elicitation/create' } } });
    const state = first.result.requestState as string;
    // A tampered state is refused before the tool runs.
    const tampered = JSON.parse((await post(url, { jsonrpc: '2.0', id: 'b', method: 'tools/call', params: { name: 'two_rounds', arguments: { record }, inputResponses: { name: { action: 'accept', content: { name: 'x' } } }, requestState: `${state}x`, _meta: modernMeta() } }, modernHeaders('tools/call', 'two_rounds'))).body);
    expect(tampered.error.code).toBe(-32602);
    // The state is bound to its tool.
    const elsewhere = JSON.parse((await post(url, { jsonrpc: '2.0', id: 'c', method: 'tools/call', params: { name: 'echo', arguments: { text: 'x' }, requestState: state, _meta: modernMeta() } }, modernHeaders('tools/call', 'echo'))).body);
    expect(elsewhere.error.code).toBe(-32602);
    const second = openStream(url, { jsonrpc: '2.0', id: 'd', method: 'tools/call', params: { name: 'two_rounds', arguments: { record }, inputResponses: { name: { action: 'accept', content: { name: 'x' } } }, requestState: state, _meta: modernMeta() } }, modernHeaders('tools/call', 'two_rounds'));
    await until(() => recorded(record).length > 0, 10_000, 'round two to start');
    second.req.destroy();
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the disconnect to cancel round two');
    expect(recorded(record).at(-1)).toContain('reason=client disconnected');
  });
});

describe('legacy server-to-client requests', () => {
  it('a tool asks the client mid-call; the answer may arrive on another worker', async () => {
    running = await startServer();
    const { url } = running.address;
    const res = await fetch(url, {
      method: 'POST',
      headers: { 'content-type': 'application/json', accept: 'application/json, text/event-stream' },
      body: JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: { elicitation: {} }, clientInfo: { name: 't', version: '1' } } }),
    });
    const session = res.headers.get('mcp-session-id')!;
    const call = openStream(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: { question: 'Who?' } } }, legacy(session));
    await until(() => call.events.some((e) => e.method === 'elicitation/create'), 10_000, 'the server\'s request');
    const asked = call.events.find((e) => e.method === 'elicitation/create')!;
    expect(asked.params).toMatchObject({ message: 'Who?' });
    const askingThread = /^s(\d+)-/.exec(String(asked.id))![1];
    // Answer from a connection served by the other worker: the supervisor relays it.
    const other = await agentOnOtherWorker(url, askingThread, legacy(session), { jsonrpc: '2.0', id: 'p', method: 'ping' });
    // Another session's answer is ignored.
    const intruder = await initialize(url);
    await post(url, { jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'mallory' } } }, legacy(intruder));
    expect((await post(url, { jsonrpc: '2.0', id: asked.id, result: { action: 'accept', content: { name: 'ada' } } }, legacy(session), other.agent)).status).toBe(202);
    await until(() => call.ended, 10_000, 'the call to finish');
    const final = call.events.find((e) => e.id === 1) as { result: { structuredContent: { answer: unknown; thread: number } } };
    expect(final.result.structuredContent.answer).toEqual({ action: 'accept', content: { name: 'ada' } });
    expect(String(final.result.structuredContent.thread)).toBe(askingThread);
    other.agent.destroy();
  });

  it('a client that did not declare the capability is not asked', async () => {
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url); // no capabilities
    const res = JSON.parse((await post(url, { jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'ask', arguments: {} } }, legacy(session))).body);
    expect(res.result.isError).toBe(true);
    expect(res.result.content[0].text).toContain('elicitation');
  });
});

describe('logging', () => {
  it('legacy: logging/setLevel filters per session; 2026-07-28: nothing without _meta logLevel', async () => {
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url);
    const messages = async (headers: Record<string, string>, meta?: Record<string, unknown>) => {
      const s = openStream(url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'chatty', arguments: {}, ...(meta === undefined ? {} : { _meta: meta }) } }, headers);
      await until(() => s.ended, 10_000, 'the call');
      return s.events.filter((e) => e.method === 'notifications/message').map((e) => (e.params as { level: string }).level);
    };
    expect(await messages(legacy(session))).toEqual(['info', 'error']);
    expect(JSON.parse((await post(url, { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'warning' } }, legacy(session))).body).result).toEqual({});
    expect(await messages(legacy(session))).toEqual(['error']);
    expect(await messages(modernHeaders('tools/call', 'chatty'), modernMeta())).toEqual([]);
    expect(await messages(modernHeaders('tools/call', 'chatty'), modernMeta({ 'io.modelcontextprotocol/logLevel': 'debug' }))).toEqual(['info', 'error']);
  });
});

describe('a pool tool reaches its request as an inline one does', () => {
  it('its log messages (filtered by level), progress and list changes arrive, in both eras', async () => {
    running = await startServer();
    const { url } = running.address;
    const session = await initialize(url);
    const call = async (headers: Record<string, string>, meta: Record<string, unknown> | undefined) => {
      const s = openStream(url, { jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'chatty_pool', arguments: {}, ...(meta === undefined ? {} : { _meta: meta }) } }, headers);
      await until(() => s.ended, 10_000, 'the call');
      return s.events;
    };
    const logs = (events: Record<string, unknown>[]) => events.filter((e) => e.method === 'notifications/message').map((e) => e.params);
    const progress = (events: Record<string, unknown>[]) => events.filter((e) => e.method === 'notifications/progress').map((e) => (e.params as { progress: number }).progress);
    const legacyCall = await call(legacy(session), { progressToken: 'p' });
    expect(legacyCall.at(-1)).toMatchObject({ id: 9, result: { content: [{ type: 'text', text: 'logged in the pool' }] } });
    expect(logs(legacyCall)).toEqual([{ level: 'debug', data: 'a debug line' }, { level: 'info', data: 'an info line' }, { level: 'error', data: { what: 'an error line' }, logger: 'fixture' }]);
    expect(progress(legacyCall)).toEqual([1, 2]);
    await post(url, { jsonrpc: '2.0', id: 2, method: 'logging/setLevel', params: { level: 'warning' } }, legacy(session));
    expect(logs(await call(legacy(session), undefined)).map((m) => (m as { level: string }).level)).toEqual(['error']);
    expect(logs(await call(modernHeaders('tools/call', 'chatty_pool'), modernMeta()))).toEqual([]);
    expect(logs(await call(modernHeaders('tools/call', 'chatty_pool'), modernMeta({ 'io.modelcontextprotocol/logLevel': 'info' }))).map((m) => (m as { level: string }).level)).toEqual(['info', 'error']);

    // What the tool sent just before it returned comes before the answer, every time (the pool's
    // relay port and its outcome are not ordered between them).
    for (let i = 0; i < 30; i++) {
      const s = openStream(url, { jsonrpc: '2.0', id: 10 + i, method: 'tools/call', params: { name: 'chatty_pool', arguments: { burst: 40 }, _meta: modernMeta({ 'io.modelcontextprotocol/logLevel': 'info' }) } }, modernHeaders('tools/call', 'chatty_pool'));
      await until(() => s.ended, 10_000, 'the call');
      expect(logs(s.events).length, `call ${i}`).toBe(42);
      expect(s.events.at(-1)).toMatchObject({ id: 10 + i, result: { content: [{ text: 'logged in the pool' }] } });
    }

    const listen = openStream(url, { jsonrpc: '2.0', id: 'L', method: 'subscriptions/listen', params: { notifications: { toolsListChanged: true }, _meta: modernMeta() } }, modernHeaders('subscriptions/listen'));
    await until(() => listen.events.length > 0, 10_000, 'the acknowledgement');
    await call(modernHeaders('tools/call', 'chatty_pool'), modernMeta());
    await until(() => listen.events.some((e) => e.method === 'notifications/tools/list_changed'), 10_000, 'the pool tool\'s list change');
    listen.req.destroy();
  });
});

describe('2026-07-28 subscriptions/listen', () => {
  it('acknowledges first, hears list changes made on any worker, honours its filter, and ends with a result at shutdown', async () => {
    running = await startServer();
    const { url } = running.address;
    const listen = (id: string, notifications: Record<string, boolean>) =>
      openStream(url, { jsonrpc: '2.0', id, method: 'subscriptions/listen', params: { notifications, _meta: modernMeta() } }, modernHeaders('subscriptions/listen'));
    const tools = listen('L1', { toolsListChanged: true });
    const prompts = listen('L2', { promptsListChanged: true, toolsListChanged: false });
    await until(() => tools.events.length > 0 && prompts.events.length > 0, 10_000, 'acknowledgements');
    expect(tools.events[0]).toMatchObject({ method: 'notifications/subscriptions/acknowledged', params: { _meta: { 'io.modelcontextprotocol/subscriptionId': 'L1' }, notifications: { toolsListChanged: true } } });
    expect(prompts.events[0].params).toMatchObject({ notifications: { promptsListChanged: true } });
    // Changes announced from a tool (whichever worker serves it) and from the server API.
    for (let i = 0; i < 4; i++) await post(url, { jsonrpc: '2.0', id: i, method: 'tools/call', params: { name: 'change_tools', arguments: {}, _meta: modernMeta() } }, modernHeaders('tools/call', 'change_tools'));
    running.server.notifyListChanged('tools');
    await until(() => tools.events.filter((e) => e.method === 'notifications/tools/list_changed').length === 5, 10_000, 'five list changes');
    expect(tools.events.slice(1).every((e) => (e.params as { _meta: Record<string, unknown> })._meta['io.modelcontextprotocol/subscriptionId'] === 'L1')).toBe(true);
    expect(prompts.events.some((e) => e.method === 'notifications/tools/list_changed')).toBe(false);
    await running.close();
    running = undefined;
    await until(() => tools.ended && prompts.ended, 10_000, 'the streams to end');
    expect(tools.events.at(-1)).toMatchObject({ id: 'L1', result: { resultType: 'complete', _meta: { 'io.modelcontextprotocol/subscriptionId': 'L1' } } });
  });
});
