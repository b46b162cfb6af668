import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // Tests start real HTTP servers on loopback; a hung socket should fail fast, not stall CI.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // In CI also write a JSON report, from which .ci/run prints a plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
