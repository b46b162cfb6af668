import { describe, expect, it } from 'vitest';
import { RunError } from '../../lambdas/core/errors/index.js';
import { workToAdopt, resumeTarget } from '../../lambdas/ownership/index.js';
import { readStatus, statusOf, writeStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import type { RunState, StepName } from '../../lambdas/core/state/index.js';
import { stepUnderWay } from '../../lambdas/records/status/index.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { describeStatus } from '../../local/cli/status.js';
import { localS3Client } from '../../local/s3/local-s3.js';
import { readText, usePipelineFixtures } from '../helpers/pipeline.js';
import { datasetSlotOf, stateOf, uniqueDrop } from '../helpers/fixtures.js';
import { gate } from '../../testkit/timeout.js';

const fixtures = usePipelineFixtures();

/** Run `runId` of `drop`, started at `startedAt`, with a dataset at upload_files. */
function runOf(drop: string, runId: string, startedAt: string): RunState {
  return stateOf(fixtures.s3().bucket, { dataset: datasetSlotOf() }, { drop, runId, startedAt });
}

describe('status/<drop>.json', () => {
  it('says where the run stands: step and next_action of the latest record, ids, timestamps', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const state = runOf(drop, 'run-1', '2026-01-01T00:00:00.000Z');
    await writeStatus(
      client,
      bucket,
      statusOf(state, { hopperStep: 'create_dataset' }, Date.parse('2026-01-01T00:01:00Z')),
    );

    const written = JSON.parse((await readText(client, bucket, statusKey(drop))) ?? 'null') as unknown;
    expect(written).toMatchObject({
      run_id: 'run-1',
      drop,
      state: 'running',
      hopper_step: 'create_dataset',
      step: 1,
      next_action: 'upload_files',
      dataset_id: 'd1',
      model_id: null,
      updated_at: '2026-01-01T00:01:00.000Z',
      finished_at: null,
      error: null,
      // No config in this state: the files are not known yet.
      files: null,
      labels: null,
    });
  });

  it('names the data files and the labels file the run took from the drop', () => {
    const state: RunState = {
      ...runOf('d', 'run-1', '2026-01-01T00:00:00.000Z'),
      config: {
        name: 'd',
        files: [
          { name: 'a.csv', bytes: 1, etag: 'e1' },
          { name: 'b.jsonl', bytes: 1, etag: 'e2' },
        ],
        labels: { name: 'answers.csv', bytes: 1, etag: 'e3' },
        encoder: null,
        decisions: 'service',
        maxAttempts: 3,
      },
    };
    expect(statusOf(state, { hopperStep: 'upload_files' }, Date.now())).toMatchObject({
      files: ['a.csv', 'b.jsonl'],
      labels: 'answers.csv',
    });
  });

  it("says while a paid model's copy is put off: since when, why, the next try and the files' deadline", () => {
    const base = runOf('d', 'run-1', '2026-01-01T00:00:00.000Z');
    const putOff: RunState = {
      ...base,
      copy: {
        failingSince: '2026-01-01T01:00:00.000Z',
        filesDeadline: '2026-01-02T00:50:00.000Z',
        reason: 'service_unavailable: GET /v1/models/m1/download answered 503',
        waitSeconds: 120,
        polls: 3,
        waitedSeconds: 240,
        totalPolls: 3,
        totalWaitSeconds: 240,
      },
    };
    const now = Date.parse('2026-01-01T01:10:00Z');
    expect(statusOf(putOff, { hopperStep: 'copy_model' }, now).copy_put_off).toEqual({
      failing_since: '2026-01-01T01:00:00.000Z',
      reason: 'service_unavailable: GET /v1/models/m1/download answered 503',
      next_try_at: '2026-01-01T01:12:00.000Z',
      files_deadline: '2026-01-02T00:50:00.000Z',
    });
    expect(describeStatus(statusOf(putOff, { hopperStep: 'copy_model' }, now), now)).toMatch(
      /copy put off +failing since 2026-01-01T01:00:00.000Z \(service_unavailable: .*\); next try 2026-01-01T01:12:00.000Z/,
    );
    const copied: RunState = {
      ...base,
      copy: { modelKey: 'models/d/m1/model.onnx', recordKey: 'models/d/m1/model.json', bytes: 3 },
    };
    expect(statusOf(copied, { hopperStep: 'copy_model' }, now).copy_put_off).toBeNull();
  });

  it('leaves a newer run of the same drop on top; the older one becomes an entry of superseded_runs', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = runOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    const older = runOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    const write = (state: RunState, hopperStep: StepName) =>
      writeStatus(client, bucket, statusOf(state, { hopperStep }, Date.now()));
    expect(await write(older, 'create_dataset')).toBe('written');
    // The newer run takes the file from the older one, which was still running: it is named.
    expect(await write(newer, 'validate_drop')).toBe('written');
    expect(await write(older, 'poll_dataset')).toBe('superseded');
    const status = await readStatus(client, bucket, drop);
    expect(status).toMatchObject({ run_id: 'run-new', hopper_step: 'validate_drop' });
    expect(status?.superseded_runs).toEqual([
      expect.objectContaining({
        run_id: 'run-old',
        state: 'running',
        hopper_step: 'poll_dataset',
        credits: 0,
      }),
    ]);

    // The newer run keeps writing, and keeps the entry; an even newer one takes over.
    expect(await write(newer, 'poll_dataset')).toBe('written');
    expect((await readStatus(client, bucket, drop))?.superseded_runs).toHaveLength(1);
    const newest = runOf(drop, 'run-newest', '2026-01-03T00:00:00.000Z');
    expect(await write(newest, 'validate_drop')).toBe('written');
    const last = await readStatus(client, bucket, drop);
    expect(last?.run_id).toBe('run-newest');
    expect(last?.superseded_runs?.map((entry) => entry.run_id)).toEqual(['run-new', 'run-old']);
  });

  it('names the run it took the file from, even one that ended; an ended run without a paid model is not carried further', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const write = (runId: string, day: string, update: Parameters<typeof statusOf>[1]) =>
      writeStatus(
        client,
        bucket,
        statusOf(runOf(drop, runId, `2026-01-0${day}T00:00:00.000Z`), update, Date.now()),
      );
    await write('run-1', '1', { hopperStep: 'report', state: 'succeeded' });
    expect(await write('run-2', '2', { hopperStep: 'validate_drop' })).toBe('written');
    expect((await readStatus(client, bucket, drop))?.superseded_runs).toEqual([
      expect.objectContaining({ run_id: 'run-1', state: 'succeeded', paid_model: null }),
    ]);
    await write('run-2', '2', { hopperStep: 'report', state: 'failed' });
    expect(await write('run-3', '3', { hopperStep: 'validate_drop' })).toBe('written');
    expect((await readStatus(client, bucket, drop))?.superseded_runs?.map((entry) => entry.run_id)).toEqual([
      'run-2',
    ]);
  });

  it('races two runs writing at once, many times: the newer run is always on top (conditional writes)', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = runOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    const older = runOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    // Bounded: 3 rounds of both runs writing four times each, all at once.
    for (let round = 0; round < 3; round++) {
      const writes = Array.from({ length: 4 }, () => [
        writeStatus(client, bucket, statusOf(older, { hopperStep: 'poll_dataset' }, Date.now())),
        writeStatus(client, bucket, statusOf(newer, { hopperStep: 'upload_files' }, Date.now())),
      ]).flat();
      await Promise.all(writes);
      const status = await readStatus(client, bucket, drop);
      expect(status?.run_id).toBe('run-new');
      expect(status?.hopper_step).toBe('upload_files');
      expect(status?.superseded_runs?.map((entry) => entry.run_id)).toEqual(['run-old']);
    }
  });

  it('the older run reading before the newer run writes and writing after: its write does not land on top', async () => {
    // The race in slow motion: the older run's PUT is held until the newer run's status is
    // written. Without a conditional write the older run's document would replace it.
    const { client, bucket, endpoint } = fixtures.s3();
    const drop = uniqueDrop();
    const older = runOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    const newer = runOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    await writeStatus(client, bucket, statusOf(older, { hopperStep: 'create_dataset' }, Date.now()));
    const slow = localS3Client(endpoint);
    const putHeld = gate();
    const olderAtPut = gate();
    let held = false;
    slow.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand' && !held) {
          held = true;
          olderAtPut.open();
          await putHeld.opened;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdFirstPut' },
    );
    try {
      const olderWrite = writeStatus(
        slow,
        bucket,
        statusOf(older, { hopperStep: 'upload_files' }, Date.now()),
      );
      await olderAtPut.opened;
      expect(
        await writeStatus(client, bucket, statusOf(newer, { hopperStep: 'validate_drop' }, Date.now())),
      ).toBe('written');
      putHeld.open();
      expect(await olderWrite).toBe('superseded');
      const status = await readStatus(client, bucket, drop);
      expect(status).toMatchObject({ run_id: 'run-new', hopper_step: 'validate_drop' });
      expect(status?.superseded_runs?.[0]).toMatchObject({ run_id: 'run-old', hopper_step: 'upload_files' });
    } finally {
      slow.destroy();
    }
  });
});

describe('which run a resume takes, and which paid model a new run adopts (lambdas/ownership/resume.ts)', () => {
  const at = (day: string) => `2026-01-0${day}T00:00:00.000Z`;
  const ended = (runId: string, day: string, fields: Partial<RunStatus> = {}): RunStatus => ({
    ...statusOf(
      runOf('d', runId, at(day)),
      { hopperStep: 'poll_model', state: 'failed' },
      Date.parse(at(day)),
    ),
    dataset_id: `ds-${runId}`,
    ...fields,
  });
  const withOlder = (top: RunStatus, ...older: RunStatus[]): RunStatus => ({
    ...top,
    superseded_runs: older.map((run) => ({ ...run, credits: 0, summary: null })),
  });
  const refusal = (status: RunStatus | null, runId = 'new'): string => {
    try {
      resumeTarget(status, 'd', runId);
    } catch (error) {
      expect(error).toBeInstanceOf(RunError);
      return (error as RunError).message;
    }
    throw new Error('resumeTarget took a run');
  };

  it('resumes the latest run when it failed or was interrupted after creating its dataset, and says why not otherwise', () => {
    expect(
      resumeTarget(ended('old', '1', { error: { code: 'no_credits', message: '' } }), 'd', 'new'),
    ).toEqual({
      runId: 'old',
      datasetId: 'ds-old',
      errorCode: 'no_credits',
    });
    expect(resumeTarget(ended('old', '1', { state: 'interrupted' }), 'd', 'new').runId).toBe('old');
    expect(refusal(null)).toContain('no earlier run of d');
    expect(refusal(ended('old', '1', { state: 'running', hopper_step: 'upload_files' }))).toContain(
      '(at upload_files)',
    );
    expect(refusal(ended('old', '1', { state: 'succeeded' }))).toContain('succeeded: nothing to resume');
    expect(refusal(ended('old', '1', { dataset_id: null }))).toContain('before it created a dataset');
    // A retried validate_drop finds its own status on top: the run it took the file from is next.
    expect(
      resumeTarget(withOlder(ended('new', '2', { state: 'running' }), ended('old', '1')), 'd', 'new').runId,
    ).toBe('old');
  });

  it("refuses at once a run whose error a resume would meet again, with that error's own advice; takes one it can get past", () => {
    const labels = {
      code: 'labels_required' as const,
      message: 'add labels.csv, then upload the drop again',
    };
    expect(refusal(ended('old', '1', { error: labels }))).toContain(
      'run old of d failed with labels_required, which a resumed run would fail with again: add labels.csv, then upload the drop again',
    );
    for (const code of ['dataset_unreadable', 'invalid_label', 'missing_file'] as const) {
      expect(refusal(ended('old', '1', { error: { code, message: '' } }))).toContain(`failed with ${code}`);
    }
    for (const code of ['storage_error', 'step_timeout', 'interrupted', 'credit_budget'] as const) {
      expect(resumeTarget(ended('old', '1', { error: { code, message: '' } }), 'd', 'new').runId).toBe('old');
    }
  });

  it('never resumes a run another run has taken over: while that run goes on, a resume waits for it', () => {
    const paid = ended('paid', '1', { state: 'interrupted', paid_model: { id: 'm-1', status: 'training' } });
    const resuming = ended('resuming', '2', {
      state: 'running',
      hopper_step: 'poll_model',
      resumed_from: 'paid',
    });
    // hopper retry (run id '') while the resuming run polls the adopted model: refused, not a second adoption.
    expect(refusal(withOlder(resuming, paid), '')).toMatch(
      /run resuming of d is still running \(at \w+\): wait for it to end/,
    );
    // Once the resuming run failed holding the model, it is the one to resume.
    const failed = { ...resuming, state: 'failed' as const, paid_model: { id: 'm-1', status: 'done' } };
    expect(resumeTarget(withOlder(failed, paid), 'd', 'new')).toMatchObject({
      runId: 'resuming',
      paidModelId: 'm-1',
    });
    // Without the field (files older than it), the paid run is resumed as before.
    expect(
      resumeTarget(withOlder({ ...failed, resumed_from: undefined, paid_model: null }, paid), 'd', 'new')
        .runId,
    ).toBe('paid');
  });

  it('names the step a running run is in: the one its next_action leads to, not the one that wrote the status', () => {
    const run = (
      hopper_step: StepName,
      next_action: RunStatus['next_action'],
      model_id: string | null = null,
    ) => stepUnderWay({ hopper_step, next_action, model_id, model: null, config_fingerprint: 'f' });
    expect(run('validate_drop', null)).toBe('create_dataset');
    // The trigger's first status: nothing validated yet, validate_drop is under way.
    expect(
      stepUnderWay({
        hopper_step: 'validate_drop',
        next_action: null,
        model_id: null,
        model: null,
        config_fingerprint: null,
      }),
    ).toBe('validate_drop');
    expect(run('create_dataset', 'upload_files')).toBe('upload_files');
    expect(run('upload_files', 'wait')).toBe('poll_dataset');
    expect(run('poll_dataset', 'structure')).toBe('structure');
    expect(run('structure', 'pick_decisions')).toBe('pick_decisions');
    expect(run('poll_dataset', 'label_examples')).toBe('label_examples');
    expect(run('label_examples', 'start_training')).toBe('start_training');
    expect(run('start_training', 'wait', 'm-1')).toBe('poll_model');
    expect(run('poll_model', 'download', 'm-1')).toBe('copy_model');
    expect(run('poll_model', 'retry', 'm-1')).toBe('start_training');
    const copied = { onnx: 's3://b/m.onnx', record: 's3://b/m.json', bytes: 1 };
    expect(
      stepUnderWay({
        hopper_step: 'copy_model',
        next_action: 'download',
        model_id: 'm-1',
        model: copied,
        config_fingerprint: 'f',
      }),
    ).toBe('report');
  });

  it('prefers the newest run that ended holding a paid model, even behind a newer run that succeeded', () => {
    const paid = ended('paid', '1', { state: 'interrupted', paid_model: { id: 'm-1', status: 'training' } });
    const status = withOlder(ended('later', '2', { state: 'succeeded' }), paid);
    expect(resumeTarget(status, 'd', 'new')).toMatchObject({ runId: 'paid', datasetId: 'ds-paid' });
  });

  it('adopts a paid model only for the same settings', () => {
    const paid = ended('paid', '1', {
      state: 'interrupted',
      paid_model: { id: 'm-1', status: 'done' },
      config_fingerprint: 'same',
    });
    expect(workToAdopt(paid, 'new', 'same')).toMatchObject({ runId: 'paid', datasetId: 'ds-paid' });
    expect(workToAdopt(paid, 'new', 'other')).toBeUndefined();
    expect(workToAdopt({ ...paid, paid_model: null }, 'new', 'same')).toBeUndefined();
    // A run still at it: its paid model is adopted (adoption.ts), not paid for a second time.
    expect(workToAdopt({ ...paid, state: 'running' }, 'new', 'same')).toMatchObject({ runId: 'paid' });
    expect(workToAdopt({ ...paid, state: 'succeeded' }, 'new', 'same')).toBeUndefined();
  });

  it('adopts the dataset of a run about to start its training (training_intent), running or interrupted', () => {
    const intent = { dataset_id: 'ds-about', encoder: null, attempt: 1 };
    const about = ended('about', '1', {
      state: 'interrupted',
      dataset_id: 'ds-about',
      training_intent: intent,
      config_fingerprint: 'same',
    });
    expect(workToAdopt(about, 'new', 'same')).toMatchObject({ runId: 'about', datasetId: 'ds-about' });
    expect(workToAdopt({ ...about, state: 'running' }, 'new', 'same')).toMatchObject({ runId: 'about' });
    expect(workToAdopt({ ...about, state: 'failed' }, 'new', 'same')).toBeUndefined();
    expect(workToAdopt(about, 'new', 'other')).toBeUndefined();
    expect(workToAdopt({ ...about, training_intent: null }, 'new', 'same')).toBeUndefined();
  });
});
