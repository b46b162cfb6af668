/**
 * Resuming a failed run (train.json "resume": true) through local mode: the real definition, the
 * real handlers and the simulated service over HTTP. A run that failed with no_credits resumes
 * once credits are added, without uploading again, and the drop costs one dataset and one credit;
 * a run with nothing to resume fails with not_resumable, saying why.
 */
import { describe, expect, it } from 'vitest';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { dropAndRun, finished, nextExecution, statesEntered, useLocalMode } from '../helpers/local-mode.js';
import { UNLABELLED_FILES } from '../helpers/fixtures.js';
import { putDrop } from '../helpers/pipeline.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { runRetryCommand } from '../../local/cli/retry.js';

const fixture = useLocalMode();
/** No held-out examples: the dataset goes straight to start_training. */
const QUICK = { heldOutCount: 0 } as const;

describe('a run resumed with "resume": true', () => {
  it('after no_credits and credits added, trains the same dataset without uploading: one dataset, one credit', async () => {
    const local = await fixture.start({ simulated: { ...QUICK, credits: 0 } });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const failed = await dropAndRun(local, 'broke', {
      ...UNLABELLED_FILES,
      [TRAIN_JSON]: '{"maxAttempts": 2}',
    });
    expect(failed.status?.error?.code).toBe('no_credits');
    const datasetId = failed.status?.dataset_id;
    expect(datasetId).toEqual(expect.any(String));
    const uploads = service.requestCount('fileUpload');
    expect(uploads).toBe(1);

    service.configure({ credits: 1 });
    const started = nextExecution(local, inboxKey('broke', TRAIN_JSON));
    // Only train.json again: the data files stay as they are.
    await putDrop(local.s3.client, local.bucket, 'broke', {
      [TRAIN_JSON]: '{"maxAttempts": 2, "resume": true}',
    });
    const resumed = await finished(local, await started.execution, started.events);

    expect(resumed.outcome.status).toBe('SUCCEEDED');
    expect(resumed.status).toMatchObject({ state: 'succeeded', dataset_id: datasetId, attempts: 1 });
    const route = statesEntered(resumed.events);
    expect(route.slice(0, 4)).toEqual(['ValidateDrop', 'CreateDataset', 'RouteDataset', 'StartTraining']);
    expect(route).not.toContain('UploadFiles');
    expect(route).not.toContain('Structure');
    expect(route).not.toContain('LabelExamples');
    expect(service.requestCount('createDataset')).toBe(1);
    expect(service.requestCount('fileUpload')).toBe(uploads);
    // The failed run's request was refused (402) and cost nothing; the resumed run's trained.
    expect(service.requestCount('startTraining')).toBe(2);
    expect(service.credits()).toBe(0);
  });

  it('adopts the model the failed run had trained, and copies it: no second credit', async () => {
    // The download brings bytes that are not the model's (final, not waited out): the run fails
    // after its model is done and paid for. (A download link that keeps failing is waited out
    // until the files could be gone: test/local/expiry.test.ts.)
    const local = await fixture.start({
      simulated: { ...QUICK, credits: 1, faults: [{ endpoint: 'fileDownload', kind: 'wrong_bytes' }] },
    });
    const service = local.simulated;
    if (service === undefined) throw new Error('local mode started no simulated service');
    const failed = await dropAndRun(local, 'adopt', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(failed.outcome.status).toBe('FAILED');
    expect(failed.status?.model_id).toEqual(expect.any(String));
    expect(service.credits()).toBe(0);

    service.configure({ faults: [] });
    const resumed = await dropAndRun(local, 'adopt', { [TRAIN_JSON]: '{"resume": true}' });
    expect(resumed.outcome.status).toBe('SUCCEEDED');
    expect(resumed.status?.model_id).toBe(failed.status?.model_id);
    expect(service.requestCount('startTraining')).toBe(1);
    expect(service.credits()).toBe(0);
  });

  it('fails with not_resumable when the latest run succeeded, and spends nothing', async () => {
    const local = await fixture.start({ simulated: { ...QUICK, credits: 2 } });
    const first = await dropAndRun(local, 'done', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(first.outcome.status).toBe('SUCCEEDED');
    const again = await dropAndRun(local, 'done', { [TRAIN_JSON]: '{"resume": true}' });
    expect(again.status?.error?.code).toBe('not_resumable');
    expect(again.status?.error?.message).toMatch(/succeeded: nothing to resume/);
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
    expect(local.simulated?.credits()).toBe(1);
  });

  it('fails with not_resumable when the drop has no earlier run, naming what to do', async () => {
    const local = await fixture.start({ simulated: QUICK });
    const run = await dropAndRun(local, 'fresh', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{"resume": true}' });
    expect(run.outcome).toMatchObject({ status: 'FAILED', error: 'not_resumable' });
    expect(run.status?.error?.message).toMatch(/no earlier run of fresh to resume.*without "resume"/);
    expect(local.simulated?.requestCount('createDataset')).toBe(0);
  });

  it("after labels_required, refuses at once with that error's own advice: the run at validate_drop, hopper retry before it uploads anything", async () => {
    // Held-out examples and no labels file: the run stops at label_examples with labels_required.
    const local = await fixture.start({ simulated: { heldOutCount: 2 } });
    const failed = await dropAndRun(local, 'unlabelled', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(failed.status?.error?.code).toBe('labels_required');
    const advice = failed.status?.error?.message ?? '';
    expect(advice).toContain('add labels.csv');

    // hopper retry: refused, non-zero, nothing uploaded, no run started.
    const runs = local.stateMachine.executions().length;
    const retry = await runCommandCaptured(runRetryCommand, ['unlabelled'], settingsOf(local));
    expect(retry.code).toBe(1);
    expect(retry.stdout).toBe('');
    expect(retry.stderr).toContain(
      `failed with labels_required, which a resumed run would fail with again: ${advice}`,
    );
    expect(local.stateMachine.executions()).toHaveLength(runs);

    // train.json with "resume": true: the run refuses the same way before it reaches the service.
    const reads = local.simulated?.requestCount('getDataset') ?? 0;
    const run = await dropAndRun(local, 'unlabelled', { [TRAIN_JSON]: '{"resume": true}' });
    expect(run.status).toMatchObject({ error: { code: 'not_resumable' }, hopper_step: 'report' });
    expect(run.status?.error?.message).toContain(
      `failed with labels_required, which a resumed run would fail with again`,
    );
    expect(statesEntered(run.events)).not.toContain('CreateDataset');
    expect(local.simulated?.requestCount('getDataset')).toBe(reads);
    expect(local.simulated?.requestCount('startTraining')).toBe(0);
  });

  it('fails with not_resumable when the earlier dataset has expired at the service', async () => {
    const hour = 60 * 60 * 1000;
    const local = await fixture.start({ simulated: { ...QUICK, credits: 0, datasetTtlMs: hour } });
    const failed = await dropAndRun(local, 'stale', { ...UNLABELLED_FILES, [TRAIN_JSON]: '{}' });
    expect(failed.status?.error?.code).toBe('no_credits');
    // The service's clock past the dataset's expiry, not a sleep of wall time past a short one
    // (which a slow first run could also outlast).
    local.simulated?.clock.advance(hour);
    local.simulated?.configure({ credits: 1 });
    const run = await dropAndRun(local, 'stale', { [TRAIN_JSON]: '{"resume": true}' });
    expect(run.status?.error?.code).toBe('not_resumable');
    expect(run.status?.error?.message).toMatch(/expired at the training service/);
    // Only the failed run's refused request: the resumed run never asked to train.
    expect(local.simulated?.requestCount('startTraining')).toBe(1);
  });
});
