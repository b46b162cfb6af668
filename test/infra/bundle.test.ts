/**
 * The Lambda bundles as the stack ships them: the app synthesized with CDK's own esbuild bundling
 * (NodejsFunction, the stack's settings), each function's asset read from the cloud assembly.
 * Each bundle holds only what its function runs: the training service's client and undici, and
 * the Secrets Manager client, only where the Task's access names the API key; the EventBridge
 * client only where it puts run events; DescribeExecution only where it asks after executions. Each leaves nothing to the runtime but Node's built-ins
 * and the AWS SDK v3 the Lambda runtime includes, and loads in a plain `node` with only
 * `node_modules/@aws-sdk` beside it, as in Lambda, and answers.
 */
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, stat, symlink, writeFile } from 'node:fs/promises';
import { builtinModules } from 'node:module';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { promisify } from 'node:util';
import { Template } from 'aws-cdk-lib/assertions';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createHopperApp } from '../../infra/hopper-app.js';
import { TASKS, type TaskAccess } from '../../infra/tasks.js';
import { functionNamed, type CfnResource } from './helpers.js';

const run = promisify(execFile);

/**
 * The goals (docs/deploy.md#bundles): every bundle under 1 MB, and under 400 KB where the function
 * never calls the training service. Measured: ~590-630 KB and ~230-325 KB.
 */
const KB = 1024;
const SERVICE_BUNDLE_LIMIT = 1024 * KB;
const NO_SERVICE_BUNDLE_LIMIT = 400 * KB;

/** What a bundle may import without holding it: Node's built-ins and the runtime's AWS SDK. */
const RUNTIME_PROVIDED = (specifier: string): boolean =>
  specifier.startsWith('node:') || builtinModules.includes(specifier) || specifier.startsWith('@aws-sdk/');

/** The module specifiers a minified ES module bundle imports or requires at run time. */
function importedSpecifiers(code: string): string[] {
  const found = new Set<string>();
  for (const match of code.matchAll(
    /(?:\bfrom\s*|\bimport\s*\(?\s*|\b__require\(|\brequire\()["']([^"'./][^"']*)["']/g,
  )) {
    found.add(match[1] as string);
  }
  return [...found].sort();
}

/** undici's code holds this error code; the SDK clients are imported from the runtime by name. */
const UNDICI_MARKER = 'UND_ERR_CONNECT_TIMEOUT';
const SECRETS_MANAGER = '@aws-sdk/client-secrets-manager';
const EVENT_BRIDGE = '@aws-sdk/client-eventbridge';
const STEP_FUNCTIONS = '@aws-sdk/client-sfn';

interface Bundle {
  readonly name: string;
  readonly access: TaskAccess;
  readonly file: string;
  readonly bytes: number;
  readonly code: string;
}

const TRIGGER_ACCESS: TaskAccess = { bucket: {}, apiKey: false };
let assemblyDirectory = '';
let scratch = '';
const bundles: Bundle[] = [];

beforeAll(async () => {
  scratch = await mkdtemp(join(tmpdir(), 'hopper-bundle-'));
  const { app, stack } = createHopperApp({ cloudFormationValidation: false });
  // Bundling on (the default): every NodejsFunction runs esbuild into the App's temporary outdir.
  const assembly = app.synth();
  assemblyDirectory = assembly.directory;
  // The Lambda runtime's AWS SDK v3, played by the project's: the one package a bundle leaves out,
  // found from each asset folder as Lambda's runtime finds it.
  await mkdir(join(assemblyDirectory, 'node_modules'));
  await symlink(resolve('node_modules/@aws-sdk'), join(assemblyDirectory, 'node_modules', '@aws-sdk'), 'dir');
  const template = Template.fromStack(stack);
  const named = [
    ...TASKS.map((task) => ({ name: task.name, access: task.access })),
    { name: 'Trigger', access: TRIGGER_ACCESS },
  ];
  for (const { name, access } of named) {
    const { resource } = functionNamed(template, name);
    const file = join(assembly.directory, assetFolder(resource), 'index.mjs');
    const code = await readFile(file, 'utf8');
    bundles.push({ name, access, file, bytes: (await stat(file)).size, code });
  }
}, 600_000);

afterAll(async () => {
  if (assemblyDirectory !== '') await rm(assemblyDirectory, { recursive: true, force: true });
  await rm(scratch, { recursive: true, force: true });
});

function assetFolder(resource: CfnResource): string {
  const key = (resource.Properties.Code as { S3Key: string }).S3Key;
  return `asset.${key.replace(/\.zip$/, '')}`;
}

function bundleOf(name: string): Bundle {
  const bundle = bundles.find((candidate) => candidate.name === name);
  if (bundle === undefined) throw new Error(`no bundle for ${name}`);
  return bundle;
}

describe('Lambda bundles', () => {
  it('one per function, without a source map', () => {
    expect(bundles.map((bundle) => bundle.name).sort()).toEqual(
      [...TASKS.map((task) => task.name), 'Trigger'].sort(),
    );
    for (const bundle of bundles) expect(bundle.code).not.toContain('sourceMappingURL');
  });

  it('leave only Node built-ins and the AWS SDK to the runtime, and take the SDK from it', () => {
    for (const bundle of bundles) {
      const specifiers = importedSpecifiers(bundle.code);
      expect({ name: bundle.name, outside: specifiers.filter((s) => !RUNTIME_PROVIDED(s)) }).toEqual({
        name: bundle.name,
        outside: [],
      });
      expect(specifiers.filter((s) => s.startsWith('@aws-sdk/')).length).toBeGreaterThan(0);
    }
  });

  it('hold the training service client, undici and Secrets Manager only where the Task calls the service', () => {
    for (const bundle of bundles) {
      const calls = bundle.access.apiKey;
      expect({ name: bundle.name, undici: bundle.code.includes(UNDICI_MARKER) }).toEqual({
        name: bundle.name,
        undici: calls,
      });
      expect({
        name: bundle.name,
        secrets: importedSpecifiers(bundle.code).includes(SECRETS_MANAGER),
      }).toEqual({
        name: bundle.name,
        secrets: calls,
      });
    }
  });

  it('hold the EventBridge client only where the Task puts run events', () => {
    for (const bundle of bundles) {
      expect({ name: bundle.name, events: importedSpecifiers(bundle.code).includes(EVENT_BRIDGE) }).toEqual({
        name: bundle.name,
        events: bundle.access.events === true,
      });
    }
  });

  it('hold the Step Functions client only where the Task asks whether executions run (and in the trigger)', () => {
    for (const bundle of bundles) {
      const asks = bundle.access.executions === true;
      expect({ name: bundle.name, sfn: importedSpecifiers(bundle.code).includes(STEP_FUNCTIONS) }).toEqual({
        name: bundle.name,
        sfn: asks || bundle.name === 'Trigger',
      });
      expect({ name: bundle.name, describes: bundle.code.includes('DescribeExecution') }).toEqual({
        name: bundle.name,
        describes: asks,
      });
    }
  });

  it(`stay under ${SERVICE_BUNDLE_LIMIT / KB} KB, and under ${NO_SERVICE_BUNDLE_LIMIT / KB} KB where the service is never called`, () => {
    const over = bundles
      .filter(
        (bundle) => bundle.bytes > (bundle.access.apiKey ? SERVICE_BUNDLE_LIMIT : NO_SERVICE_BUNDLE_LIMIT),
      )
      .map((bundle) => `${bundle.name}: ${Math.round(bundle.bytes / KB)} KB`);
    expect(over).toEqual([]);
  });

  it('the trigger loads and ignores a key that is no drop', async () => {
    const script = join(scratch, 'invoke-trigger.mjs');
    await writeFile(
      script,
      `const { handler } = await import(${JSON.stringify(bundleOf('Trigger').file)});
       const result = await handler({ source: 'aws.s3', 'detail-type': 'Object Created',
         detail: { bucket: { name: 'b' }, object: { key: 'inbox/x/readme.txt', etag: 'e', size: 1 } } });
       process.stdout.write(JSON.stringify(result));`,
    );
    const { stdout } = await run(process.execPath, [script], {
      cwd: scratch,
      env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'SILENT', HOPPER_STATE_MACHINE_ARN: 'arn:x' },
    });
    expect(JSON.parse(stdout)).toMatchObject({ started: false });
  });

  it('every Task bundle loads and refuses an input without a run; loaded in one process (local mode), they share one invocation scope', async () => {
    const script = join(scratch, 'invoke-tasks.mjs');
    const files = Object.fromEntries(TASKS.map((task) => [task.name, bundleOf(task.name).file]));
    await writeFile(
      script,
      `const answers = {};
       const scopes = new Set();
       for (const [name, file] of Object.entries(${JSON.stringify(files)})) {
         const { handler } = await import(file);
         scopes.add(globalThis[Symbol.for('hopper.invocation-scope')]);
         try { await handler({}, { getRemainingTimeInMillis: () => 60000, awsRequestId: 'r' }); answers[name] = 'returned'; }
         catch (error) { answers[name] = error.name + ' ' + error.message.split(':')[0]; }
       }
       const kinds = [...scopes].map((scope) => scope?.constructor.name ?? 'none');
       process.stdout.write(JSON.stringify({ answers, scopes: kinds }));`,
    );
    const { stdout } = await run(process.execPath, [script], {
      cwd: scratch,
      env: {
        PATH: process.env.PATH,
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        HOPPER_SERVICE_URL: 'http://127.0.0.1:9',
        HOPPER_API_KEY_SECRET_ARN: 'hopper/api-key',
        AWS_REGION: 'us-east-1',
      },
    });
    const { answers, scopes } = JSON.parse(stdout) as { answers: unknown; scopes: string[] };
    expect(answers).toEqual(
      Object.fromEntries(TASKS.map((task) => [task.name, 'Hopper.Failed invalid_event'])),
    );
    // One AsyncLocalStorage for all (lambdas/runtime/invocation-scope.ts): each costs every promise.
    expect(scopes).toEqual(['AsyncLocalStorage']);
  });
});
