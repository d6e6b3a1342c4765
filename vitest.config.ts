import { fileURLToPath } from 'node:url';
import { defineConfig } from 'vitest/config';

/**
 * The tests in tiers (issue 27.9), as vitest projects; `npm test` runs them all (what CI runs).
 * - unit: the pure core with fakes and the fake clock, and the simulation's named histories
 *   (seconds): `npm run test:fast`.
 * - integration: real processes over loopback against the emulator, the bad-input catalogue.
 * - slow: what needs minutes or outside tools — the FUSE watch, the browser, the container
 *   image, the release tarball, the systemd units, the long operator cases, the full simulation.
 */
const SLOW = [
  'test/integration/web/**/*.test.ts',
  'test/integration/deploy/image.test.ts',
  'test/integration/daemon/watch-fuse.test.ts',
  'test/integration/release/**/*.test.ts',
  'test/integration/systemd/**/*.test.ts',
  'test/bad-input/operator-errors.test.ts',
  'test/sim/sim.test.ts',
];

export default defineConfig({
  resolve: {
    // Tests run the emulator package from its sources, as `tsc -p tsconfig.json` checks it
    // (tsconfig.json "paths"); the built CLI that integration tests start loads its dist/.
    alias: [{ find: /^@dssync\/emulator$/, replacement: fileURLToPath(new URL('./packages/emulator/src/index.ts', import.meta.url)) }],
  },
  test: {
    testTimeout: 30_000,
    hookTimeout: 30_000,
    // Integration tests start real processes; two cores are all CI has.
    pool: 'forks',
    maxWorkers: 2,
    projects: [
      {
        extends: true,
        test: {
          name: 'unit',
          include: ['test/unit/**/*.test.ts', 'test/sim/**/*.test.ts'],
          exclude: SLOW,
          // One module graph per worker, not per file: imports were most of this tier's time.
          // So a unit test leaves no module state behind (no vi.mock, no module-level mutation).
          isolate: false,
        },
      },
      {
        extends: true,
        test: { name: 'integration', include: ['test/integration/**/*.test.ts', 'test/bad-input/**/*.test.ts'], exclude: SLOW },
      },
      {
        extends: true,
        test: { name: 'slow', include: SLOW },
      },
    ],
  },
});
