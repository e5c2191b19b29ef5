/**
 * msgpackr vs JSON for the messages nodes send each other on the cluster bus (src/cluster/codec.ts):
 * encode + decode per message, and bytes. Also one Redis round trip (PUBLISH, and SET+DEL as a
 * directory of in-flight requests would cost per request) when REDIS_URL is set.
 *
 *   npm run build && node dist/bench/cluster-codec.js [--redis redis://127.0.0.1:6379]
 * Results: bench/results/cluster-codec.md.
 */
import { Packr } from 'msgpackr';
import { Redis } from 'ioredis';
import type { BusMessage } from '../src/cluster/codec.js';
import { benchArgs } from './lib/args.js';

const packr = new Packr({ useRecords: false, moreTypes: false });

const answerText = JSON.stringify({ id: 's3kQ9xYw2mPzR7tLbN4vHg.12-41', result: { action: 'accept', content: { name: 'Ada Lovelace', email: 'ada@example.com', notes: 'x'.repeat(400) } } });
const kMessages: Record<string, BusMessage> = {
  cancel: { k: 'c', f: 'k7Qp2Zc9bXwR4mN8vT1yLg', s: 'session:6f1c2a8e-8d3b-4b7e-9a51-0c2e4f7d9b13', i: 'req-18446', r: 'user pressed stop' },
  answer: { k: 'a', f: 'k7Qp2Zc9bXwR4mN8vT1yLg', n: 's3kQ9xYw2mPzR7tLbN4vHg', t: 12, s: 'principal:alice', x: answerText },
  'answer, 32 KiB': { k: 'a', f: 'k7Qp2Zc9bXwR4mN8vT1yLg', n: 's3kQ9xYw2mPzR7tLbN4vHg', t: 12, s: 'principal:alice', x: JSON.stringify({ id: 's1.2-3', result: { rows: Array.from({ length: 1200 }, (_, i) => ({ name: `row ${i}`, v: i })) } }) },
  list: { k: 'l', f: 'k7Qp2Zc9bXwR4mN8vT1yLg', l: 'tools' },
};

function time(fn: () => void, iterations: number): number {
  for (let i = 0; i < iterations / 10; i++) fn(); // warm-up
  const started = process.hrtime.bigint();
  for (let i = 0; i < iterations; i++) fn();
  return Number(process.hrtime.bigint() - started) / iterations;
}

function median(runs: number[]): number {
  const sorted = [...runs].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function roundTrips(url: string): Promise<string[]> {
  const redis = new Redis(url);
  try {
    const payload = packr.pack(kMessages.cancel);
    for (let i = 0; i < 1000; i++) await redis.publish('bench:bus', payload);
    const sample = async (op: () => Promise<unknown>) => {
      const times: number[] = [];
      for (let i = 0; i < 5000; i++) {
        const t = process.hrtime.bigint();
        await op();
        times.push(Number(process.hrtime.bigint() - t) / 1000);
      }
      times.sort((a, b) => a - b);
      return `p50 ${times[2500]!.toFixed(0)} µs, p99 ${times[4950]!.toFixed(0)} µs`;
    };
    return [
      `| PUBLISH (a cancel) | ${await sample(() => redis.publish('bench:bus', payload))} |`,
      `| SET + DEL, pipelined (what a directory of in-flight requests adds to every request) | ${await sample(() => redis.multi().set('bench:inflight:x', 'node/12', 'EX', 300).del('bench:inflight:x').exec())} |`,
      `| SET then DEL (two round trips: register at start, remove at end) | ${await sample(async () => { await redis.set('bench:inflight:x', 'node/12', 'EX', 300); await redis.del('bench:inflight:x'); })} |`,
    ];
  } finally {
    redis.disconnect();
  }
}

async function main(): Promise<void> {
  const url = benchArgs('Usage: node dist/bench/cluster-codec.js [options]\nmsgpackr against JSON for the cluster bus\'s messages; Redis round trips when a Redis is named.', {
    redis: { type: 'string', help: 'a Redis URL to time round trips against (else REDIS_URL, else none)' },
  }).redis ?? process.env.REDIS_URL;
  const rows: string[] = ['| message | codec | bytes | encode+decode ns (median of 7) |', '| --- | --- | --- | --- |'];
  for (const [name, message] of Object.entries(kMessages)) {
    const json = Buffer.from(JSON.stringify(message));
    const packed = packr.pack(message);
    const iterations = name.startsWith('answer,') ? 2_000 : name === 'answer' ? 100_000 : 500_000;
    const jsonNs = median(Array.from({ length: 7 }, () => time(() => { JSON.parse(Buffer.from(JSON.stringify(message)).toString('utf8')); }, iterations)));
    const packNs = median(Array.from({ length: 7 }, () => time(() => { packr.unpack(packr.pack(message)); }, iterations)));
    rows.push(`| ${name} | JSON (stringify → Buffer, toString → parse) | ${json.length} | ${jsonNs.toFixed(0)} |`);
    rows.push(`| ${name} | msgpackr (useRecords: false) | ${packed.length} | ${packNs.toFixed(0)} |`);
  }
  const out = [`Node ${process.version}, ${new Date().toISOString().slice(0, 10)}`, '', ...rows];
  if (url !== undefined) out.push('', `Redis round trips (${url.replace(/\/\/[^@]*@/, '//')}, loopback, one connection, 5000 samples):`, '', '| operation | latency |', '| --- | --- |', ...await roundTrips(url));
  process.stdout.write(`${out.join('\n')}\n`);
}

await main();
