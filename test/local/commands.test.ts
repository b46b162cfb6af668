/**
 * `hopper run` and `hopper local` as a user runs them: bin/hopper.mjs spawned with Node, the
 * example drop trained end to end, failures reported with their code, and `hopper local` used
 * through the settings it prints by an S3 client of its own.
 */
import { spawn, type ChildProcessByStdio } from 'node:child_process';
import { once } from 'node:events';
import { mkdtemp, readFile, rm, writeFile, mkdir } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { Readable } from 'node:stream';
import { fileURLToPath } from 'node:url';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulatedService } from '../../local/service/index.js';
import { modelBytesAt } from '../../local/service/model-bytes.js';
import { inboxKey, MODELS_PREFIX, TRAIN_JSON } from '../../lambdas/storage/keys.js';

const BIN = fileURLToPath(new URL('../../bin/hopper.mjs', import.meta.url));
const EXAMPLE = fileURLToPath(new URL('../../examples/reviews', import.meta.url));

interface Finished {
  code: number | null;
  stdout: string;
  stderr: string;
}

type Child = ChildProcessByStdio<null, Readable, Readable>;

function spawnHopper(args: string[], env: NodeJS.ProcessEnv = {}): Child {
  return spawn(process.execPath, [BIN, ...args], {
    stdio: ['ignore', 'pipe', 'pipe'],
    env: { ...process.env, ...env },
  });
}

async function hopper(args: string[], env: NodeJS.ProcessEnv = {}): Promise<Finished> {
  const child = spawnHopper(args, env);
  let stdout = '';
  let stderr = '';
  child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
  child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
  const [code] = (await once(child, 'exit')) as [number | null];
  return { code, stdout, stderr };
}

let work: string;
beforeEach(async () => {
  work = await mkdtemp(join(tmpdir(), 'hopper-cli-'));
});
afterEach(async () => {
  await rm(work, { recursive: true, force: true });
});

describe('hopper run', () => {
  it('trains the bundled example and leaves model.onnx and model.json in <out>/<drop>/, exit 0', async () => {
    const out = join(work, 'out');
    const result = await hopper(['run', EXAMPLE, '--out', out, '--wait-ms', '20']);
    expect(result.stderr).toBe('');
    expect(result.code).toBe(0);
    // Not a terminal: one plain line per state, with the service's step and next_action.
    expect(result.stdout).toMatch(/\d+\.\ds {2}UploadFiles +step 1 {2}next_action upload_files/);
    expect(result.stdout).toMatch(/LabelExamples +step 3 {2}next_action label_examples/);
    expect(result.stdout).toMatch(/hopper: succeeded in [\d.]+ s: .*model\.onnx \(1\.0 MiB\)/);
    expect(result.stdout).not.toContain('\x1b[');

    const record = JSON.parse(await readFile(join(out, 'reviews', 'model.json'), 'utf8')) as {
      model: { id: string; onnx_bytes: number };
      cost: { credits: number };
    };
    const onnx = await readFile(join(out, 'reviews', 'model.onnx'));
    expect(onnx.equals(modelBytesAt(record.model.id, 0, onnx.length))).toBe(true);
    expect(onnx.length).toBe(record.model.onnx_bytes);
    expect(record.cost.credits).toBe(1);
  });

  it('prints the error code and message of a failed run and exits 1; the API key appears nowhere', async () => {
    const apiKey = 'sk-never-print-this-0123';
    const service = await startSimulatedService({
      apiKey,
      credits: 0,
      heldOutCount: 0,
      readingMs: 20,
      structuringMs: 20,
    });
    try {
      const drop = join(work, 'broke');
      await mkdir(drop);
      await writeFile(join(drop, 'reviews.csv'), 'id,text\nr1,good\nr2,bad\n');
      await writeFile(join(drop, TRAIN_JSON), '{}');
      const result = await hopper([
        'run',
        drop,
        '--out',
        join(work, 'out'),
        '--wait-ms',
        '20',
        '--service-url',
        service.apiUrl,
        '--api-key',
        apiKey,
      ]);
      expect(result.code).toBe(1);
      expect(result.stderr).toMatch(/hopper: the run failed after [\d.]+ s: no_credits: .+/);
      expect(`${result.stdout}${result.stderr}`).not.toContain(apiKey);
      expect(result.stdout).toContain(`training service at ${service.apiUrl}\n`);
    } finally {
      await service.close();
    }
  });

  it('takes the API key from HOPPER_API_KEY', async () => {
    const service = await startSimulatedService({
      apiKey: 'from-env',
      credits: 0,
      heldOutCount: 0,
      readingMs: 20,
      structuringMs: 20,
    });
    try {
      const drop = join(work, 'envkey');
      await mkdir(drop);
      await writeFile(join(drop, 'reviews.csv'), 'id,text\nr1,good\n');
      await writeFile(join(drop, TRAIN_JSON), '{}');
      const result = await hopper(['run', drop, '--wait-ms', '20', '--service-url', service.apiUrl], {
        HOPPER_API_KEY: 'from-env',
      });
      // Past authorization: the run got as far as the training the account cannot pay for.
      expect(result.stderr).toContain('no_credits');
      expect(service.requestCount('createDataset')).toBe(1);
    } finally {
      await service.close();
    }
  });

  it('refuses a folder without train.json before starting anything, exit 2', async () => {
    await writeFile(join(work, 'data.csv'), 'id,text\nr1,x\n');
    const result = await hopper(['run', work]);
    expect(result.code).toBe(2);
    expect(result.stderr).toContain(`has no ${TRAIN_JSON}, which starts a run`);
    expect(result.stdout).toBe('');
  });
});

describe('hopper local', () => {
  it('prints eval-able S3 settings; a drop copied in by an S3 client trains; SIGINT stops it, exit 0', async () => {
    const child = spawnHopper(['local', '--wait-ms', '20']);
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
    const exited = once(child, 'exit') as Promise<[number | null]>;
    let s3: S3Client | undefined;
    try {
      // Up to 30 s for the settings.
      for (let waited = 0; waited < 300 && !stdout.includes('HOPPER_BUCKET='); waited++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
      const lines = stdout.trimEnd().split('\n');
      // Every line a shell can eval: a comment or an export.
      for (const line of lines) expect(line).toMatch(/^(#.*|export [A-Z_]+=\S+)$/);
      const settings = Object.fromEntries(
        lines.flatMap((line) => {
          const match = /^export ([A-Z_]+)=(\S+)$/.exec(line);
          return match === null ? [] : [[match[1], match[2]]];
        }),
      ) as Record<string, string>;
      expect(Object.keys(settings).sort()).toEqual([
        'AWS_ACCESS_KEY_ID',
        'AWS_ENDPOINT_URL',
        'AWS_REGION',
        'AWS_SECRET_ACCESS_KEY',
        'HOPPER_BUCKET',
      ]);
      expect(settings.AWS_ENDPOINT_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stdout).toMatch(/# Training service: http:\/\/127\.0\.0\.1:\d+ \(simulated\)/);

      s3 = new S3Client({
        endpoint: settings.AWS_ENDPOINT_URL,
        region: settings.AWS_REGION,
        credentials: {
          accessKeyId: settings.AWS_ACCESS_KEY_ID ?? '',
          secretAccessKey: settings.AWS_SECRET_ACCESS_KEY ?? '',
        },
        forcePathStyle: true,
        requestChecksumCalculation: 'WHEN_REQUIRED',
      });
      const bucket = settings.HOPPER_BUCKET ?? '';
      for (const name of ['reviews.csv', 'labels.csv', TRAIN_JSON]) {
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: inboxKey('cli-drop', name),
            Body: await readFile(join(EXAMPLE, name)),
          }),
        );
      }
      let keys: string[] = [];
      // Up to 30 s for the model.
      for (let polls = 0; polls < 300 && !keys.some((key) => key.endsWith('/model.json')); polls++) {
        await new Promise((resolve) => setTimeout(resolve, 100));
        const listed = await s3.send(
          new ListObjectsV2Command({ Bucket: bucket, Prefix: `${MODELS_PREFIX}cli-drop/` }),
        );
        keys = (listed.Contents ?? []).map((object) => object.Key ?? '');
      }
      expect(keys).toHaveLength(2);
      expect(keys.some((key) => key.endsWith('/model.onnx'))).toBe(true);
      expect(stderr).toMatch(/cli-drop {2}succeeded/);
    } finally {
      s3?.destroy();
      child.kill('SIGINT');
    }
    const [code] = await exited;
    expect(code).toBe(0);
    expect(stderr).toContain('hopper local: stopping');
  });
});
