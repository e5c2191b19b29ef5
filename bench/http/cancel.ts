/**
 * S4 over HTTP: a legacy notifications/cancelled POST or a 2026-07-28 disconnect → the tool saw it.
 * No side effects on import.
 */
import { existsSync, readFileSync } from 'node:fs';
import { Agent, request } from 'node:http';
import { join } from 'node:path';
import { send } from '../lib/http-client.js';
import { stopServer } from '../lib/process.js';
import { kAccept, legacyInit } from './contenders.js';
import { start, work } from './wrk.js';

export interface Latency { mode: string; samples: number[]; rounds: number[][] }

/**
 * S4 over HTTP: a cancel POST (legacy) or a closed stream (2026-07-28) → the tool saw it, in ms.
 * Kept as a hand-written driver, not `sluice bench --cancel-after`: the figure is when the *tool*
 * saw the cancel (the tool's own record, same clock), sent once the tool has started; `sluice
 * bench` cancels on a timer from the send and times what the client sees (the answer stopping, or
 * a result sent after the cancel). At 2026-07-28 the client closes the stream itself, so its
 * "answer stops" is zero by construction and no tool answer follows: it cannot give either row.
 * The two modes alternate; the samples are also split into `reps` consecutive rounds for a p50 range.
 */
export async function s4(samples: number, reps: number): Promise<Latency[]> {
  const s = await start('sluice-cancel.mjs');
  const rounds = () => Array.from({ length: reps }, () => [] as number[]);
  const out: Latency[] = [{ mode: 'legacy cancel POST → tool observed', samples: [], rounds: rounds() }, { mode: '2026-07-28 disconnect → tool observed', samples: [], rounds: rounds() }];
  try {
    const init = await send(s.port, { path: '/mcp', method: 'POST', body: legacyInit, headers: { 'content-type': 'application/json', accept: kAccept } });
    const session = String(init.headers['mcp-session-id']);
    const legacy = { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25', 'mcp-session-id': session };
    const canceller = new Agent({ keepAlive: true, maxSockets: 1 });
    for (let i = 0; i < samples * 2; i++) {
      const modern = i % 2 === 1;
      const record = join(work(), `cancel-${i}.txt`);
      const params = { name: 'wait_cancel', arguments: { record }, ...(modern ? { _meta: { 'io.modelcontextprotocol/protocolVersion': '2026-07-28', 'io.modelcontextprotocol/clientCapabilities': {} } } : {}) };
      const headers = modern
        ? { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2026-07-28', 'mcp-method': 'tools/call', 'mcp-name': 'wait_cancel' }
        : legacy;
      const body = JSON.stringify({ jsonrpc: '2.0', id: 1000 + i, method: 'tools/call', params });
      const req = request({ host: '127.0.0.1', port: s.port, path: '/mcp', method: 'POST', headers, agent: false });
      req.on('error', () => {});
      req.on('response', (res) => res.resume());
      req.end(body);
      while (!existsSync(record) || !readFileSync(record, 'utf8').includes('started')) await new Promise((r) => setTimeout(r, 1));
      await new Promise((r) => setTimeout(r, 2));
      const t0 = process.hrtime.bigint();
      if (modern) req.destroy();
      else await send(s.port, { path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', method: 'notifications/cancelled', params: { requestId: 1000 + i } }), headers: legacy }, canceller);
      let seen: bigint | undefined;
      for (let wait = 0; seen === undefined && wait < 5000; wait++) {
        const m = /seen (\d+)/.exec(readFileSync(record, 'utf8'));
        if (m !== null) seen = BigInt(m[1]);
        else await new Promise((r) => setTimeout(r, 1));
      }
      if (seen !== undefined && i >= 4) {
        const l = out[modern ? 1 : 0];
        l.samples.push(Number(seen - t0) / 1e6); // first few: warm-up
        l.rounds[Math.min(reps - 1, Math.floor((i / (samples * 2)) * reps))].push(Number(seen - t0) / 1e6);
      }
    }
    canceller.destroy();
  } finally {
    await stopServer(s);
  }
  return out;
}
