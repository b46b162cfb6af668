/**
 * What a user installs, installed as a user installs it: `npm run pack` (scripts/pack.ts), then the
 * tarballs installed outside the clone, from the npm cache where it can serve.
 *
 * - hopper-cdk in a team's own CDK app: a CommonJS TypeScript project as `cdk init app` makes one
 *   (type-checked by tsc, then run) and an ES module one, side by side over one node_modules. Each
 *   synthesizes Hopper with an imported bucket, topic and secret under cdk-nag's AwsSolutions
 *   checks, in a fresh App with none of this repository's feature flags, and `hopper permissions`
 *   checks the app's template with the simulator installed in the app.
 * - hopper-cli installed globally (`npm install -g`) into a prefix of its own: `hopper run` on a copy
 *   of examples/reviews, from a folder outside the clone, trains a model; `hopper permissions` says
 *   how to get the simulator it does not ship, then checks with one installed beside it; and
 *   `npx hopper-cli` runs the same command where the package is installed.
 *
 * 140 s in a full npm test on the 2-core machine (docs/packages.md), most of it npm installing
 * aws-cdk-lib and the CLI's dependencies; it runs beside the other test files.
 */
import { execFile } from 'node:child_process';
import { cp, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TASKS } from '../infra/tasks.js';
import { pack } from '../scripts/pack.js';

const run = promisify(execFile);
const ROOT = fileURLToPath(new URL('..', import.meta.url));
const MINUTES = 60_000;

const rootPackage = JSON.parse(await readFile(join(ROOT, 'package.json'), 'utf8')) as {
  version: string;
  dependencies: Record<string, string>;
  devDependencies: Record<string, string>;
};

/** `npm <args>` in `cwd`, offline where the cache serves, quiet. */
function npm(cwd: string, args: readonly string[]): Promise<{ stdout: string; stderr: string }> {
  return run('npm', [...args, '--prefer-offline', '--no-audit', '--no-fund', '--loglevel=error'], {
    cwd,
    maxBuffer: 64 * 1024 * 1024,
    env: { ...process.env, npm_config_update_notifier: 'false' },
  });
}

/** The same version of a package as the repository's own install, for the consumer to install. */
function pinned(name: string): string {
  const range = rootPackage.dependencies[name] ?? rootPackage.devDependencies[name];
  if (range === undefined) throw new Error(`${name} is not a dependency of the repository`);
  return `${name}@${range}`;
}

interface CfnTemplate {
  readonly Resources: Record<string, { Type: string; Properties?: Record<string, unknown> }>;
}

function resourcesOf(template: CfnTemplate, type: string): Record<string, unknown>[] {
  return Object.values(template.Resources)
    .filter((resource) => resource.Type === type)
    .map((resource) => resource.Properties ?? {});
}

let work: string;
let tarballs: Record<string, string>;
/** The global install of hopper-cli, started with the team app's install: both run at once. */
let globalInstall: Promise<unknown>;
const GLOBAL_PREFIX = (): string => join(work, 'global');

beforeAll(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-packages-'));
  // The code the globalSetup built: other test files run its bundles while this one packs.
  tarballs = await pack({ build: false });
  globalInstall = npm(work, ['install', '-g', '--prefix', GLOBAL_PREFIX(), tarballs['hopper-cli']!]);
  // Awaited by its own describe's hook; a failure here must not be unhandled before then.
  globalInstall.catch(() => undefined);
}, 10 * MINUTES);

afterAll(async () => {
  await rm(work, { recursive: true, force: true });
});

const README = await readFile(join(ROOT, 'README.md'), 'utf8');

/** The README's install line for the construct ("Use Hopper in your own CDK app"), as written. */
const README_INSTALL = (() => {
  const section = README.slice(README.indexOf('## Use Hopper in your own CDK app'));
  const line = /`npm install (hopper-cdk[^`]*)`/.exec(section)?.[1];
  if (line === undefined) throw new Error('the README names no npm install line for hopper-cdk');
  return line.split(' ');
})();

/** API.md's examples (typedoc's "#### Example" sections), each a whole app. */
const API_EXAMPLES = [
  ...(await readFile(join(ROOT, 'API.md'), 'utf8')).matchAll(/#### Example\n\n```ts\n([\s\S]*?)```\n/g),
].map((match) => match[1]!);

describe('the README', () => {
  it('shows the very app this test installs and synthesizes (Use Hopper in your own CDK app)', async () => {
    const app = await readFile(join(ROOT, 'test/consumers/cjs/app.ts'), 'utf8');
    expect(README).toContain(`\`\`\`ts\n${app}\`\`\`\n`);
    expect(API_EXAMPLES.length).toBeGreaterThan(0);
  });
});

describe('the tarballs', () => {
  it('hold only what a user runs, at the repository version', async () => {
    expect(Object.keys(tarballs).sort()).toEqual(['hopper-cdk', 'hopper-cli']);
    for (const [name, file] of Object.entries(tarballs)) {
      expect(file).toContain(`${name}-${rootPackage.version}.tgz`);
      const { stdout } = await run('tar', ['-tzf', file]);
      const files = stdout.trim().split('\n');
      expect(
        files.filter(
          (path) =>
            /\/(test|bench|\.ci|scripts|images)\/|\.test\.|\.ts$/.test(path) && !path.endsWith('.d.ts'),
        ),
      ).toEqual([]);
      expect(files).toContain('package/package.json');
      expect(files).toContain('package/CHANGELOG.md');
      for (const task of [...TASKS.map((t) => t.handlerFile), 'trigger.handler.ts']) {
        expect(files).toContain(`package/dist/handlers/${task.replace('.handler.ts', '')}/index.mjs`);
      }
    }
  });

  it('API.md is the reference typedoc generates from the doc comments now (npm run api rewrites it)', async () => {
    const generated = await readFile(join(ROOT, 'dist/api/API.md'), 'utf8');
    expect(await readFile(join(ROOT, 'API.md'), 'utf8')).toBe(generated);
  });
});

describe('hopper-cdk in a team CDK app, outside the clone', () => {
  let project: string;

  beforeAll(async () => {
    project = join(work, 'team-app');
    await cp(join(ROOT, 'test/consumers'), project, { recursive: true });
    // API.md's examples are apps of the CommonJS project too: its tsc checks them, node runs them.
    for (const [index, example] of API_EXAMPLES.entries())
      await writeFile(join(project, 'cjs', `api-example-${String(index)}.ts`), example);
    await run('npm', ['init', '-y'], { cwd: project });
    // What `cdk init app` installs (aws-cdk-lib, constructs, @types/node), then the README's own
    // install line as written: only the name of the tarball stands for hopper-cdk, not yet on npm.
    // One npm install for both, with hopper-cli and the IAM simulator `hopper permissions` runs
    // (a team installs it in its app; no package of Hopper depends on it) beside them.
    await npm(project, [
      'install',
      pinned('aws-cdk-lib'),
      pinned('constructs'),
      pinned('@types/node'),
      pinned('@cloud-copilot/iam-simulate'),
      tarballs['hopper-cli']!,
      ...README_INSTALL.map((spec) => (spec === 'hopper-cdk' ? tarballs['hopper-cdk']! : spec)),
    ]);
  }, 10 * MINUTES);

  it('installs nothing beside its peers', async () => {
    const installed = JSON.parse(
      await readFile(join(project, 'node_modules/hopper-cdk/package.json'), 'utf8'),
    ) as {
      dependencies?: unknown;
      peerDependencies: Record<string, string>;
    };
    expect(installed.dependencies).toBeUndefined();
    expect(Object.keys(installed.peerDependencies).sort()).toEqual(['aws-cdk-lib', 'constructs']);
    expect(await readdir(join(project, 'node_modules/hopper-cdk'))).not.toContain('node_modules');
  });

  it('runs the hopper command by the package name: npx hopper-cli', async () => {
    const { stdout } = await run('npx', ['--no-install', 'hopper-cli', '--version'], { cwd: project });
    expect(stdout.trim()).toBe(`hopper ${rootPackage.version}`);
  });

  it.each(['cjs', 'esm'])(
    'synthesizes in a %s project: the bucket wired to EventBridge, 12 functions with their code, no topic or key of its own, AwsSolutions clean',
    async (kind) => {
      const app = join(project, kind);
      let entry = join(app, 'app.mjs');
      if (kind === 'cjs') {
        // The consumer's own tsc: strict, skipLibCheck off, so Hopper's declarations are checked too.
        await run(process.execPath, [join(ROOT, 'node_modules/typescript/bin/tsc'), '-p', app]);
        entry = join(app, 'build/app.js');
      }
      const outdir = join(app, 'cdk.out');
      const synth = await run(process.execPath, [entry], {
        cwd: app,
        env: { ...process.env, CDK_OUTDIR: outdir },
      });
      // The imported topic's region brings no warning about the run notification rule.
      expect(synth.stderr).not.toMatch(/warning/i);
      const template = JSON.parse(
        await readFile(join(outdir, 'TeamStack.template.json'), 'utf8'),
      ) as CfnTemplate;
      const [notifications] = resourcesOf(template, 'Custom::S3BucketNotifications');
      expect(notifications).toMatchObject({
        BucketName: 'team-drops',
        NotificationConfiguration: { EventBridgeConfiguration: {} },
      });
      const rules = resourcesOf(template, 'AWS::Events::Rule').map((rule) =>
        JSON.stringify(rule.EventPattern),
      );
      expect(
        rules.some((pattern) => pattern.includes('"team-drops"') && pattern.includes('train.json')),
      ).toBe(true);
      const functions = resourcesOf(template, 'AWS::Lambda::Function').filter((fn) =>
        String(fn.Description).startsWith('Hopper '),
      );
      expect(functions).toHaveLength(12);
      for (const fn of functions) {
        const key = (fn.Code as { S3Key: string }).S3Key.replace(/\.zip$/, '');
        expect(await readdir(join(outdir, `asset.${key}`))).toEqual(['index.mjs']);
      }
      expect(resourcesOf(template, 'AWS::SNS::Topic')).toEqual([]);
      expect(resourcesOf(template, 'AWS::KMS::Key')).toEqual([]);
      expect(resourcesOf(template, 'AWS::S3::Bucket')).toEqual([]);
    },
    5 * MINUTES,
  );
  it(
    "synthesizes API.md's examples and two Hoppers in one stack, with no warning (after the cjs project's tsc)",
    async () => {
      const app = join(project, 'cjs');
      const entries = [...API_EXAMPLES.keys()].map((index) => `api-example-${String(index)}.js`);
      for (const entry of [...entries, 'two-hoppers.js']) {
        const outdir = join(app, `cdk.out.${entry}`);
        const { stdout, stderr } = await run(process.execPath, [join(app, 'build', entry)], {
          cwd: app,
          env: { ...process.env, CDK_OUTDIR: outdir },
        });
        expect(`${stdout}${stderr}`).not.toMatch(/warning|Primary identifiers/i);
        expect((await readdir(outdir)).filter((file) => file.endsWith('.template.json')).length).toBe(1);
      }
      const two = JSON.parse(
        await readFile(join(app, 'cdk.out.two-hoppers.js/TwoHoppers.template.json'), 'utf8'),
      ) as CfnTemplate & { Outputs: Record<string, { Value: unknown }> };
      // Each declares the output hopper --stack finds it by (test/local/stack-hoppers.test.ts reads them).
      expect(
        Object.values(two.Outputs).filter((output) => JSON.stringify(output.Value).includes('\\"hopper\\":')),
      ).toHaveLength(2);
    },
    5 * MINUTES,
  );

  it(
    "checks the team's own template with hopper permissions, the simulator installed in the app",
    async () => {
      const template = join(project, 'cjs/cdk.out/TeamStack.template.json');
      // A failed check exits 1: its stdout, the table, is what the assertions show.
      const { stdout } = await run('npx', ['--no-install', 'hopper', 'permissions', '--template', template], {
        cwd: project,
      }).catch((error: unknown) => error as { stdout: string });
      // The imported secret's own key is checked too: kms:Decrypt via Secrets Manager.
      expect(stdout).toMatch(/\nCreateDataset +kms:Decrypt +arn:aws:kms:\S+ +allowed /);
      expect(stdout).toMatch(/ requests allowed; 0 unused grants\n$/);
    },
    3 * MINUTES,
  );
});

describe('hopper-cli installed globally, outside the clone', () => {
  let prefix: string;
  let folder: string;

  beforeAll(async () => {
    prefix = GLOBAL_PREFIX();
    folder = join(work, 'somewhere');
    await mkdir(folder, { recursive: true });
    await globalInstall;
    await cp(join(ROOT, 'examples/reviews'), join(folder, 'reviews'), { recursive: true });
  }, 10 * MINUTES);

  it('prints the package version', async () => {
    const { stdout } = await run(join(prefix, 'bin/hopper'), ['--version'], { cwd: folder });
    expect(stdout.trim()).toBe(`hopper ${rootPackage.version}`);
  });

  it(
    'trains the example with hopper run',
    async () => {
      const { stdout } = await run(join(prefix, 'bin/hopper'), ['run', 'reviews'], {
        cwd: folder,
        env: { ...process.env, PATH: `${join(prefix, 'bin')}:${process.env.PATH ?? ''}` },
      });
      expect(stdout).toMatch(/succeeded in/);
      expect(await readdir(join(folder, 'out/reviews'))).toEqual(['model.json', 'model.onnx']);
    },
    3 * MINUTES,
  );

  it('hopper permissions says how to get the AGPL simulator it does not ship, then checks with it', async () => {
    const hopper = join(prefix, 'bin/hopper');
    const missing = (await run(hopper, ['permissions'], { cwd: folder }).catch(
      (error: unknown) => error,
    )) as {
      code: number;
      stderr: string;
    };
    expect(missing.code).toBe(1);
    expect(missing.stderr).toContain('npm install -g @cloud-copilot/iam-simulate');
    // Installed globally beside hopper, it is found there; the check is Hopper's own stack.
    await npm(work, ['install', '-g', '--prefix', prefix, pinned('@cloud-copilot/iam-simulate')]);
    const { stdout } = await run(hopper, ['permissions'], { cwd: folder });
    expect(stdout).toMatch(/\nTrigger +states:StartExecution +arn:aws:states:\S+ +allowed /);
    expect(stdout).toMatch(/ requests allowed; 0 unused grants\n$/);
  });

  it('holds no aws-cdk-lib: local mode reads the definition built from the construct', async () => {
    const installed = join(prefix, 'lib/node_modules/hopper-cli');
    expect(await readdir(join(installed, 'node_modules'))).not.toContain('aws-cdk-lib');
  });
});
