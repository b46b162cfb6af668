/**
 * Resuming a failed run (train.json `"resume": true`, or `hopper retry`): the new run takes the
 * dataset the drop's failed run left at the service instead of creating and uploading another.
 * validate_drop finds that dataset in the drop's status file (resumeSource), before the new run
 * overwrites the file; create_dataset checks it at the service (resumableDataset) and hands it
 * to the RouteDataset Choice, which sends a dataset at start_training or retry to StartTraining.
 * StartTraining adopts a model of the dataset already queued, training or done, so a resumed run
 * never pays twice for a training.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import type { Dataset, TrainingServiceClient } from '../service-client/index.js';
import { NotFoundError } from '../service-client/errors.js';
import { RunError } from './errors.js';
import type { ResumeFrom, RunInput } from './state.js';
import { readStatus } from './status.js';

/** The dataset next_actions a run can resume from: ready to train, or to train again. */
export const RESUMABLE_NEXT_ACTIONS: readonly string[] = ['start_training', 'retry'];

const START_OVER = 'drop train.json without "resume" to start over';

/**
 * The drop's failed run and its dataset, from status/<drop>.json.
 * @throws RunError not_resumable when there is no failed run with a dataset to resume
 */
export async function resumeSource(s3: S3Client, run: RunInput): Promise<ResumeFrom> {
  const status = await readStatus(s3, run.bucket, run.drop);
  if (status === null || status.run_id === run.runId) {
    throw notResumable(
      `there is no earlier run of ${run.drop} to resume (status/${run.drop}.json names none): ${START_OVER}`,
    );
  }
  if (status.state === 'running') {
    throw notResumable(
      `run ${status.run_id} of ${run.drop} is still running (at ${status.hopper_step}): wait for it to end, and resume only if it fails`,
    );
  }
  if (status.state === 'succeeded') {
    throw notResumable(
      `the latest run ${status.run_id} of ${run.drop} succeeded, so there is nothing to resume: ${START_OVER} to train again`,
    );
  }
  if (status.dataset_id === null) {
    throw notResumable(
      `the failed run ${status.run_id} of ${run.drop}${codeOf(status.error?.code)} ended before it created a dataset at the service, so nothing can be reused: fix what its error says, then ${START_OVER}`,
    );
  }
  return { runId: status.run_id, datasetId: status.dataset_id, errorCode: status.error?.code ?? null };
}

/**
 * The earlier run's dataset, when the service still holds it ready to train.
 * @throws RunError not_resumable naming why not (gone, expired, or not at start_training/retry)
 */
export async function resumableDataset(
  client: TrainingServiceClient,
  from: ResumeFrom,
  now: number,
): Promise<Dataset> {
  let dataset: Dataset;
  try {
    dataset = await client.getDataset(from.datasetId);
  } catch (error) {
    if (!(error instanceof NotFoundError)) throw error;
    throw notResumable(
      `dataset ${from.datasetId} of run ${from.runId} is no longer at the training service: ${START_OVER}`,
      error,
    );
  }
  if (dataset.next_action === 'expired' || Date.parse(dataset.expires_at) <= now) {
    throw notResumable(
      `dataset ${dataset.id} of run ${from.runId} expired at the training service at ${dataset.expires_at}: ${START_OVER}`,
    );
  }
  if (!RESUMABLE_NEXT_ACTIONS.includes(dataset.next_action)) {
    throw notResumable(
      `dataset ${dataset.id} of run ${from.runId} is at step ${String(dataset.step)} with next_action ${dataset.next_action}; only a dataset ready to train (start_training or retry) can be resumed: ${START_OVER}`,
    );
  }
  return dataset;
}

function codeOf(code: string | undefined): string {
  return code === undefined ? '' : ` (${code})`;
}

function notResumable(detail: string, cause?: unknown): RunError {
  return new RunError('not_resumable', detail, cause === undefined ? {} : { cause });
}
