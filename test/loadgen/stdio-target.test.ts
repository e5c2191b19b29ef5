/**
 * `sluice bench`'s stdio connection and a server that ends with its answer: the answer it wrote just
 * before exiting counts, whether its last line had no newline or the exit came before the output
 * was read (a child process of the server writing it after). Then the connection is a reset.
 */
import { describe, expect, it } from 'vitest';
import { StdioTarget } from '../../src/loadgen/stdio-target.js';
import type { Outcome } from '../../src/loadgen/wire.js';

/** Answers initialize; answers its first tools/call as `how` says, then exits. */
const server = (how: 'no-newline' | 'after-exit'): string => `
const rl = require('node:readline').createInterface({ input: process.stdin });
rl.on('line', (line) => {
  const m = JSON.parse(line);
  if (m.id === undefined) return;
  if (m.method === 'initialize') return process.stdout.write(JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { protocolVersion: '2025-11-25', capabilities: { tools: {} }, serverInfo: { name: 'last-words', version: '1' } } }) + '\\n');
  const answer = JSON.stringify({ jsonrpc: '2.0', id: m.id, result: { content: [{ type: 'text', text: 'last words' }] } });
  if (${JSON.stringify(how)} === 'no-newline') process.stdout.write(answer);
  else require('node:child_process').spawn(process.execPath, ['-e', 'setTimeout(() => process.stdout.write(' + JSON.stringify(answer + '\\n') + '), 300)'], { stdio: ['ignore', 'inherit', 'ignore'] });
  process.exit(0);
});
`;

const call = (target: StdioTarget, id: number): Promise<Outcome> => new Promise((resolve) => target.call(id, (outcome) => resolve(outcome)));

describe('sluice bench over stdio: a server that exits after its answer', () => {
  it.each(['no-newline', 'after-exit'] as const)('%s: the answer counts, and the next call is a reset', async (how) => {
    const target = new StdioTarget({ command: process.execPath, args: ['-e', server(how)], negotiated: { era: 'legacy', version: '2025-11-25' }, method: 'tools/call', params: { name: 'x', arguments: {} } });
    try {
      await target.open();
      expect(await call(target, 1)).toMatchObject({ kind: 'ok', result: { content: [{ type: 'text', text: 'last words' }] } });
      expect(await call(target, 2)).toMatchObject({ kind: 'reset' });
    } finally {
      await target.close();
    }
  });
});
