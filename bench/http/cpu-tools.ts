/**
 * S3: CPU tools inline vs pool. No side effects on import.
 */
import { send } from '../lib/http-client.js';
import { stopServer } from '../lib/process.js';
import { kAccept } from './contenders.js';
import { start, wrk } from './wrk.js';
import type { Endpoint } from './wrk.js';

export interface CpuRow { us: number; mode: string; p50ms: number[]; p99ms: number[]; rps: number[]; loopP50ms: number[]; loopP99ms: number[]; loopMaxMs: number[] }

/**
 * S3: a CPU tool of 50 µs / 1 ms / 10 ms, inline vs pool: latency at c=1, throughput at c=8, and
 * the HTTP worker's event-loop delay during the c=8 run (what every other request on that worker
 * waits), read from a `monitorEventLoopDelay` histogram inside the worker.
 */
export async function s3(seconds: number, reps: number): Promise<CpuRow[]> {
  const s = await start('sluice-cpu.mjs');
  const out: CpuRow[] = [];
  const call = (name: string, args: Record<string, unknown>): Endpoint => ({ path: '/mcp', method: 'POST', body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }), headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' } });
  const loopDelay = async (start: boolean): Promise<{ p50: number; p99: number; max: number }> => {
    const res = await send(s.port, call('loop_delay', { start }));
    return JSON.parse((JSON.parse(res.body) as { result: { content: { text: string }[] } }).result.content[0].text) as { p50: number; p99: number; max: number };
  };
  try {
    for (let rep = 0; rep < reps; rep++) {
      for (const us of [50, 1000, 10_000]) {
        for (const mode of ['inline', 'pool']) {
          const e = call(`cpu_${mode}`, { us });
          const sample = await send(s.port, e);
          if (sample.status !== 200 || !sample.body.includes('"result"')) throw new Error(`S3 ${mode}: wrong sample ${sample.body.slice(0, 120)}`);
          await wrk(s.port, e, 1, 1, s.pid);
          const one = await wrk(s.port, e, 1, seconds, s.pid);
          await loopDelay(true);
          const many = await wrk(s.port, e, 8, seconds, s.pid);
          const loop = await loopDelay(false);
          let row = out.find((r) => r.us === us && r.mode === mode);
          if (row === undefined) out.push(row = { us, mode, p50ms: [], p99ms: [], rps: [], loopP50ms: [], loopP99ms: [], loopMaxMs: [] });
          row.p50ms.push(one.p50ms);
          row.p99ms.push(one.p99ms);
          row.rps.push(many.rps);
          row.loopP50ms.push(loop.p50);
          row.loopP99ms.push(loop.p99);
          row.loopMaxMs.push(loop.max);
        }
      }
    }
  } finally {
    await stopServer(s);
  }
  return out;
}
