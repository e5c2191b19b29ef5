import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * Tests import the library as `../../src/….js` (and `../../native-free-shm/….js`); they are given
 * its build (dist/src/….js, dist/native-free-shm/….js, which `npm test` makes first), loaded by
 * Node itself. The server's worker and pool threads load dist/ anyway, so a test and the threads it
 * starts run the same code; and each test file's process no longer evaluates ~130 transformed
 * TypeScript modules through vite's module runner (32 files of test/{tasks,protocol,tools,
 * telemetry,auth}: 113 -> 104 CPU-s, 64 -> 59 s; the Node 20 suite: 988 -> 955 CPU-s).
 */
const built = fileURLToPath(new URL('./dist/', import.meta.url));

/**
 * Files that run alone, one after another, once everything else has finished: threads that spin or
 * race on purpose (registry stress, cross-thread cancels, session lookups racing their DELETE, a reader that waits for a descheduled
 * canceller, terminated table writers, the janitor's timing), so that nothing else competes for the
 * two cores while they do.
 */
const serial = [
  'test/registry/stress.test.ts',
  'test/registry/threads.test.ts',
  'test/registry/reason-after-flag.test.ts',
  'test/native-free-shm/terminate.test.ts',
  'test/hardening/janitor.test.ts',
  'test/sessions/served-threads.test.ts',
];

/**
 * The README runs (examples, quickstart): mostly `npm install`, `tsc` and process start-ups, each on
 * its own fixed port, so they run side by side, between 'main' and 'serial'. Their installs (and
 * the quickstart's `npm pack`) may run the root's `prepare`; the build is incremental
 * (tsconfig.json: dist/.tsbuildinfo), so with dist/ current it rewrites nothing under the files
 * that load it.
 */
const readme = ['test/examples/examples.test.ts', 'test/quickstart.test.ts'];

const shared = { testTimeout: 60_000, hookTimeout: 60_000 };

export default defineConfig({
  resolve: { alias: [{ find: /^(?:\.\.\/)+(src|native-free-shm)\/(.*)\.js$/, replacement: `${built}$1/$2.js` }] },
  test: {
    server: { deps: { external: [/\/dist\/(?:src|native-free-shm)\//] } },
    projects: [
      {
        // Most files wait on sockets, child processes and timers far more than they compute: a
        // few at a time keeps two cores busy without starving anything.
        extends: true, test: { ...shared, name: 'main', include: ['test/**/*.test.ts'], exclude: [...readme, ...serial], maxWorkers: 3, sequence: { groupOrder: 0 } },
      },
      {
        extends: true, test: { ...shared, name: 'readme', include: readme, maxWorkers: 2, maxConcurrency: 3, sequence: { groupOrder: 1 } },
      },
      {
        extends: true, test: { ...shared, name: 'serial', include: serial, fileParallelism: false, sequence: { groupOrder: 2 } },
      },
    ],
  },
});
