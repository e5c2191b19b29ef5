// Runs the type-level tests (test/types/*.test-d.ts) through the TypeScript compiler: they pass when
// tsc reports nothing (every @ts-expect-error line must be an error, every other line must compile).
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect, it } from 'vitest';

const kRoot = fileURLToPath(new URL('../..', import.meta.url));
const kTsc = fileURLToPath(new URL('../../node_modules/typescript/bin/tsc', import.meta.url));

it('typed tool arguments and client results compile under strict TypeScript (tsc -p test/types)', async () => {
  let output = '';
  try {
    await promisify(execFile)(process.execPath, [kTsc, '-p', 'test/types/tsconfig.json'], { cwd: kRoot });
  } catch (error) {
    output = String((error as { stdout?: string }).stdout ?? error);
  }
  expect(output).toBe('');
}, 120_000);
