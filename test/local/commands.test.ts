/**
 * `hopper run` and `hopper local` as a user runs them: dist/hopper.mjs spawned with Node, the
 * example drop trained end to end, failures reported with their code, and `hopper local` used
 * through the settings it prints by an S3 client of its own.
 */
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { ListObjectsV2Command, PutObjectCommand, S3Client } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startSimulatedService, type SimulatedService, modelBytesAt } from '../../local/service/index.js';
import { inboxKey, MODELS_PREFIX, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { hopper, smallDrop, startHopper, SUBPROCESS_TEST_MS } from '../helpers/hopper-cli.js';
import { EXAMPLE_FOLDER } from '../helpers/fixtures.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';

/** A quick simulated service whose account has no credits: a run gets as far as training. */
async function brokeService(apiKey: string): Promise<SimulatedService> {
  return startSimulatedService({ apiKey, credits: 0, heldOutCount: 0, readingMs: 20, structuringMs: 20 });
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
    const result = await hopper(['run', EXAMPLE_FOLDER, '--out', out, '--wait-ms', '20']);
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
    const service = await brokeService(apiKey);
    try {
      const drop = await smallDrop(work, 'broke');
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
      expect(result.stdout).toContain(`/broke/ (1 file, then ${TRAIN_JSON})\n`);
    } finally {
      await service.close();
    }
  });

  it('takes the API key from HOPPER_API_KEY', async () => {
    const service = await brokeService('from-env');
    try {
      const drop = await smallDrop(work, 'envkey');
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

  it('refuses a folder without train.json before starting anything, exit 1 as hopper check', async () => {
    await writeFile(join(work, 'data.csv'), 'id,text\nr1,x\n');
    const result = await hopper(['run', work]);
    expect(result.code).toBe(1);
    expect(result.stderr).toContain(
      `hopper run: not_a_drop: ${work} has no ${TRAIN_JSON}, which starts a run`,
    );
    expect(result.stdout).toBe('');
  });
});

describe('hopper local', { timeout: SUBPROCESS_TEST_MS }, () => {
  it('prints eval-able S3 settings and serves the console at the URL it prints; a drop copied in by an S3 client trains; SIGINT stops it, exit 0', async () => {
    const local = startHopper(['local', '--wait-ms', '20']);
    let s3: S3Client | undefined;
    try {
      await local.waitFor('HOPPER_BUCKET=', 30_000);
      const stdout = local.stdout();
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
        'AWS_ENDPOINT_URL_SFN',
        'AWS_REGION',
        'AWS_SECRET_ACCESS_KEY',
        'HOPPER_BUCKET',
        'HOPPER_SERVICE_URL',
        'HOPPER_STATE_MACHINE_ARN',
      ]);
      // The simulated service's key stays out of the output.
      expect(stdout).not.toContain('dev-key');
      expect(settings.AWS_ENDPOINT_URL).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(stdout).toMatch(/# Training service: http:\/\/127\.0\.0\.1:\d+ \(simulated\)/);
      // The console, at the URL its comment line prints.
      const consoleUrl = /^# Console: (http:\/\/127\.0\.0\.1:\d+\/)$/m.exec(stdout)?.[1];
      expect(consoleUrl).toBeDefined();
      const page = await fetch(consoleUrl ?? '');
      expect(page.status).toBe(200);
      expect(await page.text()).toContain('<title>Hopper local console</title>');
      const overview = (await (await fetch(new URL('/api/overview', consoleUrl))).json()) as {
        bucket: string;
      };
      expect(overview.bucket).toBe('hopper-local');

      s3 = new S3Client({
        endpoint: settings.AWS_ENDPOINT_URL,
        region: settings.AWS_REGION,
        credentials: {
          accessKeyId: settings.AWS_ACCESS_KEY_ID ?? '',
          secretAccessKey: settings.AWS_SECRET_ACCESS_KEY ?? '',
        },
        forcePathStyle: true,
      });
      const bucket = settings.HOPPER_BUCKET ?? '';
      for (const name of ['reviews.csv', 'labels.csv', TRAIN_JSON]) {
        await s3.send(
          new PutObjectCommand({
            Bucket: bucket,
            Key: inboxKey('cli-drop', name),
            Body: await readFile(join(EXAMPLE_FOLDER, name)),
          }),
        );
      }
      // The run's end, as hopper local reports it on stderr (up to 30 s).
      await local.waitFor('cli-drop  succeeded', 30_000, 'stderr');
      // The run's events, one line each on stderr as they were put; stdout stays eval-able.
      const eventLines = local
        .stderr()
        .split('\n')
        .filter((line) => line.startsWith('cli-drop  event hopper'));
      expect(eventLines).toEqual([
        expect.stringContaining('"Hopper Run Started"'),
        expect.stringMatching(/"Hopper Run Succeeded" \(run cli-drop-\w+\): s3:\/\/.+\/model\.onnx$/),
      ]);
      for (const line of local.stdout().trimEnd().split('\n'))
        expect(line).toMatch(/^(#.*|export [A-Z_]+=\S+)$/);
      const listed = await s3.send(
        new ListObjectsV2Command({ Bucket: bucket, Prefix: `${MODELS_PREFIX}cli-drop/` }),
      );
      const keys = (listed.Contents ?? []).map((object) => object.Key ?? '');
      expect(keys).toHaveLength(3);
      expect(keys.filter((key) => /\/model\.(onnx|json)$/.test(key))).toHaveLength(2);
      expect(keys).toContain(`${MODELS_PREFIX}cli-drop/current.json`);

      // The commands, spawned with only the printed settings, see the run (three more processes
      // to start: hence the longer timeout of these tests).
      const status = await hopper(['status', 'cli-drop', '--json'], settings);
      expect(status.stderr).toBe('');
      expect(JSON.parse(status.stdout)).toMatchObject({ drop: 'cli-drop', state: 'succeeded' });
      const runs = await hopper(['runs', 'cli-drop'], settings);
      expect(runs.stdout).toMatch(
        /^RUN +STARTED +TOOK +OUTCOME +CREDITS +MODEL +ERROR\ncli-drop-[0-9a-f]{32} .* succeeded +1 +\S+\n$/,
      );
      const models = await hopper(['models', '--json'], settings);
      expect(models.stderr).toBe('');
      expect((JSON.parse(models.stdout) as { id: string }[]).map((model) => model.id)).toEqual([
        (JSON.parse(status.stdout) as { model_id: string }).model_id,
      ]);
    } catch (error) {
      await local.stop();
      throw error;
    } finally {
      s3?.destroy();
    }
    const stopped = await local.stop();
    expect(stopped.code).toBe(0);
    expect(stopped.stderr).toContain('hopper local: stopping');
  });

  it('--no-console serves no console', async () => {
    const quiet = startHopper(['local', '--no-console']);
    try {
      await quiet.waitFor('HOPPER_BUCKET=', 30_000);
      expect(quiet.stdout()).not.toContain('# Console:');
    } finally {
      expect((await quiet.stop()).code).toBe(0);
    }
  });
});

describe('hopper run --console', { timeout: SUBPROCESS_TEST_MS }, () => {
  it("keeps the console up after the run until Ctrl-C, then exits with the run's code", async () => {
    // A brisk service of the test's own: what this shows is the console after the run, not the
    // simulated service's default phases (seconds), which the first test of hopper run trains through.
    const service = await startSimulatedService({ ...BRISK_SERVICE, apiKey: 'console-key' });
    const run = startHopper([
      'run',
      EXAMPLE_FOLDER,
      '--out',
      join(work, 'out'),
      '--wait-ms',
      '20',
      '--console',
      '--service-url',
      service.apiUrl,
      '--api-key',
      'console-key',
    ]);
    try {
      await run.waitFor('the console stays up at', 60_000, 'stderr');
      const url = /hopper: console at (http:\/\/127\.0\.0\.1:\d+\/)/.exec(run.stdout())?.[1];
      expect(url).toBeDefined();
      const runs = (await (await fetch(new URL('/api/runs', url))).json()) as {
        runs: { drop: string; state: string }[];
      };
      expect(runs.runs).toEqual([expect.objectContaining({ drop: 'reviews', state: 'succeeded' })]);
    } catch (error) {
      await run.stop();
      await service.close();
      throw error;
    }
    const stopped = await run.stop();
    await service.close();
    expect(stopped.code).toBe(0);
    expect(stopped.stdout).toMatch(/hopper: succeeded in/);
  });
});
