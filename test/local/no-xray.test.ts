/**
 * Local mode never loads the X-Ray SDK: it tracks every promise through async_hooks
 * (cls-hooked), which makes each promise many times costlier (docs/performance.md). Only a Lambda
 * container's runtime (runtimeFromEnvironment) and the trigger's Lambda entry load it.
 */
import { execFile } from 'node:child_process';
import { readdir } from 'node:fs/promises';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const root = new URL('../../', import.meta.url);

describe('the X-Ray SDK', () => {
  it('is not loaded by local mode with every Task handler, and is loaded by the Lambda runtime', async () => {
    const handlers = (await readdir(new URL('lambdas/handlers/', root)))
      .filter((name) => name.endsWith('.handler.ts') && name !== 'trigger.handler.ts')
      .map((name) => `./lambdas/handlers/${name}`);
    expect(handlers.length).toBeGreaterThan(5);
    const script = `
      import { createRequire } from 'node:module';
      const loaded = () => Object.keys(createRequire(import.meta.url).cache).some((path) => path.includes('aws-xray-sdk-core'));
      await import('./local/emulator/local-mode.ts');
      for (const path of ${JSON.stringify(handlers)}) await import(path);
      const before = loaded();
      const { runtimeFromEnvironment } = await import('./lambdas/runtime/runtime.ts');
      await runtimeFromEnvironment({ HOPPER_SERVICE_URL: 'https://x.example', HOPPER_API_KEY_SECRET_ARN: 'arn:x' });
      process.stdout.write(JSON.stringify({ before, after: loaded() }));`;
    const { stdout } = await run(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      cwd: root,
      env: {
        ...process.env,
        AWS_REGION: 'us-east-1',
        AWS_SDK_JS_NODE_VERSION_SUPPORT_WARNING_DISABLED: 'true',
      },
    });
    expect(JSON.parse(stdout)).toEqual({ before: false, after: true });
  });
});
