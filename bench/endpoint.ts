/**
 * Sluice's own JavaScript per request, with no HTTP library and no socket: `HttpEndpoint.handle`
 * (the header rules, the body read as a message, the era, the engine, the registry row, the tool,
 * the result's checks and encoding, the release) over an in-memory Exchange, against the raw echo's
 * JavaScript (parse the body, build the result, stringify it, measure it: what node-echo.mjs and
 * uws-echo.mjs do per request), for the bodies of S1 at both eras, from a sync and an async tool.
 *
 * Why: the wrk runs of `bench:node-lines` place a row within about ±0.1 between runs on this VM,
 * while this loop repeats within a few per cent, so a cut in the request path shows here first.
 * In a server the same code costs several times more per request than in this loop (its code and
 * data leave the caches between requests, as node:http's own run), so read the ratio, not the ns,
 * as what a cut is worth.
 *
 * One process pinned to CPU 1; per rep every case runs once (raw, then Sluice, per era, rotated
 * per rep), each `--requests` requests after a warm-up; CPU ns per request from process.cpuUsage.
 * Writes bench/results/endpoint.{md,svg} (or `--out NAME`).
 *
 *   npm run build && node dist/bench/endpoint.js [--reps 5] [--requests 200000] [--out endpoint]
 *   node dist/bench/endpoint.js --smoke      (npm run bench:smoke, in CI: every case once, 20 000
 *                                             requests, every answer checked, no timing judged, no file written)
 */
import { join, relative } from 'node:path';
import { pathToFileURL } from 'node:url';
import { collectCatalog } from '../src/catalog/catalog.js';
import { Engine } from '../src/protocol/engine.js';
import { createRegistry } from '../src/registry/index.js';
import { resolveOptions } from '../src/server/options.js';
import { ServerCounters } from '../src/telemetry/counters.js';
import { HttpEndpoint } from '../src/transport/http/endpoint.js';
import type { BodyCallback, Exchange } from '../src/transport/http/exchange.js';
import { benchArgs } from './lib/args.js';
import { machineLine, pinSelf } from './lib/machine.js';
import { kRoot, writeResults } from './lib/report.js';
import { median, range } from './lib/stats.js';
import { svgBars } from './lib/svg.js';
import { legacyEcho, modernEcho } from './http/contenders.js';
import type { Endpoint } from './http/wrk.js';
import { kServers } from './http/wrk.js';

const args = benchArgs('Usage: node dist/bench/endpoint.js [options]\nSluice\'s JavaScript per request over an in-memory Exchange, against the raw echo\'s.', {
  reps: { type: 'number', integer: true, default: 5, help: 'rounds of every case' },
  requests: { type: 'number', integer: true, default: 200_000, help: 'requests per case per rep' },
  out: { type: 'string', default: 'endpoint', help: 'results under bench/results/NAME.{md,svg}' },
  smoke: { type: 'flag', help: 'every case once, 20 000 requests, answers checked, no file written (CI)' },
});
const smoke = args.smoke;
const reps = smoke ? 1 : args.reps;
const requests = smoke ? 20_000 : args.requests;
const out = args.out;

/** The wrk servers' tools module (bench/servers/sluice-tools.mjs: `echo` and `echo_async`), loaded here too. */
const kToolsModule = pathToFileURL(join(kServers, 'sluice-tools.mjs'));
const kTools = ((await import(kToolsModule.href)) as { default: unknown }).default;
/** The raw echoes' answer (bench/servers/echo-answer.mjs), the one the ceiling servers build. */
interface EchoRequest { id: number; params: { arguments: { text: string } } }
const { echoAnswer } = (await import(pathToFileURL(join(kServers, 'echo-answer.mjs')).href)) as { echoAnswer: (m: EchoRequest) => string };

/** An Exchange whose request is in memory, the whole body at once, and whose response is kept (last one only). */
class MemoryExchange implements Exchange {
  readonly method = 'POST';
  readonly path = '/mcp';
  readonly remoteAddress = '127.0.0.1';
  readonly duplicateHeader = undefined;
  readonly aborted = false;
  readonly bufferedBytes = 0;
  readonly #headers: ReadonlyMap<string, string>;
  readonly #body: Uint8Array;
  readonly #sink: Sink;

  constructor(headers: ReadonlyMap<string, string>, body: Uint8Array, sink: Sink) {
    this.#headers = headers;
    this.#body = body;
    this.#sink = sink;
  }

  header(name: string): string | undefined { return this.#headers.get(name); }
  readBody(_limit: number, done: BodyCallback): void { done(this.#body); }
  /** Measures the body as both adapters do for content-length (the raw echo does too). */
  respond(status: number, _headers: readonly (readonly [string, string])[], body: string): void {
    this.#sink.status = status;
    this.#sink.body = body;
    this.#sink.bytes = Buffer.byteLength(body);
    this.#sink.answered?.();
  }
  onAbort(): void {}
  startStream(): void { throw new Error('the echo must not stream'); }
  write(): boolean { throw new Error('the echo must not stream'); }
  end(): void {}
  onDrain(): void {}
  destroy(): void {}
}

/** The last response; `answered` (async cases) is called when it is written. */
interface Sink { status: number; body: string; bytes: number; answered: (() => void) | undefined }

/** One HTTP worker's endpoint over a fresh engine, with the server's default options (no sessions, bound to loopback). */
function sluiceEndpoint(): HttpEndpoint {
  const o = resolveOptions({ tools: kToolsModule, port: 0 });
  const engine = new Engine({
    registry: createRegistry(), counters: ServerCounters.create(2), catalog: collectCatalog(kTools),
    serverInfo: o.serverInfo, streamCancelTimeoutMs: o.streamCancelTimeoutMs, clientRequestTimeoutMs: o.clientRequestTimeoutMs, log: () => {}, stateKeys: [new Uint8Array(32).fill(7)],
  });
  return new HttpEndpoint(engine, {
    path: o.path, allowedOrigins: o.allowedOrigins, sessions: undefined, sessionIdleMs: o.sessionIdleMs, authenticate: undefined, trustProxy: o.trustProxy,
    maxBodyBytes: o.maxBodyBytes, metrics: false, cancelOnDisconnect: o.cancelOnDisconnect, maxSessionsPerClient: o.maxSessionsPerClient,
    maxInFlightPerClient: o.maxInFlightPerClient, maxStreamBufferBytes: o.maxStreamBufferBytes, slowReaderTimeoutMs: o.slowReaderTimeoutMs,
    cors: o.cors, exposeWorker: o.exposeWorker, allowedHostNames: new Set(['127.0.0.1']),
  });
}

interface Case { key: string; label: string; era: 'legacy' | 'modern'; raw: boolean; async: boolean }
const kCases: readonly Case[] = [
  { key: 'raw.legacy', label: 'raw echo, legacy body', era: 'legacy', raw: true, async: false },
  { key: 'sluice.legacy', label: 'Sluice, legacy, sync tool', era: 'legacy', raw: false, async: false },
  { key: 'sluice.legacyAsync', label: 'Sluice, legacy, async tool', era: 'legacy', raw: false, async: true },
  { key: 'raw.modern', label: 'raw echo, 2026-07-28 body', era: 'modern', raw: true, async: false },
  { key: 'sluice.modern', label: 'Sluice, 2026-07-28, sync tool', era: 'modern', raw: false, async: false },
  { key: 'sluice.modernAsync', label: 'Sluice, 2026-07-28, async tool', era: 'modern', raw: false, async: true },
];

/** S1's request of `c` (the async tool's name in its body and Mcp-Name header when `c.async`). */
function request(c: Case): { headers: Map<string, string>; body: Buffer } {
  const e: Endpoint = c.era === 'legacy' ? legacyEcho() : modernEcho();
  if (e.body === undefined) throw new Error(`${c.label}: S1's request has no body`);
  const text = c.async ? e.body.replace('"name":"echo"', '"name":"echo_async"') : e.body;
  const headers = new Map(Object.entries({ host: '127.0.0.1:3000', ...e.headers, 'content-length': String(Buffer.byteLength(text)) }));
  if (c.async && headers.has('mcp-name')) headers.set('mcp-name', 'echo_async');
  return { headers, body: Buffer.from(text) };
}

/** The raw echo's JavaScript for one request (node-echo.mjs's handler without node:http). */
function rawEcho(body: Buffer, sink: Sink): void {
  const answer = echoAnswer(JSON.parse(body.toString()) as EchoRequest);
  sink.status = 200;
  sink.body = answer;
  sink.bytes = Buffer.byteLength(answer);
}

const turn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

/** CPU ns per request of `n` requests of `c`; checks every answer's status and the last one's text. */
async function run(c: Case, endpoint: HttpEndpoint, n: number): Promise<number> {
  const { headers, body } = request(c);
  const sink: Sink = { status: 0, body: '', bytes: 0, answered: undefined };
  let bad = 0;
  const start = process.cpuUsage();
  for (let i = 0; i < n; i++) {
    if (c.raw) {
      rawEcho(body, sink);
    } else if (!c.async) {
      endpoint.handle(new MemoryExchange(headers, body, sink));
    } else {
      // As in a server, where the microtasks run after each socket callback: one request at a time
      // (so one registry row, as S1's async runs hold), and an event-loop turn now and then, where
      // the engine arms the runs that are still going (none here).
      await new Promise<void>((resolve) => {
        sink.answered = resolve;
        endpoint.handle(new MemoryExchange(headers, body, sink));
      });
      if ((i & 255) === 255) await turn();
    }
    if (sink.status !== 200) bad++;
  }
  const used = process.cpuUsage(start);
  if (bad > 0 || sink.status !== 200 || sink.bytes !== Buffer.byteLength(sink.body) || !sink.body.includes('"text":"bench"')) throw new Error(`${c.label}: wrong answer (${bad} bad): ${sink.status} ${sink.body.slice(0, 200)}`);
  return ((used.user + used.system) * 1000) / n;
}

pinSelf(1);
const endpoint = sluiceEndpoint();
const ns: Record<string, number[]> = Object.fromEntries(kCases.map((c) => [c.key, []]));
for (const c of kCases) await run(c, endpoint, Math.min(requests, 50_000)); // warm-up: every path compiled
for (let rep = 0; rep < reps; rep++) {
  const eras = rep % 2 === 0 ? ['legacy', 'modern'] : ['modern', 'legacy'];
  for (const era of eras) {
    for (const c of kCases.filter((x) => x.era === era)) {
      const perRequest = await run(c, endpoint, requests);
      ns[c.key]!.push(perRequest);
      process.stderr.write(`rep ${rep + 1} ${c.label}: ${perRequest.toFixed(0)} ns/req\n`);
    }
  }
}

if (smoke) {
  // The answers were checked in `run` (a wrong one throws): the in-memory request still goes the whole way.
  console.log(`bench:smoke endpoint: ${kCases.map((c) => `${c.label} ${ns[c.key]![0]!.toFixed(0)} ns`).join(', ')}`);
  process.exit(0);
}

/** Per rep: Sluice's ns ÷ the raw echo's of that era in the same rep. */
const times = (c: Case): number[] => ns[c.key]!.map((x, i) => x / ns[`raw.${c.era}`]![i]!);
const f0 = (x: number): string => x.toFixed(0);
/** The Node that ran this: `node`, or the path of one of .ci/node-versions' (the figures are that Node's). */
const runner = process.execPath.startsWith(kRoot) ? relative(kRoot, process.execPath) : 'node';
const lines = [
  "# Sluice's JavaScript per request, without HTTP", '',
  `\`HttpEndpoint.handle\` over an in-memory Exchange against the raw echo's JavaScript (parse, build, stringify), S1's bodies; one process pinned to CPU 1, ${reps} reps of ${requests} requests per case, CPU ns per request. ${machineLine()}`, '',
  `Command: \`${runner} dist/bench/endpoint.js --reps ${reps} --requests ${requests}${out === 'endpoint' ? '' : ` --out ${out}`}\``, '',
  '| case | ns/req per rep | min–max | median | × the raw echo, median (min–max) |', '|---|---|---|---:|---|',
  ...kCases.map((c) => {
    const r = range(ns[c.key]!);
    const x = c.raw ? undefined : times(c);
    const xr = x === undefined ? undefined : range(x);
    return `| ${c.label} | ${ns[c.key]!.map(f0).join(', ')} | ${f0(r.min)}–${f0(r.max)} | ${f0(median(ns[c.key]!))} | ${x === undefined || xr === undefined ? '—' : `${median(x).toFixed(2)} (${xr.min.toFixed(2)}–${xr.max.toFixed(2)})`} |`;
  }),
  '', "Sluice's own cost per request is its ns minus the raw echo's of the same era: the raw echo's parse and stringify are work every server does.", '',
];
const svg = svgBars("Sluice's JavaScript per request, without HTTP (CPU ns, median)", kCases.map((c) => ({ label: c.label, value: median(ns[c.key]!) })), 'ns');
console.log(writeResults([[`${out}.md`, lines.join('\n')], [`${out}.svg`, svg]]).join('\n'));
console.log(lines.join('\n'));
