import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  resolve: {
    // Tests run the emulator package from its sources, as `tsc -p tsconfig.json` checks it
    // (tsconfig.json "paths"); the built CLI that integration tests start loads its dist/.
    alias: [{ find: /^@dssync\/emulator$/, replacement: fileURLToPath(new URL('./packages/emulator/src/index.ts', import.meta.url)) }],
  },
  test: {
    include: ['test/**/*.test.ts'],
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real processes; two cores are all CI has.
    pool: 'forks',
    maxWorkers: 2,
  },
});
