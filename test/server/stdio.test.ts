import { once } from 'node:events';
import { PassThrough } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { serveStdioServer } from '../../src/index.js';
import { stdioServer } from '../helpers/stdio.js';
import { kToolsModule, recordPath, recorded, until } from '../helpers/server.js';

/** The fixture tools over stdio. */
function stdio(maxBodyBytes?: number) {
  return stdioServer({ tools: kToolsModule, ...(maxBodyBytes === undefined ? {} : { maxBodyBytes }) });
}

describe('stdio transport', () => {
  it('serves requests, streams progress, and a notifications/cancelled line stops the tool with no response', async () => {
    const s = stdio();
    s.send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } });
    s.send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    const record = recordPath();
    s.send({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'block', arguments: { ms: 10_000, tick: 20, record }, _meta: { progressToken: 'p' } } });
    s.send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'concurrent' } } });
    await until(() => s.lines.filter((l) => l.method === 'notifications/progress').length >= 2, 10_000, 'progress');
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 2, reason: 'enough' } });
    await until(() => recorded(record).some((l) => l.startsWith('cancelled')), 10_000, 'the cancel');
    expect(recorded(record).at(-1)).toContain('reason=enough');
    s.input.end();
    await s.done;
    expect(s.lines.find((l) => l.id === 1)).toMatchObject({ result: { protocolVersion: '2025-06-18' } });
    expect(s.lines.find((l) => l.id === 3)).toMatchObject({ result: { content: [{ type: 'text', text: 'concurrent' }] } });
    expect(s.lines.some((l) => l.id === 2)).toBe(false); // cancelled: no response at all
  });

  it('a client that does not read its answers: the server stops reading its requests (nothing piles up), then answers every one once read', async () => {
    const input = new PassThrough();
    const output = new PassThrough(); // not read until the end
    const done = serveStdioServer({ tools: kToolsModule, input, output, log: () => {} });
    input.write(`${JSON.stringify({ jsonrpc: '2.0', id: 0, method: 'initialize', params: { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 't', version: '1' } } })}\n`);
    const text = 'y'.repeat(10_000);
    let sent = 0;
    while (sent < 2_000) {
      sent++;
      if (input.write(`${JSON.stringify({ jsonrpc: '2.0', id: sent, method: 'tools/call', params: { name: 'echo', arguments: { text } } })}\n`)) continue;
      const drained = await Promise.race([once(input, 'drain').then(() => true), new Promise<boolean>((r) => setTimeout(() => r(false), 1_000))]);
      if (!drained) break;
    }
    // It stopped taking requests long before 2 000 (20 MB of answers): a few answers wait, not all.
    expect(sent).toBeLessThan(500);
    expect(output.readableLength).toBeLessThan(2 << 20);
    const ids = new Set<unknown>();
    let buffered = '';
    output.on('data', (chunk: Buffer) => {
      buffered += chunk.toString('utf8');
      let i;
      while ((i = buffered.indexOf('\n')) !== -1) {
        const line = JSON.parse(buffered.slice(0, i)) as { id?: unknown; result?: { content?: Array<{ text?: string }> } };
        if (line.result?.content?.[0]?.text === text) ids.add(line.id);
        buffered = buffered.slice(i + 1);
      }
    });
    await until(() => ids.size === sent, 20_000, 'every request answered once read');
    input.end();
    await done;
  });

  it('answers malformed lines with errors, never a notification, and carries on', async () => {
    const s = stdio(1024);
    s.send('not json');
    s.send('[1,2]');
    s.send({ jsonrpc: '2.0', id: 1.5, method: 'ping' });
    s.send({ jsonrpc: '2.0', id: 'x'.repeat(300), method: 'ping' });
    s.send({ jsonrpc: '2.0', method: 'notifications/cancelled', params: [1] }); // malformed notification: logged only
    s.send(JSON.stringify({ jsonrpc: '2.0', id: 9, method: 'tools/call', params: { name: 'echo', arguments: { text: 'y'.repeat(5000) } } }));
    s.send({ jsonrpc: '2.0', id: 10, method: 'tools/call', params: { name: 'echo', arguments: { text: 'still here' } } });
    s.send({ jsonrpc: '2.0', id: 11, method: 'tools/call', params: { name: 'spin', arguments: { ms: 5 } } });
    await until(() => s.lines.some((l) => l.id === 11), 10_000, 'the last answer');
    s.input.end();
    await s.done;
    const codes = s.lines.filter((l) => l.error !== undefined).map((l) => [l.id, (l.error as { code: number }).code]);
    expect(codes).toEqual([[null, -32700], [null, -32600], [null, -32600], [null, -32600], [null, -32700]]);
    expect(s.logs.some((l) => l.includes('notifications/cancelled refused'))).toBe(true);
    expect(s.lines.find((l) => l.id === 10)).toMatchObject({ result: { content: [{ text: 'still here' }] } });
    expect(s.lines.find((l) => l.id === 11)).toMatchObject({ result: { structuredContent: { finished: true } } });
  });

  it('a last line without its newline is served when the input ends (printf … | sluice serve --stdio); a broken one is refused', async () => {
    const s = stdio();
    s.send({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name: 'echo', arguments: { text: 'first' } } });
    s.input.write(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'no newline' } } }).slice(0, 20));
    s.input.end(JSON.stringify({ jsonrpc: '2.0', id: 2, method: 'tools/call', params: { name: 'echo', arguments: { text: 'no newline' } } }).slice(20));
    await s.done;
    expect(s.lines.find((l) => l.id === 2)).toMatchObject({ result: { content: [{ type: 'text', text: 'no newline' }] } });

    const broken = stdio();
    broken.input.end('{"jsonrpc":"2.0","id":3,"meth');
    await broken.done;
    expect(broken.lines).toEqual([{ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) }]);

    const tooLong = stdio(64);
    tooLong.input.end(`{"jsonrpc":"2.0","id":4,"method":"ping","params":{"pad":"${'x'.repeat(100)}"}}`);
    await tooLong.done;
    expect(tooLong.lines).toEqual([{ jsonrpc: '2.0', id: null, error: expect.objectContaining({ code: -32700 }) }]); // refused once, as any over-long line
  });
});
