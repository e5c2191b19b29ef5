// The pool relay's bookkeeping, without threads (test/server/features.test.ts runs it across real
// pool threads): a call's messages reach its sinks by id, the owner answers once it has as many as
// the outcome counted, whichever comes first, and nothing is sent or kept past a call's end.
import { describe, expect, it } from 'vitest';
import { RelayHub, RelayOut } from '../../src/tools/pool-relay.js';

function sinksInto(seen: string[]) {
  return {
    progress: (p: number, t?: number) => seen.push(`p ${p}/${t}`),
    log: (level: string, data: unknown) => seen.push(`l ${level} ${JSON.stringify(data)}`),
    logThreshold: 1, // info and above
    listChanged: (kind: string) => seen.push(`c ${kind}`),
  };
}

describe('pool relay', () => {
  it('messages before and after the outcome: answered once all counted have arrived', async () => {
    const hub = new RelayHub();
    const seen: string[] = [];
    const wants = hub.open(sinksInto(seen))!;
    const posted: unknown[] = [];
    const out = new RelayOut(wants, (m) => posted.push(m));
    const { progress, log, listChanged } = out.sinks();
    progress!(1, 3);
    log!('debug', 'filtered in the pool thread');
    log!('warning', { n: 1 });
    listChanged!('tools');
    const count = out.end();
    progress!(3, 3); // a timer the tool left behind: not sent
    expect(count).toBe(3);
    expect(posted).toHaveLength(3);
    // The outcome came first: one message is in, two are still on their way.
    expect(hub.receive(posted[0])).toBe(true);
    let answered = false;
    const settled = hub.settled(wants.id, count)!.then(() => { answered = true; });
    await new Promise((r) => setTimeout(r, 20));
    expect(answered).toBe(false);
    hub.receive(posted[1]);
    hub.receive(posted[2]);
    await settled;
    expect(seen).toEqual(['p 1/3', 'l warning {"n":1}', 'c tools']);
    // Forgotten once settled: a late duplicate is taken (it is a relay message) and dropped.
    expect(hub.receive(posted[0])).toBe(true);
    expect(seen).toHaveLength(3);
  });

  it('a call that relayed nothing is answered at once; a request with no sinks opens nothing', () => {
    const hub = new RelayHub();
    expect(hub.open({})).toBeUndefined();
    const wants = hub.open({ listChanged: () => {} })!;
    const out = new RelayOut(wants, () => { throw new Error('nothing is posted'); });
    expect(hub.settled(wants.id, out.end())).toBeUndefined();
  });

  it('a killed call is forgotten: what its thread sent arrives to nothing; other messages are not relay messages', () => {
    const hub = new RelayHub();
    const seen: string[] = [];
    const wants = hub.open(sinksInto(seen))!;
    const posted: unknown[] = [];
    new RelayOut(wants, (m) => posted.push(m)).sinks().progress!(1);
    hub.forget(wants.id);
    expect(hub.receive(posted[0])).toBe(true);
    expect(seen).toEqual([]);
    expect(hub.receive({ type: 'sluice:pool-thread', state: 'ready' })).toBe(false);
    expect(hub.receive(['something', 1])).toBe(false);
  });

  it('a count that never arrives: the answer waits at most a second', async () => {
    const hub = new RelayHub();
    const wants = hub.open({ listChanged: () => {} })!;
    const started = Date.now();
    await hub.settled(wants.id, 2);
    expect(Date.now() - started).toBeGreaterThanOrEqual(900);
  });
});
