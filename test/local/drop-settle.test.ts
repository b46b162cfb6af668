/**
 * train.json uploaded before the data files, as `aws s3 cp --recursive` or a sync tool may do:
 * end to end through local mode with a quiet period, as `hopper local` and Lambda run. The run
 * waits for the folder to stop changing and trains on every file, and says which it used.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { finished, nextExecution, useLocalMode } from '../helpers/local-mode.js';
import { expectSaved } from '../helpers/local-runs.js';
import { LABELS_BY_ID, REVIEWS_CSV } from '../helpers/fixtures.js';

const fixture = useLocalMode();

/** Rows the first file does not have, and labels for every row of both. */
const MORE_REVIEWS = ['id,text', 'r5,The kettle boils fast.', 'r6,The charger stopped working.'].join('\n');
const LABELS = [LABELS_BY_ID, 'r5,positive', 'r6,negative'].join('\n');

describe('train.json before the data files', () => {
  it('waits for the folder to fall quiet, trains on every file, and names them in status.json and model.json', async () => {
    const local = await fixture.start({ dropQuietMs: 800 });
    const drop = 'out-of-order';
    const put = (name: string, body: string) =>
      local.s3.client.send(
        new PutObjectCommand({ Bucket: local.bucket, Key: inboxKey(drop, name), Body: body }),
      );

    const started = nextExecution(local, inboxKey(drop, TRAIN_JSON));
    await put(TRAIN_JSON, '{}');
    await put('reviews.csv', REVIEWS_CSV);
    await new Promise((resolve) => setTimeout(resolve, 300));
    await put('labels.csv', LABELS);
    await put('more.csv', MORE_REVIEWS);
    const run = await finished(local, await started.execution, started.events);

    expect(run.status?.error ?? null).toBeNull();
    const { record } = await expectSaved(local, run);
    expect(run.status).toMatchObject({ files: ['more.csv', 'reviews.csv'], labels: 'labels.csv' });
    expect(record.run).toMatchObject({ files: ['more.csv', 'reviews.csv'], labels: 'labels.csv' });
    expect(local.simulated?.requestCount('createDataset')).toBe(1);
  });
});
