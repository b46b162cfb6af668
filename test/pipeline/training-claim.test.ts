/**
 * The drop's training claim (lambdas/ownership/training-claim.ts) when its holder has ended: a
 * run training the same dataset takes it at once (and adopts what the ended run started), not
 * after CLAIM_FRESH_MS; a run of another dataset waits only while that training is under way.
 * Real local S3 and the simulated service; the holder's end as its status says it, or as Step
 * Functions answers for its execution (a lookup standing in for DescribeExecution here; local
 * mode's real one in test/local/claim-takeover.test.ts).
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { describe, expect, it } from 'vitest';
import {
  claimContextOf,
  claimHolderEnded,
  gateTraining,
  type ExecutionLookup,
  type TrainingClaim,
} from '../../lambdas/ownership/index.js';
import { runHasEnded, type RunStatus } from '../../lambdas/records/status/index.js';
import { datasetSlot } from '../../lambdas/core/state/index.js';
import { trainingClaimKey } from '../../lambdas/storage/keys.js';
import { trainableDataset } from '../client/helpers.js';
import { usePipelineFixtures } from '../helpers/pipeline.js';
import { stateOf } from '../helpers/fixtures.js';

const fixtures = usePipelineFixtures();

/** A drop whose claim `holder` holds, and a gate context for `taker` with `status` as found. */
async function claimedDrop(holder: Omit<TrainingClaim, 'run_id' | 'started_at'>) {
  const { client, bucket } = fixtures.s3();
  const taker = stateOf(bucket).run;
  const holderRun = `${taker.runId}-older`;
  const claim: TrainingClaim = { run_id: holderRun, started_at: taker.startedAt, ...holder };
  await client.send(
    new PutObjectCommand({ Bucket: bucket, Key: trainingClaimKey(taker.drop), Body: JSON.stringify(claim) }),
  );
  return { taker, holderRun };
}

/** What a claim context takes of a runtime: the fixtures' S3, a clock standing at `now`. */
function at(now: number, executions?: ExecutionLookup) {
  return { s3: fixtures.s3().client, now: () => now, executions };
}

/**
 * A dataset ready to train, and a claim of it taken just now with no model yet: the holder was
 * about to start a training (or lost its answer).
 */
async function trainableWithFreshClaim() {
  const service = await fixtures.service();
  const client = await fixtures.runtime(service).service();
  const dataset = await trainableDataset(client);
  const now = service.clock.now();
  const fresh = { dataset_id: dataset.id, model_id: null, claimed_at: new Date(now).toISOString() };
  return { client, dataset, now, fresh };
}

function statusNaming(runId: string, state: RunStatus['state']): RunStatus {
  return { run_id: runId, started_at: '2026-01-01T00:00:00.000Z', state } as RunStatus;
}

describe('a claim whose holder has ended', () => {
  it('is taken at once by a run of the same dataset; while its holder runs, the taker waits', async () => {
    const { client, dataset, now, fresh } = await trainableWithFreshClaim();

    for (const [holderState, expected] of [
      ['running', 'wait'],
      ['interrupted', 'start_training'],
      ['failed', 'start_training'],
    ] as const) {
      const { taker, holderRun } = await claimedDrop(fresh);
      const status = statusNaming(holderRun, holderState);
      const context = claimContextOf(at(now), taker, status, () => Promise.resolve(client));
      const gated = await gateTraining(datasetSlot(dataset, undefined, now), undefined, context);
      expect({ holderState, nextAction: gated.nextAction }).toEqual({ holderState, nextAction: expected });
    }
  });

  it('waits for a run of another dataset while the ended run’s training is under way', async () => {
    const service = await fixtures.service({ trainingMs: 600_000 });
    const client = await fixtures.runtime(service).service();
    const held = await trainableDataset(client);
    const model = await client.startTraining(held.id, (await client.defaultEncoder()).id);
    const other = await trainableDataset(client, 'other');
    const now = service.clock.now();
    const { taker, holderRun } = await claimedDrop({
      dataset_id: held.id,
      model_id: model.id,
      claimed_at: new Date(now).toISOString(),
    });
    const status = statusNaming(holderRun, 'interrupted');
    const context = claimContextOf(at(now), taker, status, () => Promise.resolve(client));

    const gated = await gateTraining(datasetSlot(other, undefined, now), undefined, context);

    expect(gated).toMatchObject({ nextAction: 'wait', waitingFor: { runId: holderRun, modelId: model.id } });
  });
});

describe('a claim whose holder the status shows running', () => {
  it('is taken at once when the holder’s execution has ended; kept while it runs or cannot be told', async () => {
    const { client, dataset, now, fresh } = await trainableWithFreshClaim();

    for (const [answer, expected] of [
      ['ended', 'start_training'],
      ['running', 'wait'],
      ['unknown', 'wait'],
    ] as const) {
      const { taker, holderRun } = await claimedDrop(fresh);
      const asked: string[] = [];
      const executions: ExecutionLookup = (arn) => {
        asked.push(arn);
        return Promise.resolve(answer);
      };
      const run = { ...taker, executionArn: `arn:aws:states:us-east-1:1:execution:hopper:${taker.runId}` };
      const status = statusNaming(holderRun, 'running');
      const context = claimContextOf(at(now, executions), run, status, () => Promise.resolve(client));
      const gated = await gateTraining(datasetSlot(dataset, undefined, now), undefined, context);
      expect({ answer, nextAction: gated.nextAction, asked }).toEqual({
        answer,
        nextAction: expected,
        // The holder's execution: a sibling of the taker's, named by the holder's run id.
        asked: [`arn:aws:states:us-east-1:1:execution:hopper:${holderRun}`],
      });
    }
  });

  it('asks nothing of Step Functions when the status already says the holder ended, or without an ARN', async () => {
    const asked: string[] = [];
    const executions: ExecutionLookup = (arn) => {
      asked.push(arn);
      return Promise.resolve('ended');
    };
    const run = stateOf('bucket').run;
    const withArn = { ...run, executionArn: 'arn:aws:states:us-east-1:1:execution:hopper:me' };
    expect(await claimHolderEnded(statusNaming('old', 'failed'), withArn, executions)('old')).toBe(true);
    expect(await claimHolderEnded(statusNaming('old', 'running'), run, executions)('old')).toBe(false);
    expect(asked).toEqual([]);
  });
});

describe('runHasEnded', () => {
  it('reads the run from the status file, its own or an older entry; an unnamed run has not', () => {
    const status = {
      ...statusNaming('new', 'running'),
      superseded_runs: [{ ...statusNaming('old', 'interrupted'), credits: 0 }],
    } as RunStatus;
    expect(runHasEnded(status, 'new')).toBe(false);
    expect(runHasEnded(status, 'old')).toBe(true);
    expect(runHasEnded(status, 'unknown')).toBe(false);
    expect(runHasEnded(null, 'old')).toBe(false);
    expect(runHasEnded(statusNaming('new', 'succeeded'), 'new')).toBe(true);
  });
});
