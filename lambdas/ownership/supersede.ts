/**
 * The newest train.json of a drop wins (docs/pipeline.md, "A drop uploaded again"):
 * - an older run that has not started a training stops at its next step (`superseded`) and never
 *   starts one;
 * - an older run whose training holds a credit is not abandoned: it goes on to copy its model
 *   under its own model id, and ends `superseded` saying so and what it cost;
 * - at most one run of the drop holds a credit at a time (training-claim.ts): a run whose dataset
 *   is ready while another run's training is under way waits for it to end.
 * Which run is newer: status/<drop>.json always belongs to the newest run that has written it
 * (status.ts writes it conditionally), so a run learns it is superseded when it reads the file;
 * before it creates a dataset or pays, also from train.json's etag in the bucket
 * (stopIfTrainJsonChanged), which changes the moment the newer copy lands, before S3's event has
 * reached the trigger that writes the newer run's first status. Where a run stands is
 * standing.ts's to say.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { TRAINABLE_NEXT_ACTIONS } from '../service-client/contract.js';
import { objectVersion } from '../storage/objects.js';
import { RunError } from '../core/errors/errors.js';
import { supersededMessage } from '../core/errors/messages.js';
import { nextPoll } from '../core/schedule/polling.js';
import type { DatasetSlot, RunState } from '../core/state/state.js';
import type { RunInput } from '../core/state/state.js';
import { executionName } from '../core/state/run-name.js';
import type { RunStatus } from '../records/status/status.js';

export { holdsPaidModel, paidModelOf } from '../core/state/index.js';
import { claimTraining, type ClaimContext } from './training-claim.js';

/** The run that took the drop over, as its status file names it. */
export type NewerRun = Pick<RunInput, 'runId' | 'startedAt'>;

export function newerRunOf(status: Pick<RunStatus, 'run_id' | 'started_at'>): NewerRun {
  return { runId: status.run_id, startedAt: status.started_at };
}

/**
 * The run a newer upload of this run's train.json starts, when that upload has other content (another
 * etag): read from the bucket, so a run about to pay learns of it even before the newer run's
 * first status (the trigger's, once S3's event reaches it). The same content uploaded again is not
 * asked about here: its run adopts this one's work (adoption.ts). Null when train.json is this run's
 * or is gone.
 */
async function changedTrainJson(s3: S3Client, run: RunInput): Promise<NewerRun | null> {
  const current = await objectVersion(s3, run.bucket, run.key);
  if (current === null || current.etag === run.etag) return null;
  return {
    runId: executionName(run.bucket, run.key, current.etag, current.versionId),
    startedAt: current.lastModified.toISOString(),
  };
}

/**
 * Before a call that creates or pays: stops the run (`superseded`, before `stage`) when another
 * upload has replaced its train.json (changedTrainJson). Create_dataset and start_training ask it.
 */
export async function stopIfTrainJsonChanged(s3: S3Client, state: RunState, stage: string): Promise<void> {
  const changed = await changedTrainJson(s3, state.run);
  if (changed !== null) throw supersededError(state, changed, stage);
}

/** The error that stops a superseded run that holds no credit, at the step it was about to take. */
export function supersededError(state: RunState, newer: NewerRun, stage: string): RunError {
  return new RunError('superseded', supersededMessage(state, newer, { stoppedBefore: stage }));
}

/**
 * The dataset slot a step returned, unless it is ready to train while another run of the drop
 * holds the claim: then it waits (next_action `wait`, polled again like a dataset at `wait`)
 * and says for whom.
 * @param previous the dataset slot before the step (carries the backoff)
 */
export async function gateTraining(
  slot: DatasetSlot,
  previous: DatasetSlot | undefined,
  context: ClaimContext,
): Promise<DatasetSlot> {
  if (!TRAINABLE_NEXT_ACTIONS.includes(slot.nextAction)) return slot;
  const claim = await claimTraining(context, slot.id);
  if (claim.held) {
    const { waitingFor: _done, ...ready } = slot;
    return ready;
  }
  return {
    ...slot,
    nextAction: 'wait',
    ...nextPoll('wait', previous, { now: context.now, deadline: slot.expiresAt }),
    waitingFor: { runId: claim.holder.run_id ?? '', modelId: claim.holder.model_id },
  };
}
