/**
 * A drop's training claim whose holder's execution has ended is taken over at once, not after
 * CLAIM_FRESH_MS (lambdas/ownership/training-claim.ts): start_training asks Step Functions
 * (DescribeExecution, local mode's executions endpoint here) about a holder the status does not
 * show ended. In AWS that is a run killed, timed out or stopped before its report wrote its end:
 * its status stays `running`. Before, the next run of the drop waited ten minutes.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import type { TrainingClaim } from '../../lambdas/ownership/index.js';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { statusKey, trainingClaimKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { reviewsDrop } from '../helpers/fixtures.js';
import { dropAndRun, useLocalMode } from '../helpers/local-mode.js';

const fixture = useLocalMode();
const FILES = reviewsDrop();
/** Well inside CLAIM_FRESH_MS (10 min): a run that waited for the claim to go stale fails. */
const RUN_MS = 60_000;

/** The drop's claim, held just now by `runId` before it started a training (no model id). */
async function putFreshClaim(local: LocalMode, drop: string, claim: Partial<TrainingClaim>): Promise<void> {
  const held: TrainingClaim = {
    run_id: 'unset',
    started_at: new Date().toISOString(),
    dataset_id: 'ds-of-the-holder',
    model_id: null,
    claimed_at: new Date().toISOString(),
    ...claim,
  };
  await local.s3.client.send(
    new PutObjectCommand({ Bucket: local.bucket, Key: trainingClaimKey(drop), Body: JSON.stringify(held) }),
  );
}

describe('a training claim whose holder’s execution has ended', { timeout: 3 * RUN_MS }, () => {
  it('is taken at once when Step Functions knows no such execution', async () => {
    const local = await fixture.start();
    await putFreshClaim(local, 'ghost', { run_id: 'ghost-0123456789abcdef0123456789abcdef' });
    const credits = local.simulated?.credits() ?? 0;

    const run = await dropAndRun(local, 'ghost', FILES, RUN_MS);

    expect(run.status).toMatchObject({ state: 'succeeded', error: null });
    expect(local.simulated?.credits()).toBe(credits - 1);
  });

  it('is taken at once when its run’s execution ended without writing its end (the status still says running)', async () => {
    const local = await fixture.start();
    const first = await dropAndRun(local, 'killed', FILES, RUN_MS);
    expect(first.status?.state).toBe('succeeded');
    // As an execution killed before its report leaves them: the status running, the claim held.
    const stale = { ...(first.status as RunStatus), state: 'running', finished_at: null, error: null };
    await local.s3.client.send(
      new PutObjectCommand({ Bucket: local.bucket, Key: statusKey('killed'), Body: JSON.stringify(stale) }),
    );
    await putFreshClaim(local, 'killed', {
      run_id: first.execution.name,
      started_at: first.status?.started_at ?? null,
      dataset_id: first.status?.dataset_id ?? null,
    });

    const second = await dropAndRun(local, 'killed', { [TRAIN_JSON]: '{"maxAttempts": 2}' }, RUN_MS);

    expect(second.status).toMatchObject({ state: 'succeeded', error: null });
    expect(second.execution.name).not.toBe(first.execution.name);
    const status = await readStatus(local.s3.client, local.bucket, 'killed');
    expect(status?.run_id).toBe(second.execution.name);
  });
});
