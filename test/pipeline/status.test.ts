import { describe, expect, it } from 'vitest';
import { readStatus, statusOf, writeStatus } from '../../lambdas/run/status.js';
import type { RunState } from '../../lambdas/run/state.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { readText, uniqueDrop, usePipelineFixtures } from '../helpers/pipeline.js';

const fixtures = usePipelineFixtures();

function stateOf(drop: string, runId: string, startedAt: string): RunState {
  return {
    run: { runId, bucket: fixtures.s3().bucket, drop, key: `inbox/${drop}/train.json`, etag: 'e', startedAt },
    dataset: {
      id: 'd1',
      step: 1,
      status: 'uploading',
      nextAction: 'upload_files',
      expiresAt: '2026-01-08T00:00:00.000Z',
      error: null,
      labelled: 0,
      waitSeconds: 0,
      polls: 0,
      waitedSeconds: 0,
      totalPolls: 0,
      totalWaitSeconds: 0,
    },
  };
}

describe('status/<drop>.json', () => {
  it('says where the run stands: step and next_action of the latest record, ids, timestamps', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const state = stateOf(drop, 'run-1', '2026-01-01T00:00:00.000Z');
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
      ...stateOf('d', 'run-1', '2026-01-01T00:00:00.000Z'),
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

  it('leaves a newer run of the same drop on top', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = stateOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    const older = stateOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    expect(
      await writeStatus(client, bucket, statusOf(newer, { hopperStep: 'validate_drop' }, Date.now())),
    ).toBe(true);
    expect(
      await writeStatus(client, bucket, statusOf(older, { hopperStep: 'poll_dataset' }, Date.now())),
    ).toBe(false);
    expect((await readStatus(client, bucket, drop))?.run_id).toBe('run-new');

    // The newer run keeps writing; an even newer one takes over.
    expect(
      await writeStatus(client, bucket, statusOf(newer, { hopperStep: 'poll_dataset' }, Date.now())),
    ).toBe(true);
    const newest = stateOf(drop, 'run-newest', '2026-01-03T00:00:00.000Z');
    expect(
      await writeStatus(client, bucket, statusOf(newest, { hopperStep: 'validate_drop' }, Date.now())),
    ).toBe(true);
    expect((await readStatus(client, bucket, drop))?.run_id).toBe('run-newest');
  });
});
