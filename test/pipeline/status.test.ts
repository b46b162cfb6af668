import { describe, expect, it } from 'vitest';
import { readStatus, statusOf, writeStatus } from '../../lambdas/run/status.js';
import type { RunState } from '../../lambdas/run/state.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { localS3Client } from '../../local/s3/local-s3.js';
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
      statusOf(state, { stage: 'create_dataset' }, Date.parse('2026-01-01T00:01:00Z')),
    );

    const written = JSON.parse((await readText(client, bucket, statusKey(drop))) ?? 'null') as unknown;
    expect(written).toMatchObject({
      run_id: 'run-1',
      drop,
      state: 'running',
      stage: 'create_dataset',
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
    expect(statusOf(state, { stage: 'upload_files' }, Date.now())).toMatchObject({
      files: ['a.csv', 'b.jsonl'],
      labels: 'answers.csv',
    });
  });

  it('leaves a newer run of the same drop on top; the older one becomes an entry of superseded_runs', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = stateOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    const older = stateOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    const write = (state: RunState, stage: string) =>
      writeStatus(client, bucket, statusOf(state, { stage }, Date.now()));
    expect(await write(older, 'create_dataset')).toBe('written');
    // The newer run takes the file from the older one, which was still running: it is named.
    expect(await write(newer, 'validate_drop')).toBe('written');
    expect(await write(older, 'poll_dataset')).toBe('superseded');
    const status = await readStatus(client, bucket, drop);
    expect(status).toMatchObject({ run_id: 'run-new', stage: 'validate_drop' });
    expect(status?.superseded_runs).toEqual([
      expect.objectContaining({ run_id: 'run-old', state: 'running', stage: 'poll_dataset', credits: 0 }),
    ]);

    // The newer run keeps writing, and keeps the entry; an even newer one takes over.
    expect(await write(newer, 'poll_dataset')).toBe('written');
    expect((await readStatus(client, bucket, drop))?.superseded_runs).toHaveLength(1);
    const newest = stateOf(drop, 'run-newest', '2026-01-03T00:00:00.000Z');
    expect(await write(newest, 'validate_drop')).toBe('written');
    const last = await readStatus(client, bucket, drop);
    expect(last?.run_id).toBe('run-newest');
    expect(last?.superseded_runs?.map((entry) => entry.run_id)).toEqual(['run-new', 'run-old']);
  });

  it('a run that ended is not named when a later upload of the drop takes the file', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const first = stateOf(drop, 'run-1', '2026-01-01T00:00:00.000Z');
    await writeStatus(client, bucket, statusOf(first, { stage: 'report', state: 'succeeded' }, Date.now()));
    const second = stateOf(drop, 'run-2', '2026-01-02T00:00:00.000Z');
    expect(await writeStatus(client, bucket, statusOf(second, { stage: 'validate_drop' }, Date.now()))).toBe(
      'written',
    );
    expect((await readStatus(client, bucket, drop))?.superseded_runs).toEqual([]);
  });

  it('races two runs writing at once, many times: the newer run is always on top (conditional writes)', async () => {
    const { client, bucket } = fixtures.s3();
    const drop = uniqueDrop();
    const newer = stateOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    const older = stateOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    // Bounded: 3 rounds of both runs writing four times each, all at once.
    for (let round = 0; round < 3; round++) {
      const writes = Array.from({ length: 4 }, (_, n) => [
        writeStatus(
          client,
          bucket,
          statusOf(older, { stage: `older-${String(round)}-${String(n)}` }, Date.now()),
        ),
        writeStatus(
          client,
          bucket,
          statusOf(newer, { stage: `newer-${String(round)}-${String(n)}` }, Date.now()),
        ),
      ]).flat();
      await Promise.all(writes);
      const status = await readStatus(client, bucket, drop);
      expect(status?.run_id).toBe('run-new');
      expect(status?.stage).toMatch(/^newer-/);
      expect(status?.superseded_runs?.map((entry) => entry.run_id)).toEqual(['run-old']);
    }
  });

  it('the older run reading before the newer run writes and writing after: its write does not land on top', async () => {
    // The race in slow motion: the older run's PUT is held until the newer run's status is
    // written. Without a conditional write the older run's document would replace it.
    const { client, bucket, endpoint } = fixtures.s3();
    const drop = uniqueDrop();
    const older = stateOf(drop, 'run-old', '2026-01-01T00:00:00.000Z');
    const newer = stateOf(drop, 'run-new', '2026-01-02T00:00:00.000Z');
    await writeStatus(client, bucket, statusOf(older, { stage: 'create_dataset' }, Date.now()));
    const slow = localS3Client(endpoint);
    let releasePut: () => void = () => undefined;
    const putHeld = new Promise<void>((resolve) => {
      releasePut = resolve;
    });
    let reachedPut: () => void = () => undefined;
    const olderAtPut = new Promise<void>((resolve) => {
      reachedPut = resolve;
    });
    let held = false;
    slow.middlewareStack.add(
      (next, context) => async (args) => {
        if (context.commandName === 'PutObjectCommand' && !held) {
          held = true;
          reachedPut();
          await putHeld;
        }
        return next(args);
      },
      { step: 'initialize', name: 'holdFirstPut' },
    );
    try {
      const olderWrite = writeStatus(slow, bucket, statusOf(older, { stage: 'upload_files' }, Date.now()));
      await olderAtPut;
      expect(await writeStatus(client, bucket, statusOf(newer, { stage: 'validate_drop' }, Date.now()))).toBe(
        'written',
      );
      releasePut();
      expect(await olderWrite).toBe('superseded');
      const status = await readStatus(client, bucket, drop);
      expect(status).toMatchObject({ run_id: 'run-new', stage: 'validate_drop' });
      expect(status?.superseded_runs?.[0]).toMatchObject({ run_id: 'run-old', stage: 'upload_files' });
    } finally {
      slow.destroy();
    }
  });
});
