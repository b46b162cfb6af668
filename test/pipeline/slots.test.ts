import { describe, expect, it } from 'vitest';
import { MAX_LOOP_ROUNDS_PER_RUN } from '../../lambdas/core/schedule/index.js';
import { datasetSlot, modelSlot, trainingPlan } from '../../lambdas/core/state/index.js';
import type { DatasetSlot, ModelSlot } from '../../lambdas/core/state/index.js';
import type { Dataset, Model } from '../../lambdas/service-client/index.js';
import { datasetSlotOf, modelSlotOf } from '../helpers/fixtures.js';
import { runErrorThrownBy } from '../helpers/run-errors.js';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const inSeconds = (seconds: number): string => new Date(NOW + seconds * 1000).toISOString();

function datasetRecord(overrides: Partial<Dataset> = {}): Dataset {
  return {
    kind: 'dataset',
    id: 'd1',
    name: 'reviews',
    status: 'reading',
    step: 1,
    next_action: 'wait',
    created_at: inSeconds(-60),
    updated_at: inSeconds(-1),
    expires_at: inSeconds(7 * 24 * 3600),
    error: null,
    files: [
      {
        id: 'f1',
        name: 'reviews.csv',
        bytes: 10,
        status: 'uploaded',
        upload_url: null,
        upload_expires_at: null,
      },
    ],
    questions: null,
    ...overrides,
  };
}

function modelRecord(overrides: Partial<Model> = {}): Model {
  return {
    kind: 'model',
    id: 'm1',
    dataset_id: 'd1',
    name: 'reviews v1',
    status: 'queued',
    step: 4,
    next_action: 'wait',
    version: 1,
    encoder: 'enc-small',
    created_at: inSeconds(-1),
    updated_at: inSeconds(-1),
    public_at: null,
    files_expire_at: null,
    files_deleted_at: null,
    error: null,
    gpu_usd: null,
    jev_usd: null,
    jev: null,
    metrics: null,
    options: null,
    steps: null,
    holdout_n: null,
    onnx_bytes: null,
    hf_repo: null,
    verdict: null,
    ...overrides,
  };
}

describe('datasetSlot', () => {
  it('keeps ids and counters only: no file names, URLs or questions', () => {
    const record = datasetRecord({
      status: 'uploading',
      next_action: 'upload_files',
      files: [
        {
          id: 'f1',
          name: 'secret-name.csv',
          bytes: 10,
          status: 'pending',
          upload_url: 'http://files.example/upload?signature=abc',
          upload_expires_at: inSeconds(3600),
        },
      ],
    });
    const slot = datasetSlot(record, undefined, NOW);
    expect(slot).toEqual(datasetSlotOf({ expiresAt: record.expires_at }));
  });

  it('carries the labelled count, or takes a new one', () => {
    const previous = datasetSlot(
      datasetRecord({ next_action: 'label_examples', step: 3 }),
      undefined,
      NOW,
      4,
    );
    expect(previous.labelled).toBe(4);
    expect(datasetSlot(datasetRecord(), previous, NOW).labelled).toBe(4);
    expect(datasetSlot(datasetRecord(), previous, NOW, 7).labelled).toBe(7);
  });

  it('backs off over consecutive waits and clamps to the dataset expiry', () => {
    let slot: DatasetSlot | undefined;
    const waits: number[] = [];
    for (let i = 0; i < 4; i++) {
      slot = datasetSlot(datasetRecord(), slot, NOW);
      waits.push(slot.waitSeconds);
    }
    expect(waits).toEqual([2, 6, 18, 54]);
    expect(slot?.totalPolls).toBe(4);
    const nearExpiry = datasetSlot(datasetRecord({ expires_at: inSeconds(4.5) }), slot, NOW);
    expect(nearExpiry).toMatchObject({ waitSeconds: 4, polls: 4, totalPolls: 5 });
  });

  it('counts a round of the loops when the record is still at the action the Task was called for', () => {
    const labelling = datasetSlot(datasetRecord({ next_action: 'label_examples', step: 3 }), undefined, NOW);
    expect(labelling.totalBatches).toBeUndefined();
    // LabelExamples leaves it at label_examples: another batch follows, one more round.
    const again = datasetSlot(datasetRecord({ next_action: 'label_examples', step: 3 }), labelling, NOW, 9);
    expect(again).toMatchObject({ totalBatches: 1, totalPolls: 0, waitSeconds: 0 });
    // Moved on: no round, and the count is carried to the slots after it.
    const ready = datasetSlot(datasetRecord({ next_action: 'start_training', step: 3 }), again, NOW);
    expect(ready).toMatchObject({ totalBatches: 1, totalPolls: 0 });
    // A wait is a poll, not a batch.
    const waiting = datasetSlot(datasetRecord(), datasetSlot(datasetRecord(), undefined, NOW), NOW);
    expect(waiting).toMatchObject({ totalPolls: 2 });
    expect(waiting.totalBatches).toBeUndefined();
  });

  it('fails the run with history_limit once polls and batches together pass the rounds a run may go', () => {
    const near = datasetSlot(datasetRecord({ next_action: 'label_examples', step: 3 }), undefined, NOW);
    const last = { ...near, totalPolls: 300, totalBatches: MAX_LOOP_ROUNDS_PER_RUN - 300 };
    const record = datasetRecord({ next_action: 'label_examples', step: 3 });
    const caught = runErrorThrownBy(() => datasetSlot(record, last, NOW, 1234));
    expect(caught).toMatchObject({ code: 'history_limit', retryable: false, name: 'Hopper.Failed' });
    expect(caught.message).toContain(
      `went round its loops ${String(MAX_LOOP_ROUNDS_PER_RUN + 1)} times while labelling (1234 labels so far)`,
    );
    expect(caught.message).toContain('25,000 events');
    // The same run moving on instead is fine; a poll after the bound is not.
    expect(datasetSlot(datasetRecord({ next_action: 'start_training', step: 3 }), last, NOW)).toMatchObject({
      totalBatches: MAX_LOOP_ROUNDS_PER_RUN - 300,
    });
    expect(runErrorThrownBy(() => datasetSlot(datasetRecord(), last, NOW))).toMatchObject({
      code: 'history_limit',
    });
  });

  it('carries the error of an unreadable dataset', () => {
    const slot = datasetSlot(
      datasetRecord({
        status: 'unreadable',
        next_action: 'start_over',
        error: 'reviews.csv: no text column',
      }),
      undefined,
      NOW,
    );
    expect(slot).toMatchObject({
      nextAction: 'start_over',
      error: 'reviews.csv: no text column',
      waitSeconds: 0,
    });
  });
});

describe('modelSlot', () => {
  const waitingDataset: DatasetSlot = datasetSlot(
    datasetRecord(),
    { waitSeconds: 51, polls: 8, waitedSeconds: 134, totalPolls: 30, totalWaitSeconds: 600 } as DatasetSlot,
    NOW,
  );

  it('a new model starts its backoff afresh and carries the run-wide poll count of the dataset', () => {
    const slot = modelSlot(modelRecord(), trainingPlan(1, 3), waitingDataset, NOW);
    expect(slot).toEqual(
      modelSlotOf({
        waitSeconds: 2,
        polls: 0,
        waitedSeconds: 0,
        totalPolls: waitingDataset.totalPolls + 1,
        totalWaitSeconds: waitingDataset.totalWaitSeconds + 2,
      }),
    );
  });

  it('the same model backs off on; a retry (another model) starts afresh, counting on', () => {
    let slot: ModelSlot = modelSlot(modelRecord(), trainingPlan(1, 3), undefined, NOW);
    slot = modelSlot(modelRecord(), trainingPlan(1, 3), slot, NOW);
    slot = modelSlot(modelRecord(), trainingPlan(1, 3), slot, NOW);
    expect(slot).toMatchObject({ waitSeconds: 18, polls: 2, totalPolls: 3 });
    const retry = modelSlot(modelRecord({ id: 'm2', version: 2 }), trainingPlan(2, 3), slot, NOW);
    expect(retry).toMatchObject({ id: 'm2', attempts: 2, waitSeconds: 2, polls: 0, totalPolls: 4 });
  });

  it('a done model: no wait, size and file expiry for the copy', () => {
    const slot = modelSlot(
      modelRecord({
        status: 'done',
        step: 5,
        next_action: 'download',
        onnx_bytes: 1024,
        files_expire_at: inSeconds(3600),
      }),
      trainingPlan(2, 3),
      undefined,
      NOW,
    );
    expect(slot).toMatchObject({
      nextAction: 'download',
      onnxBytes: 1024,
      filesExpireAt: inSeconds(3600),
      attempts: 2,
      waitSeconds: 0,
    });
  });

  it('never sleeps past files_expire_at while waiting: inside the margin, half of what is left', () => {
    const backedOff = {
      ...modelSlot(modelRecord(), trainingPlan(1, 3), undefined, NOW),
      waitSeconds: 120,
      polls: 20,
    };
    const slot = modelSlot(
      modelRecord({ files_expire_at: inSeconds(30.5) }),
      trainingPlan(1, 3),
      backedOff,
      NOW,
    );
    expect(slot.waitSeconds).toBe(15);
  });

  it("carries a failed model's error", () => {
    const slot = modelSlot(
      modelRecord({ status: 'failed', next_action: 'retry', error: 'out of memory' }),
      trainingPlan(1, 3),
      undefined,
      NOW,
    );
    expect(slot).toMatchObject({ nextAction: 'retry', error: 'out of memory', waitSeconds: 0 });
  });
});
