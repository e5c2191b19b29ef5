/**
 * S8: what argument validation costs on the tool path. One Sluice server (1 HTTP worker, pinned)
 * serves, for 0, 5 and 20 properties, a tool with the full schema and one with `{ type: 'object' }`
 * only; wrk sends both the very same arguments (c = 32), interleaved, so the bodies, parsing and
 * answers are equal and the difference is the check. Beside it, the check alone in this process
 * (`checkArguments`, the same compiled validator). No side effects on import.
 */
import { defineTool } from '../../src/index.js';
import { Refusal, checkArguments } from '../../src/tools/define.js';
import { send } from '../lib/http-client.js';
import { stopServer } from '../lib/process.js';
import { kPropertyCounts, shape } from '../lib/schemas.js';
import { median, range } from '../lib/stats.js';
import type { Range } from '../lib/stats.js';
import { checkEcho, kAccept } from './contenders.js';
import type { Endpoint } from './wrk.js';
import { start, wrk } from './wrk.js';

export interface ValidationRow {
  properties: number;
  /** req/s of the checked and the open tool, per repeat. */
  checked: number[];
  open: number[];
  /** checked ÷ open per repeat. */
  ratio: Range;
  /** 1/checked − 1/open per repeat, µs per request (negative: within noise). */
  costUs: Range;
  /** The check alone in one thread, ns per call (median of rounds). */
  checkNs: number;
}

function call(name: string, args: Record<string, unknown>): Endpoint {
  return {
    path: '/mcp', method: 'POST',
    body: JSON.stringify({ jsonrpc: '2.0', id: 1, method: 'tools/call', params: { name, arguments: args } }),
    headers: { 'content-type': 'application/json', accept: kAccept, 'mcp-protocol-version': '2025-11-25' },
  };
}

/** Median ns per `checkArguments` call of a tool with this many properties (in this process). */
function checkCost(count: number): number {
  const { json, args } = shape(count);
  const tool = defineTool({ name: `check_${count}`, description: '', inputSchema: json, handler: () => '' });
  const first = checkArguments(tool, args);
  if (first instanceof Refusal || first instanceof Promise) throw new Error(`S8: the check refused its own arguments (${count})`);
  const calls = 200_000;
  const rounds: number[] = [];
  let refused = 0;
  for (let round = 0; round <= 7; round++) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < calls; i++) if (checkArguments(tool, args) instanceof Refusal) refused++;
    if (round > 0) rounds.push(Number(process.hrtime.bigint() - t0) / calls);
  }
  if (refused > 0) throw new Error('S8: a check refused');
  return median(rounds);
}

export async function s8(seconds: number, reps: number): Promise<ValidationRow[]> {
  const s = await start('sluice-validation.mjs');
  try {
    const pairs = kPropertyCounts.map((n) => ({ n, checked: call(`checked_${n}`, shape(n).args), open: call(`open_${n}`, shape(n).args) }));
    for (const p of pairs) {
      checkEcho(`checked_${p.n}`, await send(s.port, p.checked));
      checkEcho(`open_${p.n}`, await send(s.port, p.open));
      // A wrong argument must be refused by the checked tool (so the check really runs).
      const bad = await send(s.port, call(`checked_${p.n}`, { ...shape(p.n).args, extra: 1 }));
      if (!bad.body.includes('"error"') && !bad.body.includes('"isError":true')) throw new Error(`S8: checked_${p.n} accepted an extra property`);
      await wrk(s.port, p.checked, 32, 1, s.pid);
      await wrk(s.port, p.open, 32, 1, s.pid);
    }
    const measured = pairs.map(() => ({ checked: [] as number[], open: [] as number[] }));
    for (let rep = 0; rep < reps; rep++) {
      for (const [i, p] of pairs.entries()) {
        // Alternate which goes first, so a drift within a repeat does not favour one side.
        const order = rep % 2 === 0 ? (['checked', 'open'] as const) : (['open', 'checked'] as const);
        for (const side of order) {
          // wrk, not `sluice bench`: a difference of tenths of a µs per request at ~80-90k req/s needs
          // the server saturated; `sluice bench` would saturate its own core first (about 32 µs of generator CPU per request against wrk's ~19, bench/results/loadgen.md).
          const r = await wrk(s.port, p[side], 32, seconds, s.pid);
          if (r.non2xx > 0) throw new Error(`S8 ${side}_${p.n}: ${r.non2xx} non-2xx responses`);
          measured[i]![side].push(r.rps);
        }
      }
    }
    return pairs.map((p, i) => {
      const { checked, open } = measured[i]!;
      return {
        properties: p.n, checked, open,
        ratio: range(checked.map((c, j) => c / open[j]!)),
        costUs: range(checked.map((c, j) => 1e6 / c - 1e6 / open[j]!)),
        checkNs: checkCost(p.n),
      };
    });
  } finally {
    await stopServer(s);
  }
}
