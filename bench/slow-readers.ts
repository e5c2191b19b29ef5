/**
 * `npm run bench:slow-readers [-- --seconds N --attackers N --clients N --rss-bound-mb N --flood-mode burst|tight]`:
 * a slow-reader soak. One Sluice server (two HTTP workers, bench/servers/sluice-slow-readers.mjs)
 * runs pinned to CPU 1; this process, pinned to CPU 0, drives it (perf-anchors §4).
 *
 * Three phases on the same server process (not restarted), always in this order, each with the
 * same echo load for the same `seconds`:
 * - Warm-up (2 s of echo, not recorded), so every phase sees a JIT-warm server.
 * - Phase A "baseline": `clients` keep-alive loops call `echo` (2026-07-28 requests), nothing else.
 * - Phase B "reading": the same echo load plus `attackers` raw sockets, each calling `flood` on a
 *   text/event-stream reply (even attackers: legacy session, whose log level defaults to all; odd
 *   attackers: 2026-07-28 with _meta logLevel 'debug') and READING the stream (drained, discarded).
 *   This is the tool load without the attack.
 * - Phase C "stalled": the same attackers and flood calls, but each reads the response head and
 *   then stops reading, so the kernel buffers fill and the server's writes back up (the attack). An
 *   attacker the server closes reconnects after a short pause.
 * In B and C the attackers start 1 s before the echo load. C/B is the slow readers' own effect on
 * the echo p99 (the issue's "within 2x of the no-attack run" is judged on it); C/A and B/A are
 * reported for information (B/A is the cost of the flood tool itself).
 *
 * `flood` modes (`--flood-mode`): 'burst' (default), a realistic chatty tool: 10 progress + 10 log
 * messages of 1 kB, then a 1 ms timer, until the phase ends or it is cancelled; 'tight', the old CPU
 * burner (as fast as it can, setImmediate every 50 iterations), whose own CPU cost dominates.
 *
 * Every second: server RSS (/proc/<pid>/status VmRSS) and /metrics; per phase also the server's and
 * this process's CPU time. Every 250 ms the RSS growth over the phase's start is checked against
 * `--rss-bound-mb` (default 512): past it, the phase is aborted at once (so an unbounded server
 * cannot eat the box) and the run exits 1, as it does if the server dies. Latency ratios are
 * reported, not enforced. Only 127.0.0.1 is targeted, every loop is bounded in time, and the
 * attackers and the server are stopped at the end. Results: bench/results/slow-readers-latest.{md,json,svg}.
 *
 * bench/slow-readers/: load.ts (echo clients and attackers), phases.ts (a phase and the server's
 * watch), report.ts (Markdown, JSON, SVG).
 */
import { join } from 'node:path';
import { benchArgs } from './lib/args.js';
import { loadAverage, machineLine, pin, pinSelf } from './lib/machine.js';
import { startServer, stopServer } from './lib/process.js';
import { kRoot } from './lib/report.js';
import { echoLoad } from './slow-readers/load.js';
import type { FloodMode, Options } from './slow-readers/load.js';
import { notRun, runPhase } from './slow-readers/phases.js';
import type { PhaseName, PhaseResult } from './slow-readers/phases.js';
import { writeReport } from './slow-readers/report.js';
import type { Report } from './slow-readers/report.js';

function parseOptions(): Options {
  const o = benchArgs('Usage: npm run bench:slow-readers [-- options]\nStalled and reading SSE clients against a server beside an echo load: RSS bounded, echo p99 compared.', {
    seconds: { type: 'number', default: 20, help: 'seconds per phase' },
    attackers: { type: 'number', integer: true, default: 8, help: 'slow-reading clients' },
    clients: { type: 'number', integer: true, default: 16, help: 'echo clients' },
    'rss-bound-mb': { type: 'number', default: 512, help: 'RSS growth that fails the run' },
    'flood-mode': { type: 'string', default: 'burst', choices: ['burst', 'tight'], help: 'how the streams are fed' },
  });
  return { seconds: o.seconds, attackers: o.attackers, clients: o.clients, rssBoundMb: o['rss-bound-mb'], floodMode: o['flood-mode'] as FloodMode };
}

async function main(): Promise<void> {
  const o = parseOptions();
  const loadStart = loadAverage();
  pinSelf(0); // this process, every thread, on CPU 0, away from the server on CPU 1
  const server = await startServer([join(kRoot, 'bench', 'servers', 'sluice-slow-readers.mjs')], 1);
  const phases = {} as Record<PhaseName, PhaseResult>;
  try {
    // Warm-up: JIT and heaps of both workers, not recorded.
    await echoLoad(server.port, o.clients, Date.now() + 2000, new AbortController().signal);
    let firstStart: number | undefined;
    let dead = false;
    for (const [name, mode] of [['baseline', undefined], ['reading', 'reading'], ['stalled', 'stalled']] as const) {
      if (dead) { phases[name] = notRun(name); continue; }
      if (firstStart === undefined) firstStart = Date.now();
      phases[name] = await runPhase(name, server, o, firstStart, mode);
      dead = phases[name].serverDied;
    }
  } finally {
    await stopServer(server);
  }
  const { baseline: A, reading: B, stalled: C } = phases;
  const ratios = {
    p99StalledOverReading: C.echo.p99ms / B.echo.p99ms,
    p99StalledOverBaseline: C.echo.p99ms / A.echo.p99ms,
    p99ReadingOverBaseline: B.echo.p99ms / A.echo.p99ms,
    rpsStalledOverReading: C.echo.rps / B.echo.rps,
  };
  const exceeded = [A, B, C].find((p) => p.boundExceededAt !== undefined);
  const grossFailure = [A, B, C].some((p) => p.serverDied) ? 'the server died'
    : exceeded !== undefined ? `RSS growth during phase ${exceeded.name} passed ${o.rssBoundMb} MB (bound exceeded at t=${exceeded.boundExceededAt!.toFixed(1)} s)`
      : undefined;
  const p99Met = ratios.p99StalledOverReading <= 2;
  const verdict = grossFailure !== undefined ? `FAILED: ${grossFailure}`
    : `RSS bounded (grew ${C.rss.growthMb.toFixed(1)} MB with stalled readers, ${B.rss.growthMb.toFixed(1)} MB with reading ones); echo p99 C/B ${ratios.p99StalledOverReading.toFixed(2)} ${p99Met ? 'within' : '**above**'} the 2× target (C/A ${ratios.p99StalledOverBaseline.toFixed(2)}, B/A ${ratios.p99ReadingOverBaseline.toFixed(2)}, informational)${o.floodMode === 'tight' ? '; flood mode **tight** (CPU-burning tool)' : ''}`;
  const args = process.argv.slice(2).join(' ');
  const report: Report = {
    date: new Date().toISOString(), machine: machineLine(), pinned: pin,
    loadAvg: { start: loadStart, end: loadAverage() },
    command: `npm run bench:slow-readers${args === '' ? '' : ` -- ${args}`}`, options: o,
    phases, ratios, p99Met, grossFailure, verdict,
  };
  process.stdout.write(writeReport(report));
  if (grossFailure !== undefined) {
    process.stderr.write(`bench:slow-readers: ${grossFailure}\n`);
    process.exitCode = 1;
  }
}

await main();
