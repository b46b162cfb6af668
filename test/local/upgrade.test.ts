/**
 * An upgrade from 0.2.0 keeps what the bucket holds readable (docs/upgrading.md). The files in
 * test/fixtures/0.2.0/ are what 0.2.0 itself wrote (commit 0726556, `hopper local --data-dir
 * --credit-budget 5` and examples/reviews uploaded with the aws CLI, 2 December 2026), kept byte
 * for byte (.prettierignore): the status file, the run record, the training claim, the credit
 * ledger, current.json and model.json. This version's readers, `hopper status` and `hopper models
 * --drop` read them on the local S3.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCreditUse } from '../../lambdas/ownership/index.js';
import { readRunRecord, readStatus } from '../../lambdas/records/status/index.js';
import { runModelsCommand } from '../../local/cli/models.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { HOPPER_BUCKET_ENV, S3_ENDPOINT_ENV } from '../../local/cli/target.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { runCommandCaptured } from '../helpers/commands.js';

const FIXTURES = fileURLToPath(new URL('../fixtures/0.2.0/', import.meta.url));
const RUN = 'reviews-4f800b89c7b48b91db20f8cea0d2c936';
const RUN_RECORD = `status/.runs/reviews/${RUN}.json`;
/** Seven minutes after the run started, within the ledger's 24 hours. */
const NOW = Date.parse('2026-12-02T16:54:00Z');
let s3: LocalS3;
/** Each fixture's key in the bucket, and its JSON. */
const written = new Map<string, unknown>();

beforeAll(async () => {
  s3 = await startLocalS3();
  for (const key of await readdir(FIXTURES, { recursive: true })) {
    if (!key.endsWith('.json')) continue;
    const body = await readFile(`${FIXTURES}${key}`, 'utf8');
    written.set(key, JSON.parse(body));
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
  }
});

afterAll(() => s3.close());

/** Runs a command against the local S3 as `hopper ... --bucket` would, at NOW. */
function hopper(command: typeof runStatusCommand, args: string[]) {
  return runCommandCaptured(command, args, {
    env: {
      [HOPPER_BUCKET_ENV]: s3.bucket,
      [S3_ENDPOINT_ENV]: s3.endpoint,
      AWS_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
      AWS_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
      AWS_REGION: 'us-east-1',
    },
    now: () => NOW,
  });
}

describe("a bucket 0.2.0 wrote, read by this version's code", () => {
  it('holds the six files 0.2.0 writes for a run', () => {
    expect([...written.keys()].sort()).toEqual([
      'models/reviews/ad69a5d2-1c45-420d-9c5c-2204c012da27/model.json',
      'models/reviews/current.json',
      'status/.credits/ledger.json',
      RUN_RECORD,
      'status/.training/reviews.json',
      'status/reviews.json',
    ]);
  });

  it('reads the status file and the run record as they were written', async () => {
    expect(await readStatus(s3.client, s3.bucket, 'reviews')).toEqual(written.get('status/reviews.json'));
    expect(await readRunRecord(s3.client, s3.bucket, RUN_RECORD)).toEqual(written.get(RUN_RECORD));
  });

  it("reads the credit ledger's use against the budget it recorded", async () => {
    expect(await readCreditUse(s3.client, s3.bucket, NOW)).toEqual([
      { window: '24 h', limit: 5, used: 1, freesAt: expect.any(String) as unknown },
    ]);
  });

  it('hopper status shows the run and the budget', async () => {
    const shown = await hopper(runStatusCommand, []);
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(/^reviews +succeeded +5 +download +7m/m);
    expect(shown.stdout).toMatch(/1 of 5/);
  });

  it("hopper models --drop lists 0.2.0's model as the current one, with its metrics", async () => {
    const models = await hopper(runModelsCommand, ['--drop', 'reviews', '--json']);
    expect(models).toMatchObject({ code: 0, stderr: '' });
    expect(JSON.parse(models.stdout)).toEqual([
      expect.objectContaining({
        model_id: 'ad69a5d2-1c45-420d-9c5c-2204c012da27',
        run_id: RUN,
        current: true,
      }),
    ]);
  });
});
