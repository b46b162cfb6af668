/**
 * `--data-dir`: the local bucket and the simulated service outlive local mode. A restart finds
 * earlier drops, status files, models, the service's records and credits; a run cut off by the stop is marked `interrupted` with how to start it over;
 * and the same train.json dropped again after the restart is a new run, not a duplicate.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { readStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { startConsole } from '../../local/console/index.js';
import type { RunPage } from '../../local/console/runs.js';
import { startLocalMode } from '../../local/emulator/local-mode.js';
import { BRISK_SERVICE } from '../../testkit/brisk-service.js';
import {
  dropAndRun,
  modelObjects,
  nextExecution,
  useKeptLocalMode,
  stateReached,
} from '../helpers/local-mode.js';
import { putDrop } from '../helpers/pipeline.js';
import { folderFiles } from '../helpers/console.js';
import { EXAMPLE_FOLDER } from '../helpers/fixtures.js';

const kept = useKeptLocalMode();

/** Two local modes, one after the other, each with a run: about 25 s on a quiet 2-core machine. */
const RESTART_TEST_MS = 90_000;

describe('hopper local --data-dir', { timeout: RESTART_TEST_MS }, () => {
  it('keeps drops, status files, models and the simulated service across a restart, and marks a run cut off by the stop interrupted', async () => {
    const dataDir = await kept.dataDir();
    const files = await folderFiles(EXAMPLE_FOLDER);

    // First start: one run succeeds; another is still training when local mode stops.
    const first = await kept.start(dataDir);
    const done = await dropAndRun(first, 'reviews', files);
    expect(done.outcome.status).toBe('SUCCEEDED');
    const models = await modelObjects(first, 'reviews');
    first.simulated?.configure({ trainingMs: 600_000 });
    const slow = nextExecution(first, inboxKey('slow', TRAIN_JSON));
    await putDrop(first.s3.client, first.bucket, 'slow', files);
    const slowRun = await slow.execution;
    await stateReached(first, slowRun.name, 'WaitForModel');
    expect((await readStatus(first.s3.client, first.bucket, 'slow'))?.state).toBe('running');
    const creditsLeft = first.simulated?.credits();
    await first.close();

    // Second start on the same folder.
    const second = await kept.start(dataDir);
    expect(second.interrupted).toEqual(['slow']);
    const interrupted = await readStatus(second.s3.client, second.bucket, 'slow');
    expect(interrupted).toMatchObject({ run_id: slowRun.name, state: 'interrupted' });
    expect(interrupted?.finished_at).not.toBeNull();
    expect(interrupted?.error?.code).toBe('interrupted');
    expect(interrupted?.error?.message).toContain('hopper retry slow');
    expect((await readStatus(second.s3.client, second.bucket, 'reviews'))?.state).toBe('succeeded');
    expect(await modelObjects(second, 'reviews')).toEqual(models);

    // The simulated service's records and credits came back too.
    expect(second.simulated?.credits()).toBe(creditsLeft);
    const console = await startConsole(second, { dataDir });
    kept.defer(() => console.close());
    const service = (await (await fetch(new URL('/api/service', console.url))).json()) as {
      datasets: { id: string }[];
      models: { id: string; next_action: string }[];
    };
    expect(service.datasets.map((dataset) => dataset.id)).toEqual(
      expect.arrayContaining([done.status?.dataset_id, interrupted?.dataset_id]),
    );
    expect(service.models).toContainEqual(
      expect.objectContaining({ id: done.status?.model_id, next_action: 'download' }),
    );
    const page = (await (await fetch(new URL('/api/runs', console.url))).json()) as RunPage;
    expect(page.runs.map((run) => [run.drop, run.state, run.source])).toEqual(
      expect.arrayContaining([
        ['reviews', 'succeeded', 'status'],
        ['slow', 'interrupted', 'status'],
      ]),
    );

    // The same train.json again: a new run (version ids do not repeat across starts).
    const again = await dropAndRun(second, 'reviews', files);
    expect(again.outcome.status).toBe('SUCCEEDED');
    expect(again.execution.name).not.toBe(done.execution.name);

    // Resumed (the same train.json again adopts its paid model), the interrupted run stays listed.
    second.simulated?.clock.advance(600_000);
    const resumed = await dropAndRun(second, 'slow', files);
    expect(resumed.outcome.status).toBe('SUCCEEDED');
    const after = (await (await fetch(new URL('/api/runs', console.url))).json()) as RunPage;
    expect(after.runs.map((run) => [run.runId, run.state])).toEqual(
      expect.arrayContaining([
        [slowRun.name, 'interrupted'],
        [resumed.execution.name, 'succeeded'],
      ]),
    );
  });

  it('without a data directory nothing is kept: a fresh bucket each start', async () => {
    const local = await startLocalMode({ waitMs: 10, retryPauseMs: 0, simulated: BRISK_SERVICE });
    await putDrop(local.s3.client, local.bucket, 'gone', { 'reviews.csv': 'text\nfine\n' });
    await local.close();
    const again = await startLocalMode({ waitMs: 10, retryPauseMs: 0, simulated: BRISK_SERVICE });
    kept.defer(() => again.close());
    const listed = await again.s3.client.send(
      new ListObjectsV2Command({ Bucket: again.bucket, Prefix: inboxKey('gone', '') }),
    );
    expect(listed.Contents ?? []).toEqual([]);
    expect(again.interrupted).toEqual([]);
  });
});
