/**
 * `hopper status`, `runs`, `models` and `retry` against local mode (in-process), through the
 * settings `hopper local` prints: S3 at AWS_ENDPOINT_URL, the runs at AWS_ENDPOINT_URL_SFN, the
 * simulated service at HOPPER_SERVICE_URL (its key never printed). A run fails with no_credits,
 * credits are added, `hopper retry` resumes it without uploading again.
 */
import { describe, expect, it } from 'vitest';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { runModelsCommand } from '../../local/commands/models.js';
import { runRetryCommand } from '../../local/commands/retry.js';
import { runRunsCommand } from '../../local/commands/runs.js';
import { runStatusCommand } from '../../local/commands/status.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { dropAndRun, finished, nextExecution, useLocalMode } from '../helpers/local-mode.js';

const fixture = useLocalMode();
const DATA = { 'reviews.csv': 'id,text\nr1,good\nr2,bad\nr3,fine\n' };

const run = runCommandCaptured;

describe('the commands against hopper local', () => {
  it('show a failed run, resume it with hopper retry, and list its runs and models', async () => {
    const local = await fixture.start({ simulated: { credits: 0, heldOutCount: 0 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const env = settingsOf(local);
    expect(Object.values(env).join('\n')).not.toContain(service.apiKey);

    const failed = await dropAndRun(local, 'reviews', { ...DATA, [TRAIN_JSON]: '{}' });
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

  it('hopper models reads only the pages its --limit needs, and filters by --dataset and --status', async () => {
    const local = await fixture.start({ simulated: { heldOutCount: 0 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const env = settingsOf(local);
    const first = await dropAndRun(local, 'one', { ...DATA, [TRAIN_JSON]: '{}' });
    const second = await dropAndRun(local, 'two', { ...DATA, [TRAIN_JSON]: '{}' });
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

    const done = await dropAndRun(local, 'done', { ...DATA, [TRAIN_JSON]: '{}' });
    expect(done.outcome.status).toBe('SUCCEEDED');
    const retry = await run(runRetryCommand, ['done'], env);
    expect(retry.code).toBe(1);
    expect(retry.stderr).toMatch(/succeeded: nothing to resume/);

    const bad = await run(runRunsCommand, ['done', '--limit', '0'], env);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toBe('hopper runs: --limit: expected an integer 1..1000, got "0"\n');
    const missing = await run(runRunsCommand, [], env);
    expect(missing.code).toBe(2);
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
