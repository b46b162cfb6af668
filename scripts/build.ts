/**
 * `npm run build` (node --import tsx scripts/build.ts): the compiled JavaScript both packages ship, written to dist/ (docs/packages.md).
 *
 *   dist/handlers/<name>/index.mjs   the 12 Lambda handlers, one ES module bundle each (esbuild);
 *                                    the construct deploys them (Code.fromAsset) and local mode
 *                                    runs them: one way to get handler code
 *   dist/definition.json             the state machine's definition, synthesized from the construct
 *                                    with those bundles: what local mode runs
 *   dist/index.js, dist/index.cjs    the construct package (`Hopper`), ESM and CommonJS; aws-cdk-lib
 *                                    and constructs stay imports (peer dependencies)
 *   dist/hopper.mjs                  the `hopper` command
 *   dist/hopper.template.json        Hopper's own stack's template: `hopper permissions`' default
 *
 * `--types` also writes dist/index.d.ts (one rolled-up declaration file), which `npm run pack`
 * needs and `npm start` does not. Each output is a whole new file: nothing stale survives.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, readdirSync, rmSync, writeFileSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { build, type BuildOptions } from 'esbuild';
import { createHopperApp } from '../infra/hopper-app.js';
import { localDefinitionOf } from './local-definition.js';
import { HANDLER_BUNDLING } from './bundling.js';

const ROOT = fileURLToPath(new URL('..', import.meta.url));
const DIST = `${ROOT}dist`;
const HANDLERS = `${ROOT}lambdas/handlers`;

/** What the construct leaves to its user's install: the peer dependencies. */
const PEERS = ['aws-cdk-lib', 'aws-cdk-lib/*', 'constructs'];

/** What the CLI leaves to its install: its package.json's dependencies, which load files of their own. */
const CLI_EXTERNAL = ['@aws-sdk/*', 's3rver', 's3rver/*', 'aws-local-stepfunctions', '@dagrejs/dagre'];

/** What `hopper permissions` loads only where the user installed it (AGPL-3.0: never shipped). */
const CLI_OPTIONAL = ['@cloud-copilot/iam-simulate'];

/** The handler entry files: lambdas/handlers/<name>.handler.ts. */
function handlerNames(): string[] {
  return readdirSync(HANDLERS)
    .filter((file) => file.endsWith('.handler.ts'))
    .map((file) => file.slice(0, -'.handler.ts'.length));
}

async function buildHandlers(): Promise<void> {
  rmSync(`${DIST}/handlers`, { recursive: true, force: true });
  await Promise.all(
    handlerNames().map((name) =>
      build({
        ...HANDLER_BUNDLING,
        entryPoints: [`${HANDLERS}/${name}.handler.ts`],
        outfile: `${DIST}/handlers/${name}/index.mjs`,
      }),
    ),
  );
}

async function buildConstruct(): Promise<void> {
  const common: BuildOptions = {
    entryPoints: [`${ROOT}infra/index.ts`],
    bundle: true,
    platform: 'node',
    target: 'node20',
    external: PEERS,
    logLevel: 'warning',
  };
  await build({ ...common, format: 'esm', outfile: `${DIST}/index.js` });
  // CommonJS has no import.meta.url; the handlers' folder is found from __filename instead.
  await build({
    ...common,
    format: 'cjs',
    outfile: `${DIST}/index.cjs`,
    define: { 'import.meta.url': '__hopperModuleUrl' },
    banner: { js: "const __hopperModuleUrl = require('node:url').pathToFileURL(__filename).href;" },
  });
}

async function buildCli(): Promise<void> {
  await build({
    entryPoints: [`${ROOT}local/main.ts`],
    bundle: true,
    platform: 'node',
    format: 'esm',
    target: 'node20',
    outfile: `${DIST}/hopper.mjs`,
    external: [...CLI_EXTERNAL, ...CLI_OPTIONAL],
    // Smaller and faster to load, with names kept for readable stack traces.
    minifyWhitespace: true,
    minifySyntax: true,
    banner: {
      js: "#!/usr/bin/env node\nimport { createRequire as __hopperCreateRequire } from 'node:module'; const require = __hopperCreateRequire(import.meta.url);",
    },
    logLevel: 'warning',
  });
}

/**
 * The definition local mode runs, synthesized from the construct with the bundles just built, and
 * the stack's template, which `hopper permissions` checks by default.
 */
function synthesize(): void {
  const { app, stack } = createHopperApp({
    cloudFormationValidation: false,
    context: { 'aws:cdk:bundling-stacks': [] },
  });
  const write = (file: string, value: unknown) => {
    writeFileSync(`${DIST}/${file}`, `${JSON.stringify(value, null, 1)}\n`);
  };
  write('definition.json', localDefinitionOf(stack.hopper));
  write('hopper.template.json', app.synth().getStackArtifact(stack.artifactId).template);
}

/** dist/index.d.ts: the construct's declarations in one file, importing only the peers. */
function buildTypes(): void {
  execFileSync(
    process.execPath,
    [
      `${ROOT}node_modules/dts-bundle-generator/dist/bin/dts-bundle-generator.js`,
      '--silent',
      // npm test type-checks the whole project (tsc --noEmit); this only rolls up the declarations.
      '--no-check',
      '--project',
      `${ROOT}tsconfig.build.json`,
      '--external-imports',
      'aws-cdk-lib',
      'constructs',
      '--no-banner',
      '-o',
      `${DIST}/index.d.ts`,
      `${ROOT}infra/index.ts`,
    ],
    { stdio: 'inherit' },
  );
}

mkdirSync(DIST, { recursive: true });
// --types-only: the declarations alone, leaving the built code as it is (a test packs while others
// run the bundles).
if (!process.argv.includes('--types-only')) {
  await Promise.all([buildHandlers(), buildConstruct(), buildCli()]);
  synthesize();
}
if (process.argv.includes('--types') || process.argv.includes('--types-only')) buildTypes();
