/**
 * Issue 17's S1 ratios in one interleaved run, one pinned core (server on CPU 1, wrk on CPU 0):
 * the raw uWS ceiling (uws-echo.mjs) and Sluice's echo (sluice-echo.mjs, 1 HTTP worker) from a
 * sync handler (`echo`) and an async one (`echo_async`), at both eras, and the raw echo of the
 * 2026-07-28 request too (its bigger body is what that era costs any server), and the hardened
 * floor (uws-floor.mjs: the raw echo plus the per-request reads hardening needs, no protocol logic). Each rep runs the
 * endpoints in a rotated order, so drift favours none. Writes bench/results/async-ab.md (or `--out NAME`):
 * legacy ÷ ceiling, modern ÷ legacy, and async ÷ sync per era, per rep and as min–max and median.
 *
 *   npm run build && node dist/bench/async-ab.js [--reps 3] [--seconds 4] [--connections 32] [--label text]
 */
import { send } from './lib/http-client.js';
import { benchArgs } from './lib/args.js';
import { machineLine } from './lib/machine.js';
import { stopServer } from './lib/process.js';
import type { Running } from './lib/process.js';
import { writeResults } from './lib/report.js';
import { asyncOf, checkEcho, legacyEcho, modernEcho } from './http/contenders.js';
import type { Endpoint } from './http/wrk.js';
import { cpuPerRequest, ensureTools, start, wrk } from './http/wrk.js';

const { reps, seconds, label, out, connections } = benchArgs('Usage: node dist/bench/async-ab.js [options]\nS1 on uWS: the raw ceiling, the hardened floor and Sluice, sync and async, at both eras, one pinned core.', {
  reps: { type: 'number', integer: true, default: 3, help: 'rounds of every endpoint' },
  seconds: { type: 'number', default: 4, help: 'seconds per wrk run' },
  connections: { type: 'number', integer: true, default: 32, help: 'wrk connections' },
  label: { type: 'string', default: '', help: 'a note for the report\'s heading' },
  out: { type: 'string', default: 'async-ab.md', help: 'the report\'s file name under bench/results/' },
});

const legacy = legacyEcho();
const modern = modernEcho();
const kRuns = [
  { key: 'ceiling', label: 'raw uWS echo', endpoint: { path: '/mcp', method: 'POST', body: legacy.body, headers: { 'content-type': 'application/json' } } as Endpoint },
  { key: 'ceilingModern', label: 'raw uWS echo, 2026-07-28 request', endpoint: { path: '/mcp', method: 'POST', body: modern.body, headers: modern.headers } as Endpoint },
  { key: 'floor', label: 'hardened uWS floor', endpoint: { path: '/mcp', method: 'POST', body: legacy.body, headers: legacy.headers } as Endpoint },
  { key: 'legacy', label: 'legacy sync', endpoint: legacy },
  { key: 'legacyAsync', label: 'legacy async', endpoint: asyncOf(legacy) },
  { key: 'modern', label: '2026-07-28 sync', endpoint: modern },
  { key: 'modernAsync', label: '2026-07-28 async', endpoint: asyncOf(modern) },
] as const;
type Key = (typeof kRuns)[number]['key'];
const kRatios: readonly { name: string; of: Key; over: Key }[] = [
  { name: 'legacy ÷ ceiling', of: 'legacy', over: 'ceiling' },
  { name: 'hardened floor ÷ ceiling', of: 'floor', over: 'ceiling' },
  { name: 'legacy ÷ hardened floor', of: 'legacy', over: 'floor' },
  { name: '2026-07-28 ÷ ceiling', of: 'modern', over: 'ceiling' },
  { name: '2026-07-28 ÷ legacy', of: 'modern', over: 'legacy' },
  { name: 'ceiling: 2026-07-28 request ÷ legacy request', of: 'ceilingModern', over: 'ceiling' },
  { name: '2026-07-28 ÷ its own ceiling', of: 'modern', over: 'ceilingModern' },
  { name: 'async ÷ sync, legacy', of: 'legacyAsync', over: 'legacy' },
  { name: 'async ÷ sync, 2026-07-28', of: 'modernAsync', over: 'modern' },
];

ensureTools();
const ceiling = await start('uws-echo.mjs');
const floor = await start('uws-floor.mjs');
const sluice = await start('sluice-echo.mjs', ['nosessions', '1']);
const serverOf = (key: Key): Running => (key === 'ceiling' || key === 'ceilingModern' ? ceiling : key === 'floor' ? floor : sluice);
const rps = Object.fromEntries(kRuns.map((r) => [r.key, [] as number[]])) as Record<Key, number[]>;
const cpu = Object.fromEntries(kRuns.map((r) => [r.key, [] as number[]])) as Record<Key, number[]>;
try {
  for (const r of kRuns) {
    if (serverOf(r.key) === sluice) checkEcho(r.label, await send(sluice.port, r.endpoint));
    await wrk(serverOf(r.key).port, r.endpoint, connections, 2, serverOf(r.key).pid); // warm-up (JIT)
  }
  for (let rep = 0; rep < reps; rep++) {
    for (let k = 0; k < kRuns.length; k++) {
      const r = kRuns[(k + rep) % kRuns.length]!;
      const s = serverOf(r.key);
      // wrk, not `sluice bench`: these are ratios to the raw uWS ceiling, which needs the strongest
      // generator on the other core (wrk still costs less per request: about 13.5 µs of CPU against sluice bench's 14.6 at 53k req/s, bench/results/loadgen.md; near a ceiling every µs of the generator's core counts).
      const w = await wrk(s.port, r.endpoint, connections, seconds, s.pid);
      if (w.non2xx > 0) throw new Error(`${r.label}: ${w.non2xx} non-2xx responses`);
      rps[r.key].push(w.rps);
      /** Server CPU µs per request: less at the mercy of other load on the machine than req/s. */
      cpu[r.key].push(cpuPerRequest(w));
      process.stderr.write(`rep ${rep + 1} ${r.label}: ${w.rps.toFixed(0)} req/s, ${cpu[r.key].at(-1)!.toFixed(1)} CPU µs/req\n`);
    }
  }
} finally {
  await stopServer(sluice);
  await stopServer(floor);
  await stopServer(ceiling);
}

const f = (x: number, d = 0): string => x.toFixed(d);
const median = (xs: number[]): number => { const s = [...xs].sort((a, b) => a - b); return s[s.length >> 1]!; };
const ratios = (of: Key, over: Key, table: Record<Key, number[]>, inverse = false): number[] =>
  table[of].map((x, i) => (inverse ? table[over][i]! / x : x / table[over][i]!));
const lines = [
  `# S1 echo ratios: ceiling, eras, async${label === '' ? '' : `: ${label}`}`, '',
  `One HTTP worker (\`sluice-echo.mjs nosessions 1\`) and the raw uWS echo (\`uws-echo.mjs\`), server pinned to CPU 1 and wrk -t1 to CPU 0, c = ${connections}, ${seconds} s per run, ${reps} reps, the ${kRuns.length} runs of a rep in a rotated order. ${machineLine()}`, '',
  'Command: `node dist/bench/async-ab.js' + ` --reps ${reps} --seconds ${seconds} --connections ${connections}\``, '',
  '| rep | ' + kRuns.map((r) => `${r.label} req/s`).join(' | ') + ' |', '|---:|' + kRuns.map(() => '---:').join('|') + '|',
  ...rps.ceiling.map((_, i) => `| ${i + 1} | ${kRuns.map((r) => `${f(rps[r.key][i]!)} (${f(cpu[r.key][i]!, 1)} µs)`).join(' | ')} |`),
  '', '(in brackets: server CPU µs per request)', '',
  'Ratios: req/s, and CPU per request (inverse: `over ÷ of`, so 1 = as cheap, < 1 = costs more).', '',
  '| ratio | req/s per rep | req/s min–max | median | CPU/req per rep | CPU median |', '|---|---|---|---:|---|---:|',
];
for (const q of kRatios) {
  const a = ratios(q.of, q.over, rps);
  const c = ratios(q.of, q.over, cpu, true);
  lines.push(`| ${q.name} | ${a.map((x) => f(x, 3)).join(', ')} | ${f(Math.min(...a), 3)}–${f(Math.max(...a), 3)} | ${f(median(a), 3)} | ${c.map((x) => f(x, 3)).join(', ')} | ${f(median(c), 3)} |`);
}
lines.push('');
console.log(writeResults([[out, lines.join('\n')]]).join('\n'));
console.log(lines.join('\n'));
