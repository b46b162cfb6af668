/**
 * A run cut off by a stop of `hopper local --data-dir` while its model trains holds a paid model
 * at the service. After the restart, every piece of advice says `hopper retry <drop>`; uploading
 * the same train.json again adopts the paid model (no second credit, no new dataset); uploading
 * other settings trains anew while the status keeps naming the paid model, which `hopper retry`
 * then adopts: never stranded at the service.
 */
import { describe, expect, it } from 'vitest';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { currentModelKey, inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { readJson } from '../../lambdas/storage/objects.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import {
  dropAndRun,
  finished,
  modelObjects,
  nextExecution,
  serviceList,
  simulatedOf,
  stateReached,
  useKeptLocalMode,
} from '../helpers/local-mode.js';
import { putDrop } from '../helpers/pipeline.js';
import { HandlerKills, LAMBDA_CRASH_ERROR, type SideEffect } from '../helpers/handler-kills.js';
import { reviewsDrop } from '../helpers/fixtures.js';

const kept = useKeptLocalMode();

const FILES = reviewsDrop();
const LONG_TRAINING_MS = 600_000;

function start(dataDir: string, options: { dropQuietMs?: number } = {}): Promise<LocalMode> {
  return kept.start(dataDir, {
    ...options,
    simulated: { trainingMs: LONG_TRAINING_MS, credits: 10 },
  });
}

/** A data directory whose last local mode stopped while drop `slow` trained: its model id. */
async function interruptedWhileTraining(dataDir: string): Promise<string> {
  const first = await start(dataDir);
  const started = nextExecution(first, inboxKey('slow', TRAIN_JSON));
  await putDrop(first.s3.client, first.bucket, 'slow', FILES);
  const execution = await started.execution;
  await stateReached(first, execution.name, 'WaitForModel', 30_000);
  const status = await readStatus(first.s3.client, first.bucket, 'slow');
  await first.close();
  expect(status?.model_id).toEqual(expect.any(String));
  return status?.model_id ?? '';
}

/** The service's datasets and models (ids, newest first) and the credits spent so far. */
async function serviceRecords(
  local: LocalMode,
): Promise<{ datasets: number; models: string[]; creditsSpent: number }> {
  const simulated = simulatedOf(local);
  const list = async (what: 'models' | 'datasets'): Promise<string[]> =>
    (await serviceList<{ id: string }>(simulated, what)).map((record) => record.id);
  return {
    datasets: (await list('datasets')).length,
    models: await list('models'),
    creditsSpent: 10 - simulated.credits(),
  };
}

/** Bounded: resolves once `done` holds, polling every 20 ms for at most `ms`. */
async function until(done: () => boolean, what: string, ms = 30_000): Promise<void> {
  for (let waited = 0; !done(); waited += 20) {
    if (waited >= ms) throw new Error(`${what} within ${String(ms)} ms`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/**
 * A data directory whose last local mode was stopped once a request of `task` had reached the
 * service and before its answer came back (`after`), as a kill -9 of `hopper local` does.
 */
async function stoppedAfter(
  dataDir: string,
  drop: string,
  task: 'CreateDataset' | 'StartTraining',
  after: (effect: SideEffect) => boolean,
): Promise<void> {
  const kills = new HandlerKills({ rules: [{ task, death: LAMBDA_CRASH_ERROR, after }] });
  // The state machine's retry of the killed Task waits a minute, not the tests' 0 ms: local mode
  // stops first, however slowly on a loaded machine, and the run stays as the kill left it.
  const first = await kept.start(dataDir, {
    ...kills.modeOptions(),
    retryPauseMs: 60_000,
    simulated: { credits: 10 },
  });
  kills.watchFunctions(first);
  const started = nextExecution(first, inboxKey(drop, TRAIN_JSON));
  await putDrop(first.s3.client, first.bucket, drop, FILES);
  await started.execution;
  await until(() => kills.kills.length === 1, `${task} was not killed`);
  const closing = first.close();
  await kills.close();
  await closing;
}

const answered = (endpoint: string, status: number) => (effect: SideEffect) =>
  effect.kind === 'service' && effect.endpoint === endpoint && effect.status === status;

describe('a run stopped between a request that creates and its answer', { timeout: 90_000 }, () => {
  it('POST /v1/datasets: the restart names the dataset it asked for, and hopper retry finds it there: one dataset', async () => {
    const dataDir = await kept.dataDir();
    await stoppedAfter(dataDir, 'cut', 'CreateDataset', answered('POST /v1/datasets', 201));

    const second = await start(dataDir);
    second.simulated?.configure({ trainingMs: BRISK_SERVICE.trainingMs });
    const [made] = await serviceList<{ id: string; name: string }>(simulatedOf(second), 'datasets');
    const interrupted = await readStatus(second.s3.client, second.bucket, 'cut');
    expect(interrupted).toMatchObject({ state: 'interrupted', dataset_id: null, dataset_name: made?.name });
    expect(interrupted?.error?.message).toContain(`its dataset "${made?.name ?? ''}"`);
    expect(interrupted?.error?.message).not.toContain("starts it again from the drop's files");

    const again = nextExecution(second, inboxKey('cut', TRAIN_JSON));
    const retry = await runCommandCaptured(runRetryCommand, ['cut'], settingsOf(second));
    expect(retry).toMatchObject({ code: 0, stderr: '' });
    expect(retry.stdout).toContain(`its dataset "${made?.name ?? ''}"`);
    const run = await finished(second, await again.execution, again.events);
    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(run.status?.dataset_id).toBe(made?.id);
    expect(await serviceRecords(second)).toMatchObject({ datasets: 1, creditsSpent: 1 });
  });

  it('POST /v1/datasets/{id}/models: hopper retry adopts the training at once (not after the stale claim of its predecessor): one credit', async () => {
    const dataDir = await kept.dataDir();
    await stoppedAfter(dataDir, 'paid', 'StartTraining', answered('POST /v1/datasets/{id}/models', 201));

    const second = await start(dataDir);
    second.simulated?.configure({ trainingMs: BRISK_SERVICE.trainingMs });
    const [paid] = await serviceList<{ id: string }>(simulatedOf(second), 'models');
    // The restart found the model the lost answer named, through the dataset of the run's intent.
    const shown = await runCommandCaptured(runStatusCommand, ['paid', '--json'], settingsOf(second));
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    const interrupted = JSON.parse(shown.stdout) as RunStatus;
    expect(interrupted).toMatchObject({
      state: 'interrupted',
      paid_model: { id: paid?.id },
      training_intent: null,
      summary: { credits: 1 },
    });
    expect(interrupted.error?.message).toContain(`its model ${paid?.id ?? ''} was paid for (1 credit)`);

    const again = nextExecution(second, inboxKey('paid', TRAIN_JSON));
    const retry = await runCommandCaptured(runRetryCommand, ['paid'], settingsOf(second));
    expect(retry).toMatchObject({ code: 0, stderr: '' });
    // Bounded well below CLAIM_FRESH_MS (10 minutes), which the predecessor's claim had left.
    const run = await finished(second, await again.execution, again.events);
    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(run.status?.model_id).toBe(paid?.id);
    expect([...(await modelObjects(second, 'paid')).keys()]).toEqual(
      expect.arrayContaining([`${paid?.id ?? ''}/model.onnx`, `${paid?.id ?? ''}/model.json`]),
    );
    expect(await serviceRecords(second)).toEqual({ datasets: 1, models: [paid?.id], creditsSpent: 1 });
  });

  it('POST /v1/datasets/{id}/models, then the same train.json uploaded again: it adopts the paid model, one credit, the model copied', async () => {
    const dataDir = await kept.dataDir();
    await stoppedAfter(dataDir, 'again', 'StartTraining', answered('POST /v1/datasets/{id}/models', 201));

    const second = await start(dataDir);
    second.simulated?.configure({ trainingMs: BRISK_SERVICE.trainingMs });
    const [paid] = await serviceList<{ id: string }>(simulatedOf(second), 'models');
    const interrupted = await readStatus(second.s3.client, second.bucket, 'again');

    const run = await dropAndRun(second, 'again', { [TRAIN_JSON]: '{}' });
    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(run.status).toMatchObject({
      state: 'succeeded',
      model_id: paid?.id,
      dataset_id: interrupted?.dataset_id,
    });
    expect(run.status?.summary).toMatchObject({
      credits: 0,
      trainings: [{ model_id: paid?.id, paid_by: interrupted?.run_id }],
    });
    expect([...(await modelObjects(second, 'again')).keys()]).toEqual(
      expect.arrayContaining([`${paid?.id ?? ''}/model.onnx`, `${paid?.id ?? ''}/model.json`]),
    );
    expect(await serviceRecords(second)).toEqual({ datasets: 1, models: [paid?.id], creditsSpent: 1 });
  });
});

describe('a run interrupted while its paid model trains', { timeout: 90_000 }, () => {
  it('advises hopper retry everywhere, and the same train.json again adopts the paid model: one credit, one dataset', async () => {
    const dataDir = await kept.dataDir();
    const paid = await interruptedWhileTraining(dataDir);

    const second = await start(dataDir);
    expect(second.interrupted).toEqual(['slow']);
    const interrupted = await readStatus(second.s3.client, second.bucket, 'slow');
    expect(interrupted?.error?.message).toContain('hopper retry slow');
    expect(interrupted?.error?.message).not.toMatch(/upload .*train\.json again/i);
    expect(interrupted?.error?.message).toContain(paid);
    second.simulated?.clock.advance(LONG_TRAINING_MS);

    const again = await dropAndRun(second, 'slow', FILES);
    expect(again.outcome.status).toBe('SUCCEEDED');
    expect(again.status?.model_id).toBe(paid);
    // The credit is the interrupted run's: the run that adopted its model counts none of its own.
    expect(again.status?.summary).toMatchObject({
      credits: 0,
      trainings: [{ model_id: paid, paid_by: interrupted?.run_id }],
    });
    expect([...(await modelObjects(second, 'slow')).keys()]).toEqual(
      expect.arrayContaining([`${paid}/model.onnx`, `${paid}/model.json`]),
    );
    expect(await serviceRecords(second)).toEqual({ datasets: 1, models: [paid], creditsSpent: 1 });
  });

  it("a run interrupted before it had a dataset: hopper retry starts it again from the drop's files", async () => {
    const dataDir = await kept.dataDir();
    // The folder settles for 3 s: local mode stops while the run waits in ValidateDrop.
    const first = await start(dataDir, { dropQuietMs: 3_000 });
    const started = nextExecution(first, inboxKey('early', TRAIN_JSON));
    await putDrop(first.s3.client, first.bucket, 'early', FILES);
    await started.execution;
    await first.close();

    const second = await start(dataDir);
    second.simulated?.configure({ trainingMs: BRISK_SERVICE.trainingMs });
    const interrupted = await readStatus(second.s3.client, second.bucket, 'early');
    expect(interrupted).toMatchObject({ state: 'interrupted', dataset_id: null });
    // Stopped in ValidateDrop, or (its invocation ends during the stop) just after it, when the
    // status names the dataset the run was to create: either way a retry starts from the files.
    expect(interrupted?.error?.message).toContain('hopper retry early');
    expect(interrupted?.error?.message).toContain("from the drop's files");
    const again = nextExecution(second, inboxKey('early', TRAIN_JSON));
    const retry = await runCommandCaptured(runRetryCommand, ['early'], settingsOf(second));
    expect(retry).toMatchObject({ code: 0, stderr: '' });
    expect(retry.stdout).toContain("from the drop's files");
    const run = await finished(second, await again.execution, again.events);
    expect(run.status?.error ?? null).toBeNull();
    expect(run.outcome.status).toBe('SUCCEEDED');
    expect(await serviceRecords(second)).toMatchObject({ datasets: 1, creditsSpent: 1 });
  });

  it('other settings train anew; the paid model stays named in the status, and hopper retry then adopts it: two credits, both models kept', async () => {
    const dataDir = await kept.dataDir();
    const paid = await interruptedWhileTraining(dataDir);

    const second = await start(dataDir);
    second.simulated?.clock.advance(LONG_TRAINING_MS);
    second.simulated?.configure({ trainingMs: BRISK_SERVICE.trainingMs });
    const changed = await dropAndRun(second, 'slow', reviewsDrop('{"maxAttempts": 2}'));
    expect(changed.outcome.status).toBe('SUCCEEDED');
    const trained = changed.status?.model_id ?? '';
    expect(trained).not.toBe(paid);
    const left = changed.status?.superseded_runs?.find((run) => run.paid_model?.id === paid);
    expect(left).toMatchObject({ state: 'interrupted', paid_model: { id: paid } });
    expect(left?.error?.message).toContain('hopper retry slow adopts it');

    const retried = nextExecution(second, inboxKey('slow', TRAIN_JSON));
    const retry = await runCommandCaptured(runRetryCommand, ['slow'], settingsOf(second));
    expect(retry).toMatchObject({ code: 0, stderr: '' });
    expect(retry.stdout).toContain(
      `Its model ${paid} was trained from the train.json of that run, which has changed since`,
    );
    const adopted = await finished(second, await retried.execution, retried.events);
    expect(adopted.outcome.status).toBe('SUCCEEDED');
    expect(adopted.status?.model_id).toBe(paid);
    // Trained for the first run's settings, not those of train.json now: kept, not made current.
    expect(adopted.status?.promotion).toMatchObject({ model_id: paid, promoted: false });
    expect(adopted.status?.promotion?.reason).toContain("whose train.json differed from this run's");
    const current = await readJson(second.s3.client, second.bucket, currentModelKey('slow'));
    expect(current?.value).toMatchObject({ model_id: trained });
    const objects = [...(await modelObjects(second, 'slow')).keys()];
    for (const model of [paid, trained]) {
      expect(objects).toEqual(expect.arrayContaining([`${model}/model.onnx`, `${model}/model.json`]));
    }
    expect(await serviceRecords(second)).toMatchObject({ datasets: 2, creditsSpent: 2 });
  });
});
