/**
 * The call-port protocol on its own (src/ports/): calls paired with answers by id, a deadline per
 * call, undeliverable notices paired with calls by position both ways, calls checked before
 * dispatch, close failing what waits, and an idle client keeping no thread alive. Real
 * MessageChannel ports on this thread; the task store and session directory tests run it across
 * real threads (including messages that cannot be deserialised).
 */
import { spawn } from 'node:child_process';
import { once } from 'node:events';
import { MessageChannel } from 'node:worker_threads';
import type { MessagePort } from 'node:worker_threads';
import { describe, expect, it } from 'vitest';
import { PortClient } from '../../src/ports/client.js';
import { PortHost } from '../../src/ports/host.js';
import { cleanupAfterEach } from '../helpers/cleanup.js';

const cleanup = cleanupAfterEach();

type Call = { id: number; readonly op: 'echo' | 'never'; readonly text: string };
type Answer = { readonly type: 'answer'; readonly id: number; readonly text: string };

const wording = { name: 'echo service', failure: 'fails' } as const;

function client(port: MessagePort, problems: string[], timeoutMs = 60_000): PortClient<Call, string> {
  const c: PortClient<Call, string> = new PortClient<Call, string>(port, {
    ...wording, timeoutMs, onProblem: (m) => problems.push(m),
    receive: (message) => {
      const m = message as Answer;
      if (m.text === 'FAILED') c.reject(m.id, new Error('failed by the host'));
      else c.resolve(m.id, m.text);
    },
  });
  cleanup(() => c.close());
  return c;
}

/** An echo host: answers 'echo' at once (or after `delayMs` for texts starting with 'slow'), never answers 'never'. */
function echoHost(port: MessagePort, problems: string[]): { host: PortHost; detached: () => boolean } {
  const host = new PortHost();
  let detached = false;
  host.attach<Call, Answer>(port, {
    ...wording, onProblem: (m) => problems.push(m),
    accept: (m): m is Call => typeof m === 'object' && m !== null && Number.isSafeInteger((m as Call).id) && ((m as Call).op === 'echo' || (m as Call).op === 'never'),
    serve: (call, link) => {
      if (call.op === 'never') return;
      const answer = () => link.answer(call.id, { type: 'answer', id: call.id, text: call.text.toUpperCase() });
      if (call.text.startsWith('slow')) setTimeout(answer, 50);
      else answer();
    },
    failed: (id) => ({ type: 'answer', id, text: 'FAILED' }),
    onDetach: () => { detached = true; },
  });
  cleanup(() => host.close());
  return { host, detached: () => detached };
}

/** Messages arriving on a raw port, for playing one end by hand. */
function raw(port: MessagePort): () => Record<string, unknown>[] {
  const got: Record<string, unknown>[] = [];
  port.on('message', (m: Record<string, unknown>) => got.push(m));
  cleanup(() => port.close());
  return () => got;
}

/** `promise`, or a failure after 3 s: a call paired wrongly waits for its (long) deadline instead. */
function within<T>(promise: Promise<T>): Promise<T> {
  let timer: ReturnType<typeof setTimeout> | undefined;
  return Promise.race([
    promise.finally(() => clearTimeout(timer)),
    new Promise<never>((_, reject) => { timer = setTimeout(() => reject(new Error('no answer within 3 s')), 3_000); }),
  ]);
}

async function until(what: string, test: () => boolean): Promise<void> {
  const end = Date.now() + 3_000;
  while (!test()) {
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await new Promise((r) => setTimeout(r, 5));
  }
}

describe('call ports', () => {
  it('pairs answers with their calls by id, whatever order they come back in', async () => {
    const { port1, port2 } = new MessageChannel();
    const problems: string[] = [];
    echoHost(port2, problems);
    const c = client(port1, problems);
    const slow = c.call({ id: 0, op: 'echo', text: 'slow one' });
    const fast = c.call({ id: 0, op: 'echo', text: 'fast one' });
    expect(await within(Promise.race([slow, fast]))).toBe('FAST ONE');
    expect(await within(slow)).toBe('SLOW ONE');
    expect(problems).toEqual([]);
  });

  it('a call with no answer fails after its deadline, is reported once, and the port serves on', async () => {
    const { port1, port2 } = new MessageChannel();
    const problems: string[] = [];
    echoHost(port2, problems);
    const c = client(port1, problems, 150);
    const started = Date.now();
    const never = c.call({ id: 0, op: 'never', text: '' }).then(() => 'resolved', (e: Error) => e.message);
    expect(await c.call({ id: 0, op: 'echo', text: 'still here' })).toBe('STILL HERE');
    expect(await within(never)).toBe('the echo service did not answer within 150 ms');
    expect(Date.now() - started).toBeGreaterThanOrEqual(140);
    expect(problems).toEqual(['sluice: a echo service call (never) had no answer within 150 ms; it fails']);
  });

  it('client: an undeliverable notice fails exactly the call its position names', async () => {
    const { port1, port2 } = new MessageChannel();
    const got = raw(port2);
    const problems: string[] = [];
    const c = client(port1, problems);
    const first = c.call({ id: 0, op: 'echo', text: 'a' });
    const second = c.call({ id: 0, op: 'echo', text: 'b' }).then(() => 'resolved', (e: Error) => `${e.name}: ${e.message}`);
    await until('both calls', () => got().length >= 2);
    // Message 2 was call 2 (ids and positions agree only by accident here: check by position).
    port2.postMessage({ type: 'undeliverable', seq: 2 });
    port2.postMessage({ type: 'answer', id: 1, text: 'A' });
    expect(await within(first)).toBe('A');
    expect(await within(second)).toBe('TypeError: the echo service could not read this call (a value that cannot cross threads)');
    expect(problems).toEqual(['sluice: the echo service could not read a call (echo); it fails']);
  });

  it('client: positions count its notices too, so a notice between calls does not shift the pairing', async () => {
    const { port1, port2 } = new MessageChannel();
    const got = raw(port2);
    const problems: string[] = [];
    const c = new PortClient<Call, string, { readonly op: 'ping' }>(port1, { ...wording, timeoutMs: 60_000, onProblem: (m) => problems.push(m), receive: () => {} });
    cleanup(() => c.close());
    const first = c.call({ id: 0, op: 'echo', text: 'a' }).then(() => 'resolved', () => 'failed');
    c.post({ op: 'ping' });
    const third = c.call({ id: 0, op: 'echo', text: 'c' }).then(() => 'resolved', () => 'failed');
    await until('three messages', () => got().length >= 3);
    expect(got().map((m) => m.op)).toEqual(['echo', 'ping', 'echo']);
    port2.postMessage({ type: 'undeliverable', seq: 3 });
    expect(await within(third)).toBe('failed');
    port2.postMessage({ type: 'undeliverable', seq: 2 }); // the ping: no call to fail
    port2.postMessage({ type: 'undeliverable', seq: 1 });
    expect(await within(first)).toBe('failed');
    expect(problems).toHaveLength(2);
  });

  it('host: an answer the client could not read is replaced by the failure answer; other positions name nothing', async () => {
    const { port1, port2 } = new MessageChannel();
    const got = raw(port1);
    const problems: string[] = [];
    echoHost(port2, problems);
    port1.postMessage({ id: 7, op: 'echo', text: 'x' });
    await until('the answer', () => got().length >= 1);
    port1.postMessage({ op: 'undeliverable', seq: 1 });
    port1.postMessage({ op: 'undeliverable', seq: 1 }); // named twice: answered once
    port1.postMessage({ op: 'undeliverable', seq: 99 });
    port1.postMessage({ id: 8, op: 'echo', text: 'y' });
    await until('four messages', () => got().length >= 3);
    expect(got()).toEqual([
      { type: 'answer', id: 7, text: 'X' },
      { type: 'answer', id: 7, text: 'FAILED' },
      { type: 'answer', id: 8, text: 'Y' },
    ]);
    expect(problems).toEqual(Array(3).fill('sluice: a echo service answer could not be read by its worker; the call fails'));
  });

  it('host: a call that fails the check is refused, reported, and answered with the failure when it has an id', async () => {
    const { port1, port2 } = new MessageChannel();
    const got = raw(port1);
    const problems: string[] = [];
    echoHost(port2, problems);
    port1.postMessage({ id: 1, op: 'drop-everything' });
    port1.postMessage('not a call');
    port1.postMessage({ id: 2.5, op: 'echo', text: 'z' });
    port1.postMessage({ id: 3, op: 'echo', text: 'ok' });
    await until('two answers', () => got().length >= 2);
    expect(got()).toEqual([{ type: 'answer', id: 1, text: 'FAILED' }, { type: 'answer', id: 3, text: 'OK' }]);
    expect(problems).toEqual(Array(3).fill('sluice: a malformed call to the echo service was refused'));
  });

  it('close fails what waits with transport_closed, and later calls too; the host detaches when the port closes', async () => {
    const { port1, port2 } = new MessageChannel();
    const problems: string[] = [];
    const { detached } = echoHost(port2, problems);
    const c = client(port1, problems);
    const waiting = c.call({ id: 0, op: 'never', text: '' }).catch((e: { code?: string }) => e.code);
    c.close();
    expect(await within(waiting)).toBe('transport_closed');
    expect(c.closed).toBe(true);
    await expect(c.call({ id: 0, op: 'echo', text: 'late' })).rejects.toMatchObject({ code: 'transport_closed', message: 'the echo service port is closed' });
    await until('the host detached', detached);
  });

  it('a call that cannot be cloned fails at once and is reported; nothing stays pending', async () => {
    const { port1, port2 } = new MessageChannel();
    const problems: string[] = [];
    echoHost(port2, problems);
    const c = client(port1, problems, 100);
    await expect(c.call({ id: 0, op: 'echo', text: (() => 1) as unknown as string })).rejects.toThrow();
    expect(problems).toEqual([expect.stringContaining('sluice: could not post to the echo service')]);
    expect(await c.call({ id: 0, op: 'echo', text: 'next' })).toBe('NEXT');
  });

  it('an idle client keeps no thread alive; a waiting call does, until its deadline', async () => {
    const script = (wait: boolean) => `
      import { MessageChannel } from 'node:worker_threads';
      import { PortClient } from ${JSON.stringify(new URL('../../dist/src/ports/client.js', import.meta.url).href)};
      const { port1, port2 } = new MessageChannel();
      port2.unref();
      // Timed inside the child, from after its imports to its exit: a loaded machine's slow process
      // start (a CI run saw two children's start-ups differ by more than the wait) does not count.
      const started = performance.now();
      process.on('exit', () => console.log('lived ' + Math.round(performance.now() - started)));
      const c = new PortClient(port1, { name: 'x', failure: 'fails', timeoutMs: 400, onProblem: () => {}, receive: () => {} });
      if (${wait}) c.call({ id: 0, op: 'never' }).catch(() => console.log('failed'));
    `;
    const run = async (wait: boolean): Promise<{ ms: number; out: string }> => {
      const child = spawn(process.execPath, ['--input-type=module', '-e', script(wait)]);
      cleanup(() => child.kill());
      let out = '';
      child.stdout.on('data', (d: Buffer) => { out += d.toString(); });
      await once(child, 'exit');
      const lines = out.trim().split('\n');
      const lived = /^lived (\d+)$/.exec(lines.pop() ?? '');
      expect(lived, out).not.toBeNull();
      return { ms: Number(lived![1]), out: lines.join('\n') };
    };
    const [idle, waiting] = await Promise.all([run(false), run(true)]);
    expect(idle.out).toBe('');
    expect(waiting.out).toBe('failed');
    expect(waiting.ms).toBeGreaterThanOrEqual(395); // held until its 400 ms deadline (timers may round down 1 ms)
    expect(idle.ms).toBeLessThan(waiting.ms - 250); // the idle one exited at once
  });
});
