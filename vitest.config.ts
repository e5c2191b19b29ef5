import { defineConfig } from 'vitest/config';

/**
 * Files that run alone, one after another, once everything else has finished:
 * - threads that spin or race on purpose (registry stress, cross-thread cancels, a reader that waits
 *   for a descheduled canceller, terminated table writers, the janitor's timing), so that nothing
 *   else competes for the two cores while they do;
 * - the README runs (examples, quickstart): their `npm install` of `file:../..` and `npm pack` run the
 *   root's `prepare`, which rewrites dist/ under every other file that loads it.
 */
const serial = [
  'test/examples/examples.test.ts',
  'test/quickstart.test.ts',
  'test/registry/stress.test.ts',
  'test/registry/threads.test.ts',
  'test/registry/reason-after-flag.test.ts',
  'test/native-free-shm/terminate.test.ts',
  'test/hardening/janitor.test.ts',
];

const shared = { testTimeout: 60_000, hookTimeout: 60_000 };

export default defineConfig({
  test: {
    projects: [
      {
        // Most files wait on sockets, child processes and timers far more than they compute: a
        // few at a time keeps two cores busy without starving anything.
        test: { ...shared, name: 'main', include: ['test/**/*.test.ts'], exclude: serial, maxWorkers: 3, sequence: { groupOrder: 0 } },
      },
      {
        test: { ...shared, name: 'serial', include: serial, fileParallelism: false, sequence: { groupOrder: 1 } },
      },
    ],
  },
});
