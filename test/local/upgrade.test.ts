/**
 * An upgrade from 0.2.0 keeps what the bucket holds readable (docs/upgrading.md): a status file
 * and a credit ledger in the format 0.2.0 writes (test/fixtures/0.2.0/, written from the code at
 * 0726556: RunStatus in lambdas/run/status/status.ts, the Ledger in lambdas/run/lock/
 * credit-ledger.ts) are read by this version's readers and by `hopper status`, on the local S3.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { readCreditUse } from '../../lambdas/run/lock/index.js';
import { readStatus } from '../../lambdas/run/status/index.js';
import { CREDIT_LEDGER_KEY, statusKey } from '../../lambdas/storage/keys.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { HOPPER_BUCKET_ENV, S3_ENDPOINT_ENV } from '../../local/cli/target.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { runCommandCaptured } from '../helpers/commands.js';

const FIXTURES = new URL('../fixtures/0.2.0/', import.meta.url);
const NOW = Date.parse('2026-11-29T09:00:00Z');
let s3: LocalS3;
let written: { status: Record<string, unknown>; ledger: string };

beforeAll(async () => {
  s3 = await startLocalS3();
  const status = await readFile(new URL('status/reviews.json', FIXTURES), 'utf8');
  const ledger = await readFile(new URL('status/.credits/ledger.json', FIXTURES), 'utf8');
  written = { status: JSON.parse(status) as Record<string, unknown>, ledger };
  for (const [key, body] of [
    [statusKey('reviews'), status],
    [CREDIT_LEDGER_KEY, ledger],
  ] as const)
    await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
});

afterAll(() => s3.close());

describe("a bucket 0.2.0 wrote, read by this version's code", () => {
  it('reads the status file as it was written', async () => {
    expect(await readStatus(s3.client, s3.bucket, 'reviews')).toEqual(written.status);
  });

  it("reads the credit ledger's use against the budget it recorded", async () => {
    expect(await readCreditUse(s3.client, s3.bucket, NOW)).toEqual([
      { window: '24 h', limit: 20, used: 1, freesAt: expect.any(String) as unknown },
    ]);
  });

  it('hopper status shows the run and the budget', async () => {
    const shown = await runCommandCaptured(runStatusCommand, [], {
      env: {
        [HOPPER_BUCKET_ENV]: s3.bucket,
        [S3_ENDPOINT_ENV]: s3.endpoint,
        AWS_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
        AWS_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
        AWS_REGION: 'us-east-1',
      },
      now: () => NOW,
    });
    expect(shown).toMatchObject({ code: 0, stderr: '' });
    expect(shown.stdout).toMatch(/^reviews +succeeded +5 +- +7m/m);
    expect(shown.stdout).toMatch(/1 of 20/);
  });
});
