/**
 * Which test files run in which tier (vitest.config.ts's projects), decided by what a file needs:
 *
 * - fast: logic, contracts, the template and the definition, all in the test's own process. It
 *   starts no server (no local mode, local S3, simulated service or loopback stand-in), no
 *   browser and no child process (no packing, no `hopper` spawned, no esbuild). The fast tier's
 *   setup (test/helpers/fast-tier-guard.ts) fails any test there that tries.
 * - reliability: the load and fault files (test/reliability/), which `npm run test:reliability`
 *   runs on their own at full size.
 * - integration: every other file, in one process per worker (their servers and local modes are
 *   their own, and the handler bundles and the SDK load once per worker), but for the files of
 *   OWN_PROCESS, which run in a process each.
 */

/** The fast tier's files. A file that needs a server belongs in the integration tier instead. */
export const FAST_TIER: readonly string[] = [
  'test/client/client.test.ts',
  'test/client/contract.test.ts',
  'test/client/errors.test.ts',
  'test/client/rate-limit.test.ts',
  'test/client/retry.test.ts',
  'test/docs.test.ts',
  'test/docs-commands.test.ts',
  'test/docs-links.test.ts',
  'test/drop/*.test.ts',
  'test/infra/config.test.ts',
  'test/infra/deploy-safety.test.ts',
  'test/infra/feature-flags.test.ts',
  'test/infra/nag.test.ts',
  'test/infra/names.test.ts',
  'test/infra/notifications.test.ts',
  'test/infra/observability.test.ts',
  'test/infra/ops-docs.test.ts',
  'test/infra/stack.test.ts',
  'test/infra/vocabulary.test.ts',
  'test/local/definition.test.ts',
  'test/local/options.test.ts',
  'test/local/progress.test.ts',
  'test/local/service-args.test.ts',
  'test/local/state-machine.test.ts',
  'test/permissions/check.test.ts',
  'test/pipeline/adoption.test.ts',
  'test/pipeline/lambda-error.test.ts',
  'test/pipeline/polling.test.ts',
  'test/pipeline/slots.test.ts',
  'test/pipeline/standing.test.ts',
  'test/pipeline/usage.test.ts',
  'test/service/data-reader.test.ts',
  'test/service/model-bytes.test.ts',
  'test/service/rate-limit.test.ts',
  'test/tools/code-size.test.ts',
  'test/tools/error-words.test.ts',
  'test/tools/fast-tier.test.ts',
  'test/tools/layers.test.ts',
  // test/tools/self-contained.test.ts asks git for the tracked files: a child process.
];

/**
 * Integration files that need a fresh module graph: they load a Lambda entry from the sources or
 * call runtimeFromEnvironment, whose runtime a Lambda container builds once and caches in the
 * module, so a file run after another in the same process would get that file's runtime.
 */
export const OWN_PROCESS: readonly string[] = [
  'test/pipeline/cloud-events.test.ts',
  'test/pipeline/label-examples.test.ts',
  'test/pipeline/observability.test.ts',
  'test/pipeline/validate-drop.test.ts',
  'test/local/no-xray.test.ts',
];

/** The load and fault files. */
export const RELIABILITY_TIER: readonly string[] = ['test/reliability/*.test.ts'];

/** Every test file. */
export const ALL_TESTS: readonly string[] = ['test/**/*.test.ts'];
