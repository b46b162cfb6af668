/**
 * Set-up of the cold-start benchmark (bench/cold-start.ts), run in a child process so CDK and
 * esbuild stay out of the runner: the app synthesized as the stack ships it (NodejsFunction's
 * own esbuild bundling), and one handler bundled again with each source map option.
 */
import { mkdir, mkdtemp, stat, symlink, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { Template } from 'aws-cdk-lib/assertions';
import { build } from 'esbuild';
import { createHopperApp } from '../../infra/hopper-app.js';
import { HANDLER_BUNDLING } from '../../scripts/bundling.js';
import { handlerPath, TASKS } from '../../infra/tasks.js';
import type { ClientResult, Measure } from '../harness/protocol.js';

export interface SynthesizedBundle {
  readonly name: string;
  /** Whether the function calls the training service (its Task reads the API key). */
  readonly callsService: boolean;
  readonly file: string;
  readonly bytes: number;
}

export const SOURCE_MAP_OPTIONS = ['none', 'external', 'inline'] as const;
export type SourceMapOption = (typeof SOURCE_MAP_OPTIONS)[number];

/** The Lambda runtime's AWS SDK v3, played by the project's, where a bundle's import finds it. */
async function runtimeSdkBeside(directory: string): Promise<void> {
  await mkdir(join(directory, 'node_modules'), { recursive: true });
  await symlink(resolve('node_modules/@aws-sdk'), join(directory, 'node_modules', '@aws-sdk'), 'dir');
}

/**
 * Synthesizes the app and lists every function's bundle (index.mjs of its asset); also writes an
 * empty module (the baseline) into the assembly directory, which the caller removes.
 */
export async function synthesize(_args: Record<string, unknown>, measure: Measure): Promise<ClientResult> {
  // An outdir of our own: CDK removes a temporary one when this process exits.
  process.env.CDK_OUTDIR = await mkdtemp(join(tmpdir(), 'hopper-cold-start-'));
  const { result, measurement } = await measure(async () => {
    const { app, stack } = createHopperApp({ cloudFormationValidation: false });
    const assembly = app.synth();
    const template = Template.fromStack(stack);
    const functions = Object.values(
      template.findResources('AWS::Lambda::Function') as Record<
        string,
        { Properties: { Description?: string; Code?: { S3Key?: string } } }
      >,
    );
    const named = [
      ...TASKS.map((task) => ({ name: task.name, callsService: task.access.apiKey })),
      { name: 'Trigger', callsService: false },
    ];
    const bundles: SynthesizedBundle[] = [];
    for (const { name, callsService } of named) {
      const resource = functions.find((candidate) =>
        String(candidate.Properties.Description).startsWith(`Hopper ${name}:`),
      );
      const key = resource?.Properties.Code?.S3Key;
      if (key === undefined) throw new Error(`the synthesized template has no function for ${name}`);
      const file = join(assembly.directory, `asset.${key.replace(/\.zip$/, '')}`, 'index.mjs');
      bundles.push({ name, callsService, file, bytes: (await stat(file)).size });
    }
    await runtimeSdkBeside(assembly.directory);
    const empty = join(assembly.directory, 'empty.mjs');
    await writeFile(empty, 'export {};\n');
    return { directory: assembly.directory, empty, bundles };
  });
  return { ...measurement, ...result };
}

/**
 * `handlerFile` bundled with the stack's esbuild settings (infra/constructs/hopper-function.ts)
 * once per source map option, into a fresh directory: the files to load, by option.
 */
export async function bundleWithSourceMaps(
  args: Record<string, unknown>,
  measure: Measure,
): Promise<ClientResult> {
  const handlerFile = String(args.handlerFile);
  const { result, measurement } = await measure(async () => {
    const directory = await mkdtemp(join(tmpdir(), 'hopper-source-maps-'));
    await runtimeSdkBeside(directory);
    const files: Partial<Record<SourceMapOption, { file: string; bytes: number; mapBytes: number }>> = {};
    for (const option of SOURCE_MAP_OPTIONS) {
      const outfile = join(directory, option, 'index.mjs');
      await build({
        entryPoints: [handlerPath(handlerFile)],
        outfile,
        ...HANDLER_BUNDLING,
        mainFields: [...HANDLER_BUNDLING.mainFields],
        external: [...HANDLER_BUNDLING.external],
        sourcemap: option === 'none' ? false : option,
        logLevel: 'silent',
      });
      const mapBytes = option === 'external' ? (await stat(`${outfile}.map`)).size : 0;
      files[option] = { file: outfile, bytes: (await stat(outfile)).size, mapBytes };
    }
    return { directory, files };
  });
  return { ...measurement, ...result };
}
