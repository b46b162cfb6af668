import { availableParallelism } from 'node:os';
import { defineConfig, type TestProjectInlineConfiguration } from 'vitest/config';
import { ALL_TESTS, FAST_TIER, OWN_PROCESS, RELIABILITY_TIER } from './test/tiers.js';

type TierOptions = NonNullable<TestProjectInlineConfiguration['test']>;

/** What every tier runs with. */
const shared: TierOptions = {
  // Tests start real HTTP servers on loopback; a hung socket should fail fast, not stall CI.
  testTimeout: 30_000,
  hookTimeout: 30_000,
  pool: 'forks',
  // Vitest's default is one worker fewer than the cores: one on a 2-core machine. Most files
  // spend their time waiting on loopback servers and Wait states, not on the CPU, so two workers
  // a core keep the cores busy: on the 2-core machine the suite took 430 s with two workers,
  // 330 s with three and 304 s with four (1.9 cores in use; docs/performance.md).
  maxWorkers: Number(process.env.HOPPER_TEST_WORKERS) || 2 * availableParallelism(),
  // The built handler bundles (dist/) are loaded by Node itself, as Lambda and the installed
  // CLI load them: through Vitest's transform each 600 KB bundle cost seconds in every file.
  server: { deps: { external: [/\/dist\//] } },
  // The SDK's notice that its 2027 releases need Node 22 (package.json says what Hopper
  // supports), printed once per test file, would bury the tests' own output.
  env: { AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true' },
};

/** A tier: its files, with the settings every tier shares. */
function tier(name: string, test: TierOptions): TestProjectInlineConfiguration {
  return { test: { ...shared, ...test, name } };
}

export default defineConfig({
  test: {
    // Run once for every tier (a project does not inherit it).
    globalSetup: ['test/global-setup.ts'],
    projects: [
      tier('fast', {
        include: [...FAST_TIER],
        setupFiles: ['test/helpers/fast-tier-guard.ts'],
        // Nothing here starts a server or keeps state between files (the guard sees to the
        // first), so one process per worker runs them all: aws-cdk-lib and the sources load
        // once, not once a file.
        isolate: false,
      }),
      tier('integration', {
        include: [...ALL_TESTS],
        exclude: [...FAST_TIER, ...RELIABILITY_TIER, ...OWN_PROCESS],
        // Each file starts its own servers and local modes, so one process per worker runs them
        // all: the handler bundles and the SDK load once per worker, not once a file (import
        // 124 s -> 39 s over the suite).
        isolate: false,
      }),
      // Files whose Lambda module state must start fresh (test/tiers.ts): a process each.
      tier('integration-own-process', { include: [...OWN_PROCESS] }),
      tier('reliability', { include: [...RELIABILITY_TIER] }),
    ],
    // In CI also write a JSON report, from which .ci/run prints a plain "N passed, N failed" line.
    reporters: process.env.CI ? ['default', 'json'] : ['default'],
    outputFile: { json: 'test-results.json' },
  },
});
