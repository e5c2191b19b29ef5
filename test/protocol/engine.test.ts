// The protocol core on its own: dispatch per method and era, refusals, the request's life (started,
// cancel, kill, release) and notifications, through a fake Reply. No threads, no build.
import { beforeEach, describe, expect, it } from 'vitest';
import { ErrorCode, ProtocolError } from '../../src/protocol/wire.js';
import { Counter } from '../../src/telemetry/counters.js';
import { until } from '../helpers/wait.js';
import { FakeReply, gates, info, makeEngine, params, tick } from './helpers.js';
import type { TestEngine } from './helpers.js';

let t: TestEngine;
beforeEach(() => {
  gates.length = 0;
  t = makeEngine();
});

const kServerInfo = { 'io.modelcontextprotocol/serverInfo': { name: 'engine-test', version: '1.0.0' } };

describe('dispatch', () => {
  it('implements() follows each era\'s method table', () => {
    const { engine } = t;
    for (const m of ['initialize', 'ping', 'logging/setLevel', 'resources/subscribe', 'resources/unsubscribe']) {
      expect([m, engine.implements('legacy', m), engine.implements('modern', m)]).toEqual([m, true, false]);
    }
    for (const m of ['server/discover', 'subscriptions/listen']) {
      expect([m, engine.implements('legacy', m), engine.implements('modern', m)]).toEqual([m, false, true]);
    }
    for (const m of ['tools/list', 'tools/call', 'resources/list', 'resources/templates/list', 'resources/read', 'prompts/list', 'prompts/get', 'completion/complete']) {
      expect([m, engine.implements('legacy', m), engine.implements('modern', m)]).toEqual([m, true, true]);
    }
    expect(engine.implements('legacy', 'nope')).toBe(false);
  });

  it('legacy: initialize, ping, tools/call, tools/list as plain results', () => {
    const { engine } = t;
    const init = new FakeReply();
    expect(engine.handleRequest(1, 'initialize', { protocolVersion: '2025-06-18' }, info('legacy'), init)).toBeUndefined();
    expect(init.response.result).toMatchObject({ protocolVersion: '2025-06-18', serverInfo: { name: 'engine-test' }, capabilities: { tools: { listChanged: false }, completions: {}, logging: {} } });
    const ping = new FakeReply();
    engine.handleRequest(2, 'ping', undefined, info('legacy'), ping);
    expect(ping.response).toEqual({ jsonrpc: '2.0', id: 2, result: {} });
    const call = new FakeReply();
    engine.handleRequest('c', 'tools/call', { name: 'echo', arguments: { text: 'hi' } }, info('legacy'), call);
    expect(call.response).toEqual({ jsonrpc: '2.0', id: 'c', result: { content: [{ type: 'text', text: 'hi' }] } });
    expect(call.calls).toEqual(['respond', 'released']);
    const list = new FakeReply();
    engine.handleRequest(3, 'tools/list', {}, info('legacy'), list);
    expect(list.response.result).toEqual({ tools: expect.arrayContaining([expect.objectContaining({ name: 'echo' })]) });
  });

  it('modern: results carry resultType and serverInfo; lists carry caching hints; server/discover', () => {
    const { engine } = t;
    const call = new FakeReply();
    engine.handleRequest(1, 'tools/call', params('modern', { name: 'echo', arguments: { text: 'hi' } }), info('modern'), call);
    expect(call.response.result).toEqual({ content: [{ type: 'text', text: 'hi' }], resultType: 'complete', _meta: kServerInfo });
    const list = new FakeReply();
    engine.handleRequest(2, 'tools/list', params('modern'), info('modern'), list);
    expect(list.response.result).toMatchObject({ ttlMs: 60_000, cacheScope: 'public', resultType: 'complete', _meta: kServerInfo });
    const discover = new FakeReply();
    engine.handleRequest(3, 'server/discover', params('modern'), info('modern'), discover);
    expect(discover.response.result).toMatchObject({ supportedVersions: ['2026-07-28', '2025-11-25', '2025-06-18', '2025-03-26'], capabilities: { tools: { listChanged: true }, prompts: { listChanged: true }, resources: { listChanged: true } } });
  });

  it('resources/read and prompts/get per era (a missing resource: -32002 legacy, -32602 modern)', async () => {
    const { engine } = t;
    const read = new FakeReply();
    engine.handleRequest(1, 'resources/read', { uri: 'test://fixed' }, info('legacy'), read);
    await tick();
    expect(read.response.result).toEqual({ contents: [{ uri: 'test://fixed', mimeType: 'text/plain', text: 'contents' }] });
    const missing = { legacy: new FakeReply(), modern: new FakeReply() };
    engine.handleRequest(2, 'resources/read', { uri: 'test://none' }, info('legacy'), missing.legacy);
    engine.handleRequest(2, 'resources/read', params('modern', { uri: 'test://none' }), info('modern'), missing.modern);
    const prompt = new FakeReply();
    engine.handleRequest(3, 'prompts/get', params('modern', { name: 'greet', arguments: { who: 'you' } }), info('modern'), prompt);
    await tick();
    expect(missing.legacy.response.error).toEqual({ code: ErrorCode.ResourceNotFound, message: 'Resource not found', data: { uri: 'test://none' } });
    expect(missing.modern.response.error).toEqual({ code: ErrorCode.InvalidParams, message: 'Resource not found', data: { uri: 'test://none' } });
    expect(prompt.response.result).toMatchObject({ messages: [{ role: 'user', content: { type: 'text', text: 'hello you' } }], resultType: 'complete' });
  });
});

describe('refusals', () => {
  it('an unknown method: -32601, HTTP 200 legacy, 404 modern; released, never started', () => {
    const legacy = new FakeReply();
    const modern = new FakeReply();
    expect(t.engine.handleRequest(1, 'server/discover', undefined, info('legacy'), legacy)).toBeUndefined();
    expect(t.engine.handleRequest(1, 'initialize', params('modern'), info('modern'), modern)).toBeUndefined();
    expect(legacy.response.error).toEqual({ code: ErrorCode.MethodNotFound, message: 'Method not found: server/discover' });
    expect(legacy.status).toBe(200);
    expect(modern.response.error).toEqual({ code: ErrorCode.MethodNotFound, message: 'Method not found: initialize' });
    expect(modern.status).toBe(404);
    expect(legacy.calls).toEqual(['respond', 'released']);
    expect(modern.calls).toEqual(['respond', 'released']);
  });

  it.each([
    ['tools/call', {}, 'tools/call needs a tool name'],
    ['tools/call', { name: 'nope' }, 'Unknown tool: nope'],
    ['tools/call', { name: 'echo', arguments: [] }, 'arguments must be an object'],
    ['prompts/get', { name: 'greet' }, 'Missing required argument: who'],
    ['resources/read', {}, 'resources/read needs a uri'],
    ['tools/list', { cursor: '!!' }, 'Invalid cursor'],
    ['completion/complete', {}, 'completion/complete needs ref and argument {name, value}'],
    ...[5, 'x', [], { arguments: 5 }, { arguments: ['a'] }, { arguments: { who: 1 } }].map((context) => [
      'completion/complete', { ref: { type: 'ref/prompt', name: 'greet' }, argument: { name: 'who', value: '' }, context },
      'completion/complete: context must be an object, its arguments an object of strings',
    ] as const),
  ])('%s %j: -32602 %s', async (method, p, message) => {
    for (const era of ['legacy', 'modern'] as const) {
      const reply = new FakeReply();
      t.engine.handleRequest(1, method, params(era, p), info(era), reply);
      await tick();
      expect(reply.response.error).toEqual({ code: ErrorCode.InvalidParams, message });
    }
  });

  it('modern: a tampered requestState is refused', () => {
    const reply = new FakeReply();
    t.engine.handleRequest(1, 'tools/call', params('modern', { name: 'echo', arguments: { text: 'x' }, requestState: 'abc.def' }), info('modern'), reply);
    expect(reply.response.error).toEqual({ code: ErrorCode.InvalidParams, message: 'Invalid requestState: integrity check failed' });
  });

  it('a tool that throws is isError content and a warn line naming it; a handler that throws is -32603, logged with its target', async () => {
    const tool = new FakeReply();
    t.engine.handleRequest(1, 'tools/call', { name: 'boom' }, info('legacy'), tool);
    expect(tool.response.result).toEqual({ content: [{ type: 'text', text: 'kaput' }], isError: true });
    const prompt = new FakeReply();
    t.engine.handleRequest(2, 'prompts/get', { name: 'broken' }, info('legacy'), prompt);
    await tick();
    expect(prompt.response.error).toEqual({ code: ErrorCode.InternalError, message: 'Internal error' });
    expect(t.logs).toEqual([expect.stringMatching(/^warn sluice: tool boom threw: Error: kaput/), expect.stringMatching(/^warn sluice: prompts\/get broken failed: Error: prompt bug/)]);
  });

  it('async tools: a value, a rejection (isError, logged), a ProtocolError (JSON-RPC error), a result the outputSchema refuses; each released once', async () => {
    const replies = ['echo_async', 'boom_async', 'refuse_async', 'shape_async'].map((name, i) => {
      const reply = new FakeReply();
      t.engine.handleRequest(i, 'tools/call', { name, arguments: name === 'echo_async' ? { text: 'later' } : {} }, info('legacy'), reply);
      expect(reply.calls).toEqual([]); // nothing answered before the handler's promise settles
      return reply;
    });
    await tick();
    const [echo, boom, refuse, shape] = replies;
    expect(echo!.response).toEqual({ jsonrpc: '2.0', id: 0, result: { content: [{ type: 'text', text: 'later' }] } });
    expect(boom!.response.result).toEqual({ content: [{ type: 'text', text: 'async kaput' }], isError: true });
    expect(refuse!.response.error).toEqual({ code: ErrorCode.InvalidParams, message: 'not like that', data: { why: 'test' } });
    expect(shape!.response.result).toMatchObject({ isError: true });
    expect(JSON.stringify(shape!.response.result)).toMatch(/shape_async/);
    for (const reply of replies) expect(reply.calls).toEqual(['respond', 'released']);
    expect(t.logs).toEqual([expect.stringMatching(/^warn sluice: tool boom_async threw: Error: async kaput/)]);
    expect(t.config.registry.counters().inFlight).toBe(0);
  });

  it('an async Standard Schema, then an async tool: the parsed value reaches the tool, its result the client', async () => {
    const reply = new FakeReply();
    t.engine.handleRequest(1, 'tools/call', { name: 'checked_async', arguments: { text: 'hi' } }, info('legacy'), reply);
    await tick();
    expect(reply.response).toEqual({ jsonrpc: '2.0', id: 1, result: { content: [{ type: 'text', text: 'checked hi' }] } });
    expect(reply.calls).toEqual(['respond', 'released']);
  });

  it('a full in-flight table: busy, then released; nothing started', () => {
    t = makeEngine({ registry: { inFlightCapacity: 1 } });
    const first = new FakeReply();
    const second = new FakeReply();
    expect(t.engine.handleRequest(1, 'tools/call', { name: 'hang' }, info('legacy'), first)).toBeDefined();
    expect(t.engine.handleRequest(2, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, info('legacy'), second)).toBeUndefined();
    expect(second.events).toEqual([['busy', 2], ['released']]);
    expect(t.config.counters.sum(Counter.Busy)).toBe(1);
    t.engine.cancelAll('test over');
  });
});

describe('reply.started', () => {
  it('is not called for a request answered synchronously', () => {
    const reply = new FakeReply();
    expect(t.engine.handleRequest(1, 'tools/call', { name: 'echo', arguments: { text: 'x' } }, info('legacy'), reply)).toBeUndefined();
    expect(reply.calls).toEqual(['respond', 'released']);
  });

  it('is called once, when the turn the handler went async in ends with it running, with the Running handleRequest returned', async () => {
    const reply = new FakeReply();
    const running = t.engine.handleRequest(1, 'tools/call', { name: 'wait' }, info('legacy'), reply);
    expect(running).toBeDefined();
    expect(t.engine.running).toBe(1);
    expect(reply.events).toEqual([]); // not yet: the handler may still settle within this turn
    await new Promise((r) => setImmediate(r));
    expect(reply.events).toEqual([['started', running]]);
    expect(t.engine.running).toBe(1);
    gates[0].open('late');
    await tick();
    expect(reply.calls).toEqual(['started', 'respond', 'released']);
    expect(reply.response.result).toEqual({ content: [{ type: 'text', text: 'late' }] });
    expect(t.engine.running).toBe(0);
  });
});

describe('cancellation', () => {
  it('track → cancel → the reply\'s cancelled(), then release; no response after the cancel', async () => {
    const reply = new FakeReply();
    const scope = info('legacy');
    t.engine.handleRequest('r1', 'tools/call', { name: 'wait' }, scope, reply);
    expect(t.config.registry.inFlight('r1', scope.scope)).toBe(true);
    expect(t.engine.handleNotification('notifications/cancelled', { requestId: 'r1', reason: 'user stop' }, scope)).toBeUndefined();
    await until(() => reply.calls.includes('released'));
    // The tool saw the abort and returned 'stopped': that result is not sent. The abort (the
    // watcher's wake, in the poll phase) and the end of the turn's arming (a setImmediate) come in
    // either order: woken first, the run was never armed; armed first, it saw its flag then.
    expect([['cancelled', 'released'], ['started', 'cancelled', 'released']]).toContainEqual(reply.calls);
    expect(t.config.registry.inFlight('r1', scope.scope)).toBe(false);
    expect(t.engine.running).toBe(0);
  });

  it('notifications/cancelled from another scope, or naming an unknown id, cancels nothing', async () => {
    const reply = new FakeReply();
    t.engine.handleRequest('r1', 'tools/call', { name: 'wait' }, info('legacy', 'session:a'), reply);
    expect(t.engine.handleNotification('notifications/cancelled', { requestId: 'r1' }, info('legacy', 'session:b'))).toBeUndefined();
    expect(t.engine.handleNotification('notifications/cancelled', { requestId: 'r2' }, info('legacy', 'session:a'))).toBeUndefined();
    // A modern request lives in a scope of its own: a legacy cancel with its id cannot reach it.
    const modern = new FakeReply();
    t.engine.handleRequest('r1', 'tools/call', params('modern', { name: 'wait' }), info('modern', 'session:a'), modern);
    await tick();
    expect(reply.calls).toEqual(['started']);
    expect(modern.calls).toEqual(['started']);
    gates[0].open();
    gates[1].open();
    await tick();
    expect(reply.calls).toEqual(['started', 'respond', 'released']);
    expect(modern.calls).toEqual(['started', 'respond', 'released']);
  });

  it('clientGone cancels: the tool sees it, nothing more is written, the run is released once', async () => {
    const reply = new FakeReply();
    const running = t.engine.handleRequest(1, 'tools/call', params('modern', { name: 'wait' }), info('modern'), reply);
    running!.clientGone('client disconnected');
    running!.clientGone('again');
    await until(() => reply.calls.includes('released'));
    // Nothing is written to a gone client; 'started' only if the turn's arming beat the watcher's wake.
    expect([['released'], ['started', 'released']]).toContainEqual(reply.calls);
  });

  it('an async run that settles within its first turn is never armed: no started, nothing watched', async () => {
    const reply = new FakeReply();
    const running = t.engine.handleRequest(1, 'tools/call', { name: 'wait' }, info('legacy'), reply);
    expect(running).toBeDefined();
    gates[0].open('quick');
    await new Promise((r) => setImmediate(r));
    expect(reply.calls).toEqual(['respond', 'released']);
    expect(t.config.registry.watching).toBe(0);
    expect(t.engine.running).toBe(0);
  });

  it('a cancel that comes before the run is armed is acted on when it is armed', async () => {
    const reply = new FakeReply();
    const scope = info('legacy');
    t.engine.handleRequest(9, 'tools/call', { name: 'hang' }, scope, reply);
    t.engine.handleNotification('notifications/cancelled', { requestId: 9 }, scope);
    expect(reply.calls).toEqual([]);
    await new Promise((r) => setImmediate(r));
    expect(reply.calls).toEqual(['started', 'cancelled']);
    expect(t.engine.cancelAll('done')).toBe(1); // still running (deaf): shutdown sees it
  });

  it('a tool deaf to the cancel is killed after streamCancelTimeoutMs: released, counted', async () => {
    t = makeEngine({ streamCancelTimeoutMs: 20 });
    const reply = new FakeReply();
    const scope = info('legacy');
    t.engine.handleRequest(7, 'tools/call', { name: 'hang' }, scope, reply);
    t.engine.handleNotification('notifications/cancelled', { requestId: 7 }, scope);
    await new Promise((r) => setImmediate(r)); // the end of the turn arms the run: it hears the cancel then
    expect(reply.calls).toEqual(['started', 'cancelled']);
    expect(t.engine.running).toBe(1);
    await tick(60);
    expect(reply.calls).toEqual(['started', 'cancelled', 'released']);
    expect(t.config.counters.sum(Counter.Killed)).toBe(1);
    expect(t.engine.running).toBe(0);
    expect(t.config.registry.inFlight(7, scope.scope)).toBe(false);
  });

  it('cancelAll cancels every running request as a client would', async () => {
    const a = new FakeReply();
    const b = new FakeReply();
    t.engine.handleRequest(1, 'tools/call', { name: 'wait' }, info('legacy'), a);
    t.engine.handleRequest(2, 'tools/call', params('modern', { name: 'wait' }), info('modern'), b);
    expect(t.engine.cancelAll('shutting down')).toBe(2);
    await until(() => a.calls.includes('released') && b.calls.includes('released'));
    expect(a.calls).toEqual(['started', 'cancelled', 'released']);
    expect(b.calls).toEqual(['started', 'cancelled', 'released']);
    expect(t.engine.cancelAll('again')).toBe(0);
  });
});

describe('handleNotification', () => {
  it('accepts anything but a malformed or over-quota notifications/cancelled, and counts every one', () => {
    const scope = info('legacy');
    expect(t.engine.handleNotification('notifications/initialized', undefined, scope)).toBeUndefined();
    expect(t.engine.handleNotification('notifications/cancelled', undefined, scope)).toBeUndefined();
    expect(t.engine.handleNotification('notifications/cancelled', {}, scope)).toBeUndefined();
    expect(t.config.counters.sum(Counter.Notifications)).toBe(3);
  });

  it.each([
    ['a non-object params', 'x', 'notifications/cancelled requires a params object'],
    ['an array params', [1], 'notifications/cancelled requires a params object'],
    ['an unusable requestId', { requestId: 1.5 }, 'notifications/cancelled needs a string or integer requestId of at most 256 bytes'],
    ['an object requestId', { requestId: { a: 1 } }, 'notifications/cancelled needs a string or integer requestId of at most 256 bytes'],
  ])('%s: a ProtocolError, -32602 and HTTP 400', (_what, p, message) => {
    const refusal = t.engine.handleNotification('notifications/cancelled', p, info('legacy'));
    expect(refusal).toBeInstanceOf(ProtocolError);
    expect({ rpcCode: refusal!.rpcCode, message: refusal!.message, data: refusal!.data, httpStatus: refusal!.httpStatus })
      .toEqual({ rpcCode: ErrorCode.InvalidParams, message, data: undefined, httpStatus: 400 });
  });

  it('past the scope\'s cancellation quota: a ProtocolError, -31001 and HTTP 429, logged', () => {
    t = makeEngine({ registry: { maxRowsPerScope: 1 } });
    const scope = info('legacy');
    t.engine.handleRequest(1, 'tools/call', { name: 'hang' }, scope, new FakeReply());
    t.engine.handleRequest(2, 'tools/call', { name: 'hang' }, scope, new FakeReply());
    expect(t.engine.handleNotification('notifications/cancelled', { requestId: 1 }, scope)).toBeUndefined();
    const refusal = t.engine.handleNotification('notifications/cancelled', { requestId: 2 }, scope);
    expect(refusal).toBeInstanceOf(ProtocolError);
    expect({ rpcCode: refusal!.rpcCode, message: refusal!.message, data: refusal!.data, httpStatus: refusal!.httpStatus })
      .toEqual({ rpcCode: ErrorCode.CancellationLimitReached, message: 'Too many outstanding cancellations', data: { reason: 'cancellation_limit_reached' }, httpStatus: 429 });
    expect(t.logs).toEqual([expect.stringContaining('cancellation refused for scope "session:a": cancellation_limit_reached')]);
    t.engine.cancelAll('test over');
  });
});

describe('subscriptions/listen (modern)', () => {
  it('acknowledges, hears list changes it asked for, ends with a result when listeners close', async () => {
    const broadcasts: string[] = [];
    t = makeEngine();
    const engine = new (t.engine.constructor as typeof import('../../src/protocol/engine.js').Engine)({ ...t.config, broadcastListChanged: (kind) => broadcasts.push(kind) });
    const reply = new FakeReply(true);
    const running = engine.handleRequest('L', 'subscriptions/listen', params('modern', { notifications: { toolsListChanged: true } }), info('modern'), reply);
    expect(running).toBeDefined();
    engine.listChanged('tools');
    engine.listChanged('prompts');
    engine.listChanged('tools', true);
    expect(broadcasts).toEqual(['tools', 'prompts']);
    engine.closeListeners();
    await tick();
    const notes = reply.events.filter((e) => e[0] === 'notify').map((e) => JSON.parse(e[1] as string).method);
    expect(notes).toEqual(['notifications/subscriptions/acknowledged', 'notifications/tools/list_changed', 'notifications/tools/list_changed']);
    expect(reply.response.result).toEqual({ _meta: { 'io.modelcontextprotocol/subscriptionId': 'L', ...kServerInfo }, resultType: 'complete' });
  });

  it('needs a stream', () => {
    const reply = new FakeReply(false);
    t.engine.handleRequest('L', 'subscriptions/listen', params('modern', { notifications: {} }), info('modern'), reply);
    expect(reply.response.error?.code).toBe(ErrorCode.InvalidParams);
  });
});
