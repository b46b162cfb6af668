/**
 * `hopper status`, `runs`, `models` and `retry` against local mode (in-process), through the
 * settings `hopper local` prints: S3 at AWS_ENDPOINT_URL, the runs at AWS_ENDPOINT_URL_SFN, the
 * simulated service at HOPPER_SERVICE_URL (its key never printed). A run fails with no_credits,
 * credits are added, `hopper retry` resumes it without uploading again.
 */
import { mkdtemp, rm } from 'node:fs/promises';
import { createServer, type AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { readStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { runModelsCommand } from '../../local/cli/models.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import { runRunsCommand } from '../../local/cli/runs.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { runWaitCommand } from '../../local/cli/wait.js';
import { startLocalMode } from '../../local/emulator/local-mode.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import {
  dropAndRun,
  finished,
  nextExecution,
  nextSecond,
  RUN_TIMEOUT_MS,
  useLocalMode,
} from '../helpers/local-mode.js';
import { UNLABELLED_FILES } from '../helpers/fixtures.js';
import { putDrop } from '../helpers/pipeline.js';

const fixture = useLocalMode();

const run = runCommandCaptured;

/** What `hopper local` exports, but for its addresses. */
const LOCAL_SETTINGS = {
  AWS_ACCESS_KEY_ID: 'S3RVER',
  AWS_SECRET_ACCESS_KEY: 'S3RVER',
  AWS_REGION: 'us-east-1',
  HOPPER_BUCKET: 'hopper-local',
  HOPPER_STATE_MACHINE_ARN: 'arn:aws:states:us-east-1:123456789012:stateMachine:hopper-local',
};

describe('the commands against hopper local', () => {
  it('show a failed run, resume it with hopper retry, and list its runs and models', async () => {
    const local = await fixture.start({ simulated: { credits: 0, heldOutCount: 0 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const env = settingsOf(local);
    expect(Object.values(env).join('\n')).not.toContain(service.apiKey);

    const failed = await dropAndRun(local, 'reviews', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(failed.status?.error?.code).toBe('no_credits');

    const table = await run(runStatusCommand, [], env);
    expect(table).toMatchObject({ code: 0, stderr: '' });
    expect(table.stdout).toMatch(
      /^DROP +STATE +STEP +NEXT_ACTION +AGE +ERROR\nreviews +failed +3 +start_training +\d+s +no_credits\n$/,
    );

    const one = await run(runStatusCommand, ['reviews', '--json'], env);
    expect(JSON.parse(one.stdout)).toEqual(failed.status);
    const human = await run(runStatusCommand, ['reviews'], env);
    expect(human.stdout).toMatch(/^error +no_credits: the training service account has no credits/m);

    // Retried too early (still no credits): the resumed run fails the same way.
    const early = nextExecution(local, inboxKey('reviews', TRAIN_JSON));
    const first = await run(runRetryCommand, ['reviews'], env);
    expect(first.stderr).toBe('');
    expect(first.code).toBe(0);
    expect(first.stdout).toContain(
      `resuming run ${failed.execution.name} of "reviews" (no_credits) from dataset ${String(failed.status?.dataset_id)}`,
    );
    const tooEarly = await finished(local, await early.execution);
    expect(tooEarly.status).toMatchObject({ state: 'failed', dataset_id: failed.status?.dataset_id });
    expect(tooEarly.status?.error?.code).toBe('no_credits');

    // The same train.json bytes again: a new upload is a new run.
    service.configure({ credits: 1 });
    const started = nextExecution(local, inboxKey('reviews', TRAIN_JSON));
    const retry = await run(runRetryCommand, ['reviews'], env);
    expect(retry.code).toBe(0);
    expect(retry.stdout).toContain(`resuming run ${tooEarly.execution.name} of "reviews" (no_credits)`);
    const resumed = await finished(local, await started.execution);
    expect(resumed.outcome.status).toBe('SUCCEEDED');
    expect(resumed.status?.dataset_id).toBe(failed.status?.dataset_id);
    expect(service.requestCount('createDataset')).toBe(1);
    expect(service.requestCount('fileUpload')).toBe(1);
    expect(service.credits()).toBe(0);

    const runs = await run(runRunsCommand, ['reviews', '--json'], env);
    expect(runs.code).toBe(0);
    const listed = JSON.parse(runs.stdout) as {
      run_id: string;
      outcome: string;
      error: { code: string } | null;
    }[];
    expect(listed.map((entry) => [entry.run_id, entry.outcome, entry.error?.code ?? null])).toEqual([
      [resumed.execution.name, 'succeeded', null],
      [tooEarly.execution.name, 'failed', 'no_credits'],
      [failed.execution.name, 'failed', 'no_credits'],
    ]);
    const runsTable = await run(runRunsCommand, ['reviews', '--limit', '1'], env);
    expect(runsTable.stdout.trimEnd().split('\n')).toHaveLength(2);
    // The resumed run's row: outcome, the credit it spent, its model id (hopper runs' CREDITS, MODEL).
    expect(runsTable.stdout).toMatch(new RegExp(`^${resumed.execution.name} .* succeeded +1 +\\S+$`, 'm'));

    const models = await run(runModelsCommand, ['--json'], env);
    expect(models.stderr).toBe('');
    const records = JSON.parse(models.stdout) as { id: string; dataset_id: string }[];
    expect(records.map((model) => [model.id, model.dataset_id])).toEqual([
      [resumed.status?.model_id, failed.status?.dataset_id],
    ]);
    expect(models.stdout).not.toContain(service.apiKey);
  });

  it('hopper wait waits for the run of the train.json last uploaded, and exits by how it ended', async () => {
    const local = await fixture.start({ simulated: { credits: 1, heldOutCount: 0 } });
    const env = settingsOf(local);
    const first = await dropAndRun(local, 'reviews', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(first.outcome.status).toBe('SUCCEEDED');
    const succeeded = await run(runWaitCommand, ['reviews'], env);
    expect(succeeded).toMatchObject({ code: 0, stderr: '' });
    expect(succeeded.stdout).toMatch(
      new RegExp(`^reviews: succeeded\\ndrop +reviews\\nrun +${first.execution.name}\\n`),
    );

    // Dropped again with no credit left: asked at once, before the new run has written its status,
    // wait answers for the new run (failed), not with the first run's success.
    // An upload's time is to the second: uploaded within the second the first run ended in, the
    // same train.json would adopt that run's model (nextSecond says why); a second later it trains.
    await nextSecond();
    const again = nextExecution(local, inboxKey('reviews', TRAIN_JSON));
    await putDrop(local.s3.client, local.bucket, 'reviews', { [TRAIN_JSON]: '{}' });
    const failed = await run(runWaitCommand, ['reviews', '--timeout', '60'], env);
    expect(failed).toMatchObject({ code: 1, stderr: '' });
    const second = (await again.execution).name;
    expect(failed.stdout).toMatch(new RegExp(`^reviews: failed\\ndrop +reviews\\nrun +${second}\\n`));
    expect(failed.stdout).toMatch(/^error +no_credits: /m);

    expect(await run(runWaitCommand, ['nope', '--json'], env)).toEqual({
      code: 1,
      stdout: `${JSON.stringify({ error: { code: 'not_found', message: `hopper local has no run of "nope" (no s3://${local.bucket}/status/nope.json): drop a folder into inbox/nope/, train.json last` } }, null, 2)}\n`,
      stderr: '',
    });
  });

  it('hopper models reads only the pages its --limit needs, and filters by --dataset and --status', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const env = settingsOf(local);
    const first = await dropAndRun(local, 'one', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    const second = await dropAndRun(local, 'two', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect([first.outcome.status, second.outcome.status]).toEqual(['SUCCEEDED', 'SUCCEEDED']);

    const before = service.requestCount('listModels');
    const newest = await run(runModelsCommand, ['--limit', '1'], env);
    expect(newest.code).toBe(0);
    expect(service.requestCount('listModels') - before).toBe(1);
    expect(newest.stdout).toMatch(/^MODEL +NAME +STATUS +STEP +NEXT_ACTION +DATASET +CREATED\n/);
    expect(newest.stdout).toContain(String(second.status?.model_id));
    expect(newest.stdout).not.toContain(String(first.status?.model_id));

    const ofFirst = await run(
      runModelsCommand,
      ['--dataset', String(first.status?.dataset_id), '--json'],
      env,
    );
    expect((JSON.parse(ofFirst.stdout) as { id: string }[]).map((model) => model.id)).toEqual([
      first.status?.model_id,
    ]);
    const failedOnly = await run(runModelsCommand, ['--status', 'failed', '--json'], env);
    expect(JSON.parse(failedOnly.stdout)).toEqual([]);
    const unknown = await run(runModelsCommand, ['--dataset', '00000000-0000-4000-8000-000000000000'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/has no dataset 00000000-.*check --dataset/);
  });

  it('say what is wrong: no settings, an unknown drop, a run that cannot be retried, a bad flag', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0 } });
    const env = settingsOf(local);
    const nowhere = await run(runStatusCommand, [], {});
    expect(nowhere.code).toBe(1);
    expect(nowhere.stderr).toMatch(/no Hopper to talk to: give --stack NAME .*\(HOPPER_BUCKET is not set\)/);

    const unknown = await run(runStatusCommand, ['nope'], env);
    expect(unknown.code).toBe(1);
    expect(unknown.stderr).toMatch(/hopper local has no run of "nope"/);
    expect(await run(runRunsCommand, ['nope'], env)).toEqual({
      code: 1,
      stdout: '',
      stderr:
        'hopper runs: hopper local has no run of "nope": drop a folder into inbox/nope/, train.json last\n',
    });

    const done = await dropAndRun(local, 'done', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(done.outcome.status).toBe('SUCCEEDED');
    const retry = await run(runRetryCommand, ['done'], env);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toMatch(/succeeded: nothing to resume/);

    const bad = await run(runRunsCommand, ['done', '--limit', '0'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('hopper runs: --limit: expected an integer 1..1000, got "0"\n');
    const missing = await run(runRunsCommand, [], env);
    expect(missing.code).toBe(2);

    // Two models exist; a status the service does not know is refused, not read as "none".
    await dropAndRun(local, 'other', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(JSON.parse((await run(runModelsCommand, ['--json'], env)).stdout)).toHaveLength(2);
    expect(await run(runModelsCommand, ['--status', 'bogus'], env)).toEqual({
      code: 2,
      stdout: '',
      stderr:
        'hopper models: --status: expected one of queued, training, done, failed, refunded, got "bogus"\n',
    });
  });

  it('hopper retry refuses a retry that would fail the same way, and says what to change', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0, failTrainings: 1 } });
    const env = settingsOf(local);
    const encoder = await dropAndRun(local, 'encoder', {
      ...UNLABELLED_FILES,
      [TRAIN_JSON]: '{"encoder": "nope"}',
    });
    expect(encoder.status?.error?.code).toBe('unknown_encoder');
    const refused = await run(runRetryCommand, ['encoder'], env);
    expect(refused).toMatchObject({ code: 1, stdout: '' });
    expect(refused.stderr).toContain(
      `hopper retry: run ${encoder.execution.name} of "encoder" failed with unknown_encoder, and s3://${local.bucket}/inbox/encoder/${TRAIN_JSON} is unchanged since, so a retry would fail the same way: fix "encoder" in ${TRAIN_JSON} (or remove it, for the service's default) and upload it with "resume": true, which resumes the run`,
    );

    const failing = await dropAndRun(local, 'attempts', {
      ...UNLABELLED_FILES,
      [TRAIN_JSON]: '{"maxAttempts": 1}',
    });
    expect(failing.status?.error?.code).toBe('training_failed');
    const same = await run(runRetryCommand, ['attempts', '--json'], env);
    expect(same.code).toBe(1);
    expect(JSON.parse(same.stdout)).toEqual({
      error: {
        code: 'same_failure',
        message: expect.stringContaining(
          'failed with training_failed, and s3://hopper-local/inbox/attempts/train.json is unchanged since, so a retry would fail the same way: give --max-attempts N above 1',
        ) as string,
      },
    });
    expect(local.simulated?.requestCount('startTraining')).toBe(2);
    const resumed = nextExecution(local, inboxKey('attempts', TRAIN_JSON));
    expect((await run(runRetryCommand, ['attempts', '--max-attempts', '2'], env)).code).toBe(0);
    expect((await finished(local, await resumed.execution)).outcome.status).toBe('SUCCEEDED');
  });

  it('with the export lines of a local mode that has stopped, say it is not at that address any more', async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
    const gone = `http://127.0.0.1:${String((closed.address() as AddressInfo).port)}`;
    await new Promise((resolve) => closed.close(resolve));
    const env = {
      ...LOCAL_SETTINGS,
      AWS_ENDPOINT_URL: gone,
      AWS_ENDPOINT_URL_SFN: gone,
      HOPPER_SERVICE_URL: gone,
    };
    for (const [command, argv] of [
      [runStatusCommand, []],
      [runRunsCommand, ['reviews']],
      [runModelsCommand, []],
      [runRetryCommand, ['reviews']],
    ] as const) {
      const result = await run(command, argv, env);
      expect(result).toMatchObject({ code: 1, stdout: '' });
      expect(result.stderr).toMatch(
        new RegExp(
          `^hopper \\w+: nothing answers at ${gone.replace('http://', '')} \\(connection refused\\): local mode is not at that address any more\\. If \`hopper local\` was restarted, evaluate the export lines it printed again`,
        ),
      );
    }
    const asJson = await run(runStatusCommand, ['--json'], env);
    expect(JSON.parse(asJson.stdout)).toMatchObject({ error: { code: 'local_mode_gone' } });
  });

  it('each has --help', async () => {
    for (const [command, words] of [
      [runStatusCommand, /Usage: hopper status \[drop\]/],
      [runRunsCommand, /Usage: hopper runs <drop>.*--limit N/s],
      [runModelsCommand, /Usage: hopper models.*--limit N.*--status S.*--dataset ID/s],
      [runRetryCommand, /Usage: hopper retry <drop>.*--max-attempts N/s],
    ] as const) {
      const help = await run(command, ['--help'], {});
      expect(help.code).toBe(0);
      expect(help.stdout).toMatch(words);
      expect(help.stdout).toMatch(/--stack NAME.*--json/s);
    }
  });
});

describe('hopper runs after a restart of hopper local --data-dir', () => {
  it('lists the run the stop cut off as interrupted, beside the runs before it', async () => {
    const dataDir = await mkdtemp(join(tmpdir(), 'hopper-runs-restart-'));
    const start = (): ReturnType<typeof startLocalMode> =>
      startLocalMode({
        dataDir,
        waitMs: 10,
        retryPauseMs: 0,
        dropQuietMs: 0,
        simulated: { ...BRISK_SERVICE, heldOutCount: 0 },
      });
    try {
      const first = await start();
      let done, cut;
      try {
        done = await dropAndRun(first, 'reviews', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
        expect(done.outcome.status).toBe('SUCCEEDED');
        // The same drop again, with a training that outlasts this local mode.
        first.simulated?.configure({ trainingMs: 600_000 });
        const next = nextExecution(first, inboxKey('reviews', TRAIN_JSON));
        await putDrop(first.s3.client, first.bucket, 'reviews', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
        cut = await next.execution;
        const deadline = Date.now() + RUN_TIMEOUT_MS;
        while ((await readStatus(first.s3.client, first.bucket, 'reviews'))?.run_id !== cut.name) {
          if (Date.now() > deadline) throw new Error('the second run wrote no status');
          await new Promise((resolve) => setTimeout(resolve, 20));
        }
      } finally {
        await first.close();
      }
      const second = await start();
      try {
        expect(second.interrupted).toEqual(['reviews']);
        const listed = await run(runRunsCommand, ['reviews', '--json'], settingsOf(second));
        expect(listed).toMatchObject({ code: 0, stderr: '' });
        const runs = JSON.parse(listed.stdout) as { run_id: string; outcome: string; error: unknown }[];
        expect(runs.map((entry) => [entry.run_id, entry.outcome])).toEqual([
          [cut.name, 'interrupted'],
          [done.execution.name, 'succeeded'],
        ]);
        expect(runs[0]?.error).toMatchObject({ code: 'interrupted' });
        const table = await run(runRunsCommand, ['reviews'], settingsOf(second));
        expect(table.stdout).toMatch(new RegExp(`^${cut.name} .* interrupted .* interrupted$`, 'm'));
      } finally {
        await second.close();
      }
    } finally {
      await rm(dataDir, { recursive: true, force: true });
    }
  }, 60_000);
});
