// Hardening: floods against the cancellation path, over loopback, against a real server (uWS, two
// HTTP workers). notifications/cancelled is reachable without authentication, so what matters is
// that a flood stays inside its own scope: bounded rows, refusals for the flooder only, and every
// other client's cancels still recorded and honoured. Every loop here is bounded in count and time.
import { subscribe, unsubscribe } from 'node:diagnostics_channel';
import { Agent } from 'node:http';
import { afterEach, describe, expect, it } from 'vitest';
import { kMaxLoad } from '../../native-free-shm/index.js';
import { post } from '../helpers/http.js';
import type { RawResponse } from '../helpers/http.js';
import { initialize, recordPath, recorded, startServer, until } from '../helpers/server.js';
import type { TestServer } from '../helpers/server.js';

let running: TestServer | undefined;
afterEach(async () => {
  await running?.close();
  running = undefined;
});

type Id = number | string;

const call = (id: Id, name: string, args: Record<string, unknown>) => ({ jsonrpc: '2.0', id, method: 'tools/call', params: { name, arguments: args } });
const cancel = (requestId: Id, reason: string) => ({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId, reason } });
const legacyHeaders = (extra: Record<string, string>) => ({ 'mcp-protocol-version': '2025-11-25', ...extra });
const fromAddress = (address: string) => legacyHeaders({ 'x-forwarded-for': address });
const inSession = (session: string) => legacyHeaders({ 'mcp-session-id': session });

/** A tools/call on its own keep-alive connection (it stays open while the tool runs). */
function startCall(url: string, headers: Record<string, string>, message: unknown): { agent: Agent; response: Promise<RawResponse> } {
  const agent = new Agent({ keepAlive: true, maxSockets: 1 });
  const response = post(url, message, headers, agent);
  // A test that fails early leaves calls unawaited: their failure at server close is not news.
  response.catch(() => {});
  return { agent, response };
}

/** Records what `sluice:request:cancelled` reports in this (the supervisor's) thread. */
function cancelledEvents(): { events: { requestId: Id; scope: string; reason?: string }[]; stop(): void } {
  const events: { requestId: Id; scope: string; reason?: string }[] = [];
  const listener = (message: unknown) => { events.push(message as { requestId: Id; scope: string; reason?: string }); };
  subscribe('sluice:request:cancelled', listener);
  return { events, stop: () => unsubscribe('sluice:request:cancelled', listener) };
}

/**
 * Runs `count` tasks with at most `concurrency` at a time, each worker on its own keep-alive
 * connection; stops early (without failing) once `budgetMs` is spent. Returns how many ran.
 */
async function bounded(count: number, concurrency: number, budgetMs: number, task: (i: number, agent: Agent) => Promise<void>): Promise<number> {
  const deadline = Date.now() + budgetMs;
  let next = 0;
  let done = 0;
  await Promise.all(Array.from({ length: concurrency }, async () => {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    try {
      while (next < count && Date.now() < deadline) {
        const i = next++;
        await task(i, agent);
        done++;
      }
    } finally {
      agent.destroy();
    }
  }));
  return done;
}

const cancelledLine = (record: string) => recorded(record).find((l) => l.startsWith('cancelled'));

describe('a notifications/cancelled flood from one anonymous scope', () => {
  it('stays in its own scope: bounded rows, 429s for the flooder only, and another client\'s cancels are recorded and honoured', async () => {
    const kQuota = 8;
    running = await startServer({ sessions: false, trustProxy: true, registry: { maxRowsPerScope: kQuota }, streamCancelTimeoutMs: 60_000 });
    const { url } = running.address;
    const server = running.server;
    // Two anonymous clients, told apart by address (the last X-Forwarded-For hop of a trusted proxy).
    const attacker = fromAddress('203.0.113.66');
    const victim = fromAddress('198.51.100.7');
    const seen = cancelledEvents();
    try {
      // The flooder holds 12 requests of its own that ignore cancellation (so their rows stay).
      const attackerRecord = recordPath();
      const ownIds = Array.from({ length: 12 }, (_, i) => 101 + i);
      const attackerCalls = ownIds.map((id) => startCall(url, attacker, call(id, 'stubborn', { ms: 8_000, record: attackerRecord })));
      // The victim runs four cooperative tools, with ids the flooder will also name.
      const victimIds = [1, 2, 3, 4];
      const victimRecords = victimIds.map(() => recordPath());
      const victimCalls = victimIds.map((id, i) => startCall(url, victim, call(id, 'block', { ms: 20_000, record: victimRecords[i] })));
      await until(() => recorded(attackerRecord).length === ownIds.length && victimRecords.every((r) => recorded(r).length > 0), 15_000, 'every tool to start');

      // The flood: a third each for the flooder's own in-flight ids, the victim's ids (in flight, but
      // not in the flooder's scope), and ids in flight nowhere. Bounded: 3000 POSTs or 20 s.
      const kFlood = 3_000;
      const statuses = new Map<number, number>();
      let peakRows = 0;
      const sampler = setInterval(() => { peakRows = Math.max(peakRows, server.registry.counters().cancellationRows); }, 10);
      const victimMidFlood: Promise<RawResponse>[] = [];
      const refusals: string[] = [];
      let sent: number;
      try {
        sent = await bounded(kFlood, 8, 20_000, async (i, agent) => {
          const kind = i % 3;
          const id: Id = kind === 0 ? ownIds[Math.floor(i / 3) % ownIds.length] : kind === 1 ? victimIds[Math.floor(i / 3) % victimIds.length] : i % 2 === 0 ? 1_000_000 + i : `ghost-${i}`;
          const res = await post(url, cancel(id, 'flood'), attacker, agent);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
          if (res.status === 429 && refusals.length < 3) refusals.push(res.body);
          // Halfway through, the victim cancels two of its own requests, on its own connections.
          if (i === kFlood / 2) victimMidFlood.push(post(url, cancel(1, 'victim stop'), victim), post(url, cancel(2, 'victim stop'), victim));
        });
      } finally {
        clearInterval(sampler);
      }
      expect(sent).toBe(kFlood);
      // (About 1.5 s on two cores; the flooder's tools must still be running for the counts below.)
      expect(recorded(attackerRecord).filter((l) => l.startsWith('ended')), 'the flood outlasted the flooder\'s tools').toEqual([]);
      // Only "ignored" (202) and "over your quota" (429): never a 5xx, never a 4xx of another kind.
      expect([...statuses.keys()].sort()).toEqual([202, 429]);
      const refused = statuses.get(429)!;
      // Every refusal is the flooder's own in-flight ids past its quota (a third of the flood, less
      // the first cancel of each of the kQuota ids that fit).
      expect(refused).toBeGreaterThanOrEqual(kFlood / 3 - kQuota - 2);
      expect(refused).toBeLessThanOrEqual(kFlood / 3 - kQuota);
      expect(JSON.parse(refusals[0])).toMatchObject({ jsonrpc: '2.0', id: null, error: { code: -31001, data: { reason: 'cancellation_limit_reached' } } });
      expect(server.registry.counters().cancellationsRefused).toBe(refused);

      // The victim's cancels, mid-flood and after it, are accepted and honoured.
      for (const res of await Promise.all(victimMidFlood)) expect(res.status).toBe(202);
      for (const id of [3, 4]) expect((await post(url, cancel(id, 'victim stop'), victim)).status).toBe(202);
      await until(() => victimRecords.every((r) => cancelledLine(r) !== undefined), 10_000, 'the victim\'s tools to see their cancels');
      for (const r of victimRecords) expect(cancelledLine(r)).toContain('reason=victim stop');
      for (const c of victimCalls) {
        const res = await c.response;
        expect(res.status).toBe(202); // cancelled: no JSON-RPC response
        expect(res.body).toBe('');
        c.agent.destroy();
      }

      // Rows stayed bounded: the flooder's quota (which writers on the two worker threads racing
      // each other may overshoot by one each) plus at most the victim's four.
      expect(peakRows).toBeGreaterThanOrEqual(kQuota);
      expect(peakRows).toBeLessThanOrEqual(kQuota + 2 + victimIds.length);
      // Recorded cancellations: the victim's four in its own scope, the flooder's in its own, nothing else.
      const victimScope = 'ip:198.51.100.7';
      const attackerScope = 'ip:203.0.113.66';
      expect(seen.events.filter((e) => e.scope === victimScope).map((e) => e.requestId).sort()).toEqual(victimIds);
      expect(seen.events.filter((e) => e.scope === victimScope).every((e) => e.reason === 'victim stop')).toBe(true);
      expect(seen.events.every((e) => e.scope === victimScope || e.scope === attackerScope)).toBe(true);
      const flooderIds = new Set(seen.events.filter((e) => e.scope === attackerScope).map((e) => e.requestId));
      expect(flooderIds.size).toBeGreaterThanOrEqual(kQuota);
      expect(flooderIds.size).toBeLessThanOrEqual(kQuota + 2);
      for (const id of flooderIds) expect(ownIds).toContain(id);

      // Once the flooder's tools end, every row goes.
      await Promise.all(attackerCalls.map((c) => c.response));
      for (const c of attackerCalls) c.agent.destroy();
      await until(() => server.registry.counters().inFlight === 0, 15_000, 'in-flight rows to go');
      expect(server.registry.counters().cancellationRows).toBe(0);
    } finally {
      seen.stop();
    }
  });
});

describe('many sessions, each at its per-scope quota', () => {
  const kSessions = 40;
  const kQuota = 8;

  /** kSessions attacking sessions with `perSession` stubborn calls each, and a victim session with one blocked call, all started. */
  async function attackersAndVictim(url: string, perSession: number, ms: number) {
    const victim = await initialize(url);
    const sessions: string[] = [];
    await bounded(kSessions, 8, 20_000, async () => { sessions.push(await initialize(url)); });
    const record = recordPath();
    const calls = sessions.flatMap((s) => Array.from({ length: perSession }, (_, i) => startCall(url, inSession(s), call(i + 1, 'stubborn', { ms, record }))));
    const victimRecord = recordPath();
    const victimCall = startCall(url, inSession(victim), call(1, 'block', { ms: 20_000, record: victimRecord }));
    await until(() => recorded(record).length === calls.length && recorded(victimRecord).length > 0, 20_000, 'every tool to start');
    return { victim, sessions, record, calls, victimRecord, victimCall };
  }

  /** The victim's own cancel is accepted and its tool sees it; then every call ends and every row goes. */
  async function victimCancelHonouredThenDrain(
    url: string, server: TestServer['server'], victim: string, victimRecord: string,
    victimCall: ReturnType<typeof startCall>, calls: ReturnType<typeof startCall>[],
  ): Promise<void> {
    expect((await post(url, cancel(1, 'victim stop'), inSession(victim))).status).toBe(202);
    await until(() => cancelledLine(victimRecord) !== undefined, 10_000, 'the victim\'s tool to see its cancel');
    expect(cancelledLine(victimRecord)).toContain('reason=victim stop');
    expect((await victimCall.response).status).toBe(202);
    victimCall.agent.destroy();
    await Promise.all(calls.map((c) => c.response));
    for (const c of calls) c.agent.destroy();
    await until(() => server.registry.counters().inFlight === 0, 15_000, 'in-flight rows to go');
    expect(server.registry.counters().cancellationRows).toBe(0);
  }

  it('do not deny a victim session its cancel (per-scope quota)', async () => {
    running = await startServer({ registry: { maxRowsPerScope: kQuota }, streamCancelTimeoutMs: 60_000 });
    const { url } = running.address;
    const server = running.server;
    // Each attacking session runs quota + 1 requests that ignore cancellation.
    const { victim, sessions, record, calls, victimRecord, victimCall } = await attackersAndVictim(url, kQuota + 1, 9_000);
    expect(sessions).toHaveLength(kSessions);
    // Each session cancels all its requests, one after another (sessions in parallel): the first
    // kQuota are recorded, the last is refused.
    const outcomes = new Map<string, number[]>();
    await bounded(kSessions, 8, 20_000, async (i, agent) => {
      const statuses: number[] = [];
      for (let id = 1; id <= kQuota + 1; id++) statuses.push((await post(url, cancel(id, 'flood'), inSession(sessions[i]), agent)).status);
      outcomes.set(sessions[i], statuses);
    });
    expect(recorded(record).filter((l) => l.startsWith('ended')), 'the cancels outlasted the tools').toEqual([]);
    for (const s of sessions) expect(outcomes.get(s)).toEqual([...Array.from({ length: kQuota }, () => 202), 429]);
    const during = server.registry.counters();
    expect(during.cancellationRows).toBe(kSessions * kQuota);
    expect(during.cancellationsRefused).toBe(kSessions);
    expect(during.evictions).toBe(0);
    await victimCancelHonouredThenDrain(url, server, victim, victimRecord, victimCall, calls);
  });

  it('past the global cap, rows are evicted (largest scope first) and a victim session\'s cancel is still honoured', async () => {
    const kMaxRows = 100;
    // A small in-flight table, so that a scan every 5 ms (below) costs next to nothing.
    running = await startServer({ registry: { maxRowsPerScope: kQuota, maxRows: kMaxRows, inFlightCapacity: 4096 }, streamCancelTimeoutMs: 60_000 });
    const { url } = running.address;
    const server = running.server;
    const { victim, sessions, record, calls, victimRecord, victimCall } = await attackersAndVictim(url, kQuota, 8_000);
    // The rows the table holds (a scan), and what the row counter says.
    let peakRows = 0;
    let peakCounted = 0;
    const sampler = setInterval(() => {
      peakRows = Math.max(peakRows, server.registry.scan().cancellationRows);
      peakCounted = Math.max(peakCounted, server.registry.counters().cancellationRows);
    }, 5);
    const statuses = new Map<number, number>();
    try {
      // 320 cancels, each within its session's quota: the global cap of 100 has to evict.
      await bounded(kSessions, 8, 20_000, async (i, agent) => {
        for (let id = 1; id <= kQuota; id++) {
          const res = await post(url, cancel(id, 'flood'), inSession(sessions[i]), agent);
          statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
        }
      });
    } finally {
      clearInterval(sampler);
    }
    expect(recorded(record).filter((l) => l.startsWith('ended')), 'the cancels outlasted the tools').toEqual([]);
    expect([...statuses.keys()]).toEqual([202]); // the cap evicts, it never refuses
    const after = server.registry.counters();
    expect(after.evictions).toBeGreaterThanOrEqual(kSessions * kQuota - kMaxRows - 16);
    expect(after.cancellationRows).toBeLessThanOrEqual(kMaxRows);
    // The table's hard bound, its slots: maxRows plus one eviction batch of slack, at the table's
    // most load. While one thread evicts, writers on other threads insert on without waiting for it,
    // past that slack (CI saw 121 rows for 116): a writer that finds no free slot evicts first.
    const slots = Math.ceil((kMaxRows + 16) / kMaxLoad);
    expect(peakRows).toBeLessThanOrEqual(slots);
    // The counter counts a row from just before its writer claims a slot: with this server's 2 HTTP
    // workers writing, it can read up to 2 more than the rows.
    expect(peakCounted).toBeLessThanOrEqual(slots + 2);
    await victimCancelHonouredThenDrain(url, server, victim, victimRecord, victimCall, calls);
  });
});

describe('IPv6 clients behind a trusted proxy', () => {
  it('addresses rotating inside one /64 share one scope and one quota; another /64 is independent', async () => {
    const kQuota = 4;
    running = await startServer({ sessions: false, trustProxy: true, registry: { maxRowsPerScope: kQuota }, streamCancelTimeoutMs: 60_000 });
    const { url } = running.address;
    const server = running.server;
    const seen = cancelledEvents();
    try {
      const netA = (host: string) => `2001:db8:1:2:${host}`;
      const record = recordPath();
      // Six stubborn requests, each from a different address of 2001:db8:1:2::/64.
      const aCalls = [1, 2, 3, 4, 5, 6].map((id) => startCall(url, fromAddress(netA(`0:0:0:${id}`)), call(id, 'stubborn', { ms: 6_000, record })));
      // In 2001:db8:1:3::/64: a stubborn request with the same id 1, and a cooperative one.
      const bCall = startCall(url, fromAddress('2001:db8:1:3::1'), call(1, 'stubborn', { ms: 6_000, record }));
      const blockRecord = recordPath();
      const bBlock = startCall(url, fromAddress('2001:db8:1:3:aaaa::2'), call('x', 'block', { ms: 20_000, record: blockRecord }));
      await until(() => recorded(record).length === 7 && recorded(blockRecord).length > 0, 15_000, 'every tool to start');

      // Cancels from four more addresses of the first /64, in several spellings: all one scope.
      const rotating = ['2001:db8:1:2::100', '2001:DB8:1:2:0:0:0:FFFF', '2001:0db8:0001:0002:ffff:ffff:ffff:fffe', '198.51.100.1, 2001:db8:1:2::abcd'];
      for (const [i, address] of rotating.entries()) {
        expect((await post(url, cancel(i + 1, 'rotated'), fromAddress(address))).status).toBe(202);
      }
      // The shared quota is spent: yet another address of the same /64 is refused.
      const refused = await post(url, cancel(5, 'rotated'), fromAddress('2001:db8:1:2:dead:beef:0:1'));
      expect(refused.status).toBe(429);
      expect(JSON.parse(refused.body)).toMatchObject({ error: { code: -31001 } });
      expect((await post(url, cancel(6, 'rotated'), fromAddress('2001:db8:1:2::6%eth0'))).status).toBe(429);
      // The other /64 has its own quota: its own id 1 is recorded.
      expect((await post(url, cancel(1, 'other net'), fromAddress('2001:db8:1:3::9'))).status).toBe(202);
      // ...and its requests are not the first /64's to cancel.
      expect((await post(url, cancel('x', 'intruder'), fromAddress('2001:db8:1:2::77'))).status).toBe(202);
      await new Promise((r) => setTimeout(r, 200));
      expect(cancelledLine(blockRecord)).toBeUndefined();
      // Any address of its own /64 is the same client, though.
      expect((await post(url, cancel('x', 'same /64'), fromAddress('2001:db8:1:3:ffff::'))).status).toBe(202);
      await until(() => cancelledLine(blockRecord) !== undefined, 10_000, 'the block tool to see its cancel');
      expect(cancelledLine(blockRecord)).toContain('reason=same /64');
      // The tool can see its cancel before the worker's event reaches this thread (a message
      // between threads): wait for the events, bounded, then check them.
      await until(() => seen.events.length >= 6, 10_000, 'the cancel events to reach this thread');

      const scopeA = 'ip:2001:db8:1:2::/64';
      const scopeB = 'ip:2001:db8:1:3::/64';
      expect(seen.events.filter((e) => e.scope === scopeA).map((e) => e.requestId).sort()).toEqual([1, 2, 3, 4]);
      expect(seen.events.filter((e) => e.scope === scopeB).map((e) => [e.requestId, e.reason])).toEqual([[1, 'other net'], ['x', 'same /64']]);
      expect(seen.events).toHaveLength(6);
      const counters = server.registry.counters();
      expect(counters.cancellationsRefused).toBe(2);

      for (const c of [...aCalls, bCall, bBlock]) await c.response;
      for (const c of [...aCalls, bCall, bBlock]) c.agent.destroy();
      await until(() => server.registry.counters().inFlight === 0, 15_000, 'in-flight rows to go');
      expect(server.registry.counters().cancellationRows).toBe(0);
    } finally {
      seen.stop();
    }
  });
});

describe('a session flood', () => {
  it('fills the session table (then initialize gets 503 + Retry-After) without touching existing sessions; idle ones expire', async () => {
    const kMaxSessions = 30;
    const kIdleMs = 1_500;
    running = await startServer({ maxSessions: kMaxSessions, sessionIdleMs: kIdleMs, streamCancelTimeoutMs: 60_000 });
    const { url } = running.address;
    const victim = await initialize(url);
    const init = { jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-11-25', capabilities: {}, clientInfo: { name: 'flood', version: '1' } } };
    // Bounded: the table holds at most ceil(maxSessions / 0.75) rows (the shared table's load factor).
    const kLimit = Math.ceil(kMaxSessions / 0.75) + 5;
    let created = 1; // the victim's
    let busy: RawResponse | undefined;
    for (let i = 0; i < kLimit && busy === undefined; i++) {
      const res = await post(url, init);
      if (res.status === 200) created++;
      else busy = res;
    }
    expect(busy?.status).toBe(503);
    expect(busy?.headers['retry-after']).toBe('1');
    expect(JSON.parse(busy!.body)).toMatchObject({ id: 0, error: { code: -32603 } });
    expect(created).toBeGreaterThanOrEqual(kMaxSessions);
    expect(created).toBeLessThanOrEqual(Math.ceil(kMaxSessions / 0.75));
    // The victim's session still works, cancels included, while the table is full.
    const record = recordPath();
    const victimCall = startCall(url, inSession(victim), call(7, 'block', { ms: 20_000, record }));
    await until(() => recorded(record).length > 0, 10_000, 'the victim\'s tool to start');
    expect((await post(url, cancel(7, 'still mine'), inSession(victim))).status).toBe(202);
    await until(() => cancelledLine(record) !== undefined, 10_000, 'the victim\'s cancel');
    expect((await victimCall.response).status).toBe(202);
    victimCall.agent.destroy();
    // Flooded sessions that go idle expire (the sweep runs every sessionIdleMs); the victim keeps
    // its own alive by using it.
    const deadline = Date.now() + 3 * kIdleMs + 2_000;
    let fresh: RawResponse | undefined;
    while (Date.now() < deadline) {
      expect((await post(url, { jsonrpc: '2.0', id: 'keepalive', method: 'ping' }, inSession(victim))).status).toBe(200);
      await new Promise((r) => setTimeout(r, 250));
      const res = await post(url, init);
      if (res.status === 200) { fresh = res; break; }
    }
    expect(fresh?.status).toBe(200);
    expect((await post(url, { jsonrpc: '2.0', id: 'last', method: 'ping' }, inSession(victim))).status).toBe(200);
  });
});
