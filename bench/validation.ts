/**
 * Per-call cost of checking tools/call arguments: the Ajv-compiled check Sluice runs now
 * (checkArguments: defineTool compiled the schema once) against the hand-written checker it used
 * before (bench/legacy-schema-check.ts), for object schemas of 0, 5 and 20 properties, with valid
 * arguments (the common case: every property present). A zod 4 schema is measured too, for users
 * who pass one. Timing only the check, in one thread; no server.
 *
 *   npm run bench:validation            (builds first; prints a Markdown table)
 */
import { defineTool } from '../src/index.js';
import { Refusal, checkArguments } from '../src/tools/define.js';
import { checkSchema } from './legacy-schema-check.js';
import { benchArgs } from './lib/args.js';
import { kPropertyCounts, shape } from './lib/schemas.js';

benchArgs('Usage: npm run bench:validation\nPer-call cost of checking tools/call arguments: Ajv-compiled against the old hand-written checker, and zod 4.', {});

const kRounds = 7;
const kCallsPerRound = 200_000;

type Check = (args: Record<string, unknown>) => unknown;

/** Median nanoseconds per call over kRounds rounds (after one warm-up round). */
function measure(check: Check, args: Record<string, unknown>): number {
  const perCall: number[] = [];
  let sink = 0;
  for (let round = 0; round <= kRounds; round++) {
    const start = process.hrtime.bigint();
    for (let i = 0; i < kCallsPerRound; i++) if (check(args) !== undefined) sink++;
    const ns = Number(process.hrtime.bigint() - start) / kCallsPerRound;
    if (round > 0) perCall.push(ns); // round 0 warms up (and lets V8 optimise)
  }
  if (sink < 0) console.log(sink);
  perCall.sort((a, b) => a - b);
  return perCall[Math.floor(perCall.length / 2)]!;
}

const rows: string[] = [];
for (const count of kPropertyCounts) {
  const { json, zod, args } = shape(count);
  const legacy: Check = (a) => checkSchema(json, a);
  const ajvTool = defineTool({ name: `ajv${count}`, description: '', inputSchema: json, handler: () => '' });
  const zodTool = defineTool({ name: `zod${count}`, description: '', inputSchema: zod, handler: () => '' });
  // Both new checks must accept the arguments (a refusal would be measuring the wrong path).
  for (const tool of [ajvTool, zodTool]) {
    const checked = checkArguments(tool, args);
    if (checked instanceof Refusal || checked instanceof Promise) throw new Error(`${tool.name} refused the benchmark's arguments`);
  }
  if (legacy(args) !== undefined) throw new Error('the legacy checker refused the arguments');
  const ajv: Check = (a) => { const r = checkArguments(ajvTool, a); return r instanceof Refusal ? r : undefined; };
  const zodCheck: Check = (a) => { const r = checkArguments(zodTool, a); return r instanceof Refusal ? r : undefined; };
  const [before, after, withZod] = [measure(legacy, args), measure(ajv, args), measure(zodCheck, args)];
  rows.push(`| ${count} | ${before.toFixed(0)} | ${after.toFixed(0)} | ${(after / before).toFixed(2)}× | ${withZod.toFixed(0)} |`);
}

console.log(`Argument validation per call (ns, median of ${kRounds} rounds × ${kCallsPerRound.toLocaleString('en')} calls; Node ${process.version})\n`);
console.log('| properties | before: hand-written checker | now: Ajv compiled (checkArguments) | now / before | zod 4 schema (checkArguments) |');
console.log('|---:|---:|---:|---:|---:|');
for (const row of rows) console.log(row);
