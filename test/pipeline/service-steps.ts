/**
 * States for the service steps' tests: a run, a validated config and slots as the Tasks before
 * the step under test would have left them, plus short ways through the service's flow.
 */
import type { Dataset, TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { noWait } from '../../lambdas/run/schedule/index.js';
import type { DatasetSlot, RunConfig, RunState } from '../../lambdas/run/state/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { csv, SAMPLE_TEXTS } from '../client/helpers.js';
import { uniqueDrop } from '../helpers/pipeline.js';

export const SAMPLE_CSV = csv(SAMPLE_TEXTS);

/** train.json's config with its defaults, one data file (reviews.csv) and `overrides`. */
export function configOf(overrides: Partial<RunConfig> = {}): RunConfig {
  return {
    name: 'reviews',
    files: [{ name: 'reviews.csv', bytes: Buffer.byteLength(SAMPLE_CSV), etag: 'etag-reviews' }],
    labels: null,
    encoder: null,
    decisions: 'service',
    maxAttempts: 3,
    ...overrides,
  };
}

/** A state of a run of a fresh drop in `bucket`, with the given slots. */
/** A dataset slot at upload_files, step 1, not waiting; `overrides` for what a test is about. */
export function datasetSlotOf(overrides: Partial<DatasetSlot> = {}): DatasetSlot {
  return {
    id: 'd1',
    step: 1,
    status: 'uploading',
    nextAction: 'upload_files',
    expiresAt: '2026-01-08T00:00:00.000Z',
    error: null,
    labelled: 0,
    ...noWait(),
    ...overrides,
  };
}

export function stateOf(bucket: string, slots: Omit<RunState, 'run'> = {}, drop = uniqueDrop()): RunState {
  return {
    run: {
      runId: `${drop}-run`,
      bucket,
      drop,
      key: inboxKey(drop, TRAIN_JSON),
      etag: 'etag-train',
      startedAt: '2026-01-01T00:00:00.000Z',
    },
    ...slots,
  };
}

/** Answers every held-out example with its first choice; the dataset ends at start_training. */
export async function labelAll(client: TrainingServiceClient, datasetId: string): Promise<Dataset> {
  for (let i = 0; i < 100; i++) {
    const task = await client.nextLabelTask(datasetId);
    if (task === null) return client.getDataset(datasetId);
    await client.submitLabel(datasetId, task.task, task.choices[0]!);
  }
  throw new Error('labelling did not end');
}
