import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real processes; two cores are all CI has.
    pool: 'forks',
    maxWorkers: 2,
  },
});
