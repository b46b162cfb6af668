/**
 * Cold start: each Lambda bundle as the stack ships it (the app synthesized with NodejsFunction's
 * esbuild bundling), its minified size, and how long importing it takes in a fresh `node`
 * process (no tsx, the runtime's AWS SDK beside it as in Lambda), side by side with importing an
 * empty module. Then the source map options for the largest bundle's handler: none, external and
 * inline, the last two loaded with --enable-source-maps (what makes Node read them).
 *
 * Goals: load <= 100 ms; size < 1 MB, and < 400 KB for functions that never call the service.
 */
import { execFile } from 'node:child_process';
import { rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { promisify } from 'node:util';
import { TASKS } from '../infra/tasks.js';
import { sideBySide, type Benchmark } from './harness/benchmark.js';
import { figure, type Figure } from './harness/figures.js';
import { runClient } from './harness/processes.js';
import type { SourceMapOption, SynthesizedBundle } from './clients/cold-start.js';

const MODULE = 'clients/cold-start.ts';
const run = promisify(execFile);
const KB = 1024;
const LOAD_GOAL_MS = 100;

/**
 * Prints the ms `import(file)` took, and the ms of a first error thrown by the handler (a Task
 * refuses an input without a run) with its stack read: where a source map is parsed.
 */
const LOADER = `const started = performance.now();
const { handler } = await import(process.argv[2]);
const loaded = performance.now();
if (process.argv[3] === 'invoke') {
  try {
    await handler({}, { getRemainingTimeInMillis: () => 60000, awsRequestId: 'bench' });
  } catch (error) {
    void error.stack;
  }
}
process.stdout.write(JSON.stringify({ loadMs: loaded - started, stackMs: performance.now() - loaded }));
process.exit(0);
`;
const EMPTY_LOADER = `const started = performance.now();
await import(process.argv[2]);
process.stdout.write(JSON.stringify({ loadMs: performance.now() - started, stackMs: 0 }));
process.exit(0);
`;

/** What a handler finds in its environment at init, as in Lambda (none of it reached). */
const LAMBDA_ENV = {
  POWERTOOLS_LOG_LEVEL: 'SILENT',
  HOPPER_SERVICE_URL: 'http://127.0.0.1:9',
  HOPPER_API_KEY_SECRET_ARN: 'hopper/api-key',
  HOPPER_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:000000000000:stateMachine:x',
  AWS_REGION: 'us-east-1',
};

interface Load {
  readonly loadMs: number;
  readonly stackMs: number;
}

async function load(
  loader: string,
  file: string,
  flags: readonly string[] = [],
  invoke = false,
): Promise<Load> {
  const { stdout } = await run(process.execPath, [...flags, loader, file, ...(invoke ? ['invoke'] : [])], {
    cwd: dirname(file),
    env: { PATH: process.env.PATH, ...LAMBDA_ENV },
    // A bundle that hangs at init fails the benchmark rather than the whole run.
    timeout: 60_000,
  });
  return JSON.parse(stdout) as Load;
}

export const coldStart: Benchmark = {
  name: 'cold-start',
  title: 'Lambda bundles: minified size and module load in a fresh process vs an empty module',
  async run(context) {
    context.log('cold-start: synthesizing the app (esbuild bundles every function)');
    const synthesized = await runClient({ module: MODULE, export: 'synthesize', args: {} });
    const directory = String(synthesized.directory);
    const empty = String(synthesized.empty);
    const bundles = synthesized.bundles as SynthesizedBundle[];
    let sourceMapsDirectory: string | undefined;
    try {
      const loader = join(directory, 'load.mjs');
      await writeFile(loader, LOADER);
      const emptyLoader = join(directory, 'load-empty.mjs');
      await writeFile(emptyLoader, EMPTY_LOADER);
      const figures: Figure[] = [];
      for (const bundle of bundles) {
        const loads = await sideBySide(context.runs, {
          bundle: () => load(loader, bundle.file),
          empty: () => load(emptyLoader, empty),
        });
        const sizeLimit = bundle.callsService ? 1024 : 400;
        context.log(
          `  ${bundle.name}: ${(bundle.bytes / KB).toFixed(0)} KB, load ${loads.bundle.map((l) => l.loadMs.toFixed(0)).join(' / ')} ms`,
        );
        figures.push(
          figure({
            name: `cold-start.${bundle.name}.load_ms`,
            label: `cold start: ${bundle.name} module load (baseline: empty module)`,
            unit: 'ms',
            runs: loads.bundle.map((l) => l.loadMs),
            baselineRuns: loads.empty.map((l) => l.loadMs),
            goal: { on: 'value', op: '<=', limit: LOAD_GOAL_MS },
          }),
          figure({
            name: `cold-start.${bundle.name}.kb`,
            label: `cold start: ${bundle.name} bundle, minified${bundle.callsService ? '' : ' (never calls the service)'}`,
            unit: 'KB',
            runs: [bundle.bytes / KB],
            goal: { on: 'value', op: '<=', limit: sizeLimit },
          }),
        );
      }
      const largest = [...bundles].sort((a, b) => b.bytes - a.bytes)[0];
      const task = TASKS.find((candidate) => candidate.name === largest?.name);
      if (task !== undefined) {
        context.log(`cold-start: source map options for ${task.name} (${task.handlerFile})`);
        const built = await runClient({
          module: MODULE,
          export: 'bundleWithSourceMaps',
          args: { handlerFile: task.handlerFile },
        });
        sourceMapsDirectory = String(built.directory);
        const files = built.files as Record<
          SourceMapOption,
          { file: string; bytes: number; mapBytes: number }
        >;
        const loads = await sideBySide(context.runs, {
          none: () => load(loader, files.none.file, [], true),
          external: () => load(loader, files.external.file, ['--enable-source-maps'], true),
          inline: () => load(loader, files.inline.file, ['--enable-source-maps'], true),
        });
        for (const option of ['external', 'inline'] as const) {
          const { bytes, mapBytes } = files[option];
          figures.push(
            figure({
              name: `cold-start.source_maps.${option}.load_ms`,
              label: `cold start: ${task.name} with an ${option} source map and --enable-source-maps, load (baseline: none)`,
              unit: 'ms',
              runs: loads[option].map((l) => l.loadMs),
              baselineRuns: loads.none.map((l) => l.loadMs),
              note: `bundle ${(bytes / KB).toFixed(0)} KB${mapBytes > 0 ? ` + map ${(mapBytes / KB).toFixed(0)} KB` : ''}; without source maps ${(files.none.bytes / KB).toFixed(0)} KB`,
            }),
            figure({
              name: `cold-start.source_maps.${option}.first_stack_ms`,
              label: `cold start: ${task.name} with an ${option} source map, first error and its stack (baseline: none)`,
              unit: 'ms',
              runs: loads[option].map((l) => l.stackMs),
              baselineRuns: loads.none.map((l) => l.stackMs),
            }),
          );
        }
      }
      return figures;
    } finally {
      await rm(directory, { recursive: true, force: true });
      if (sourceMapsDirectory !== undefined) await rm(sourceMapsDirectory, { recursive: true, force: true });
    }
  },
};
