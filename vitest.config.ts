import { availableParallelism } from 'node:os';
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    globalSetup: ['test/global-setup.ts'],
    // Tests start real HTTP servers on loopback; a hung socket should fail fast, not stall CI.
    testTimeout: 30_000,
    hookTimeout: 30_000,
    pool: 'forks',
    // The built handler bundles (dist/) are loaded by Node itself, as Lambda and the installed
    // CLI load them: through Vitest's transform each 600 KB bundle cost seconds in every file.
    server: { deps: { external: [/\/dist\//] } },
    // Vitest's default is one worker fewer than the cores: one on a 2-core machine. Most files
    // spend their time waiting on loopback servers and Wait states, not on the CPU, so two at
    // once nearly halve the suite there.
    maxWorkers: Math.max(2, availableParallelism() - 1),
    // The SDK's notice that its 2027 releases need Node 22 (package.json says what Hopper
    // supports), printed once per test file, would bury the tests' own output.
    env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
    // In CI also write a JSON report, from which .ci/run prints a plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
