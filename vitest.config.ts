import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 60_000,
    hookTimeout: 60_000,
    // Stress tests start their own worker threads; keep test files from fighting over two cores.
    fileParallelism: false,
  },
});
