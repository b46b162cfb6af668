/**
 * The Lambda bundles load and run: esbuild with the stack's own bundling settings (ESM, the
 * createRequire banner, module-first resolution), then the bundle imported by a plain `node`
 * with none of the project's node_modules around it, as Lambda would.
 */
import { execFile } from 'node:child_process';
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { build } from 'esbuild';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { BUNDLING } from '../../infra/constructs/hopper-function.js';
import { handlerPath } from '../../infra/tasks.js';

const run = promisify(execFile);
let directory = '';

beforeAll(async () => {
  directory = await mkdtemp(join(tmpdir(), 'hopper-bundle-'));
});
afterAll(async () => {
  await rm(directory, { recursive: true, force: true });
});

async function bundle(handlerFile: string): Promise<string> {
  const outfile = join(directory, handlerFile.replace(/\.ts$/, '.mjs'));
  await build({
    entryPoints: [handlerPath(handlerFile)],
    outfile,
    bundle: true,
    platform: 'node',
    format: 'esm',
    // The local Node runs the test; Lambda's newer one reads the same output.
    target: 'node20',
    mainFields: [...(BUNDLING.mainFields ?? [])],
    banner: { js: BUNDLING.banner ?? '' },
    logLevel: 'silent',
  });
  return outfile;
}

describe('Lambda bundles', () => {
  it('the trigger bundle loads with undici and the AWS SDK inside, and ignores a key that is no drop', async () => {
    const outfile = await bundle('trigger.handler.ts');
    const script = join(directory, 'invoke-trigger.mjs');
    await writeFile(
      script,
      `const { handler } = await import(${JSON.stringify(outfile)});
       const result = await handler({ source: 'aws.s3', 'detail-type': 'Object Created',
         detail: { bucket: { name: 'b' }, object: { key: 'inbox/x/readme.txt', etag: 'e', size: 1 } } });
       process.stdout.write(JSON.stringify(result));`,
    );
    const { stdout } = await run(process.execPath, [script], {
      cwd: directory,
      env: { PATH: process.env.PATH, POWERTOOLS_LOG_LEVEL: 'SILENT', HOPPER_STATE_MACHINE_ARN: 'arn:x' },
    });
    expect(JSON.parse(stdout)).toMatchObject({ started: false });
  });

  it('a step bundle (service client, lib-storage, Powertools) loads and refuses an input without a run', async () => {
    const outfile = await bundle('copy-model.handler.ts');
    const script = join(directory, 'invoke-copy.mjs');
    await writeFile(
      script,
      `const { handler } = await import(${JSON.stringify(outfile)});
       try { await handler({}, { getRemainingTimeInMillis: () => 60000, awsRequestId: 'r' }); }
       catch (error) { process.stdout.write(JSON.stringify({ name: error.name, message: error.message })); }`,
    );
    const { stdout } = await run(process.execPath, [script], {
      cwd: directory,
      env: {
        PATH: process.env.PATH,
        POWERTOOLS_LOG_LEVEL: 'SILENT',
        HOPPER_SERVICE_URL: 'http://127.0.0.1:9',
        HOPPER_API_KEY_SECRET_ARN: 'hopper/api-key',
        AWS_REGION: 'us-east-1',
      },
    });
    const failure = JSON.parse(stdout) as { name: string; message: string };
    expect(failure.name).toBe('Hopper.Failed');
    expect(failure.message).toMatch(/^invalid_event: /);
  });
});
