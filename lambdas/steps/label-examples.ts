/**
 * label_examples: answers the service's held-out examples (docs/service-contract.md, B6) from the drop's labels file,
 * matched as docs/drop-format.md says (lambdas/drop/labels.ts). The file is read once per
 * invocation into an index; then tasks are taken one by one. Time-boxed: no new task is taken
 * when less than a minute of the invocation is left or after a ten-minute batch, and the slot
 * then still says label_examples, so the state machine calls this step again. Every label is
 * checked against the task's choices before it is sent.
 */
import type { Dataset, LabelTask, TrainingServiceClient } from '../service-client/index.js';
import {
  ConflictError,
  FilesExpiredError,
  InvalidLabelError,
  NotFoundError,
} from '../service-client/index.js';
import {
  describeExample,
  loadLabelIndex,
  rowList,
  type LabelIndex,
  type LabelMatch,
} from '../drop/labels.js';
import { quoted } from '../drop/user-text.js';
import {
  RunError,
  taskOfferedAgainMessage,
  labelsRequiredMessage,
  invalidLabelMessage,
} from '../core/errors/index.js';
import { defineStep, type Step, type StepEnv, TIME_BOX } from '../runtime/index.js';
import { datasetSlot } from '../core/state/index.js';
import type { DatasetSlot } from '../core/state/index.js';

export interface LabelBatchLimits {
  /** No new task is taken with less than this left of the invocation. */
  readonly marginMs: number;
  /** No new task is taken after this long in one invocation. */
  readonly batchMs: number;
  /** Tasks in one invocation at most: the loop ends even if the clock is wrong. */
  readonly maxTasks: number;
  /** A monotonic clock in ms, for the batch length. */
  readonly clock: () => number;
}

export const DEFAULT_LABEL_BATCH_LIMITS: LabelBatchLimits = {
  ...TIME_BOX,
  maxTasks: 10_000,
  clock: () => performance.now(),
};

/** The step with other limits (tests); the state machine uses labelExamplesStep. */
export function labelExamplesStepWith(limits: Partial<LabelBatchLimits> = {}): Step<'label_examples'> {
  const effective = { ...DEFAULT_LABEL_BATCH_LIMITS, ...limits };
  return defineStep('label_examples', async (state, env) => {
    const { config, dataset: previous } = state;
    const client = await env.runtime.service();
    let labelled = 0;
    try {
      if (config.labels === null) {
        await requireNoneHeldOut(client, previous.id);
      } else {
        const index = await loadLabelIndex(env.runtime.s3, state.run.bucket, state.run.drop, config.labels);
        labelled = await labelBatch(client, previous.id, index, env, effective);
      }
    } catch (error) {
      const expired = await expiredInstead(client, previous, error);
      if (expired === undefined) throw error;
      // The state machine routes an expired dataset to DatasetExpired: dataset_expired, no credit.
      env.runtime.logger.warn('label_examples: the dataset expired while labelling', {
        dataset_id: previous.id,
        expires_at: expired.expires_at,
      });
      return datasetSlot(expired, previous, env.runtime.now(), previous.labelled);
    }
    const record = await client.getDataset(previous.id);
    return datasetSlot(record, previous, env.runtime.now(), previous.labelled + labelled);
  });
}

export const labelExamplesStep = labelExamplesStepWith();

/**
 * Takes tasks until none is left, the last one is answered, or the time box closes.
 * @returns the number of labels submitted
 */
async function labelBatch(
  client: TrainingServiceClient,
  datasetId: string,
  index: LabelIndex,
  env: StepEnv,
  limits: LabelBatchLimits,
): Promise<number> {
  const started = limits.clock();
  let labelled = 0;
  let answered: string | undefined;
  for (let taken = 0; taken < limits.maxTasks; taken++) {
    const remainingMs = env.remainingMs();
    if (remainingMs < limits.marginMs || limits.clock() - started >= limits.batchMs) {
      env.runtime.logger.info(`label_examples: time box reached; the next invocation goes on`, {
        labelled,
        remaining_ms: remainingMs,
      });
      return labelled;
    }
    const task = await client.nextLabelTask(datasetId);
    if (task === null) return labelled;
    if (task.task === answered) {
      // The service must move on once a task is answered; asking again would loop.
      throw new RunError('service_error', taskOfferedAgainMessage(task.task));
    }
    const match = index.match(task.example);
    if (!task.choices.includes(match.label)) throw invalidLabel(index.fileName, task, match);
    let remaining: number;
    try {
      ({ remaining } = await client.submitLabel(datasetId, task.task, match.label));
    } catch (error) {
      if (error instanceof InvalidLabelError) throw invalidLabel(index.fileName, task, match, error);
      throw error;
    }
    labelled++;
    answered = task.task;
    if (remaining === 0) return labelled;
  }
  return labelled;
}

/**
 * The dataset's record when a label endpoint's refusal (409, 404, 410) came from the dataset
 * expiring under the run, else undefined (the refusal is the error to report). A dataset gone
 * altogether answers 404 to the read: that error goes on to the handler wrapper, which reports
 * it as every step does (lambdas/core/errors/gone.ts: dataset_gone, or dataset_expired once expired).
 */
async function expiredInstead(
  client: TrainingServiceClient,
  previous: DatasetSlot,
  error: unknown,
): Promise<Dataset | undefined> {
  const refused =
    error instanceof ConflictError || error instanceof NotFoundError || error instanceof FilesExpiredError;
  if (!refused) return undefined;
  const record = await client.getDataset(previous.id);
  return record.next_action === 'expired' ? record : undefined;
}

/** @throws RunError labels_required when the service holds out an example and the drop has no labels */
async function requireNoneHeldOut(client: TrainingServiceClient, datasetId: string): Promise<void> {
  const task = await client.nextLabelTask(datasetId);
  if (task === null) return;
  throw new RunError('labels_required', labelsRequiredMessage(task.remaining, task.choices));
}

/** invalid_label: the rows' label is not one of the task's choices, or the service refused it. */
function invalidLabel(fileName: string, task: LabelTask, match: LabelMatch, cause?: unknown): RunError {
  const rows = rowList(match.rows);
  const gives =
    match.label === ''
      ? `${match.rows.length === 1 ? 'has' : 'have'} no label`
      : `${match.rows.length === 1 ? 'gives' : 'give'} label ${quoted(match.label)}`;
  const choices = task.choices.map((choice) => quoted(choice)).join(', ');
  const example = describeExample(task.example);
  return new RunError('invalid_label', invalidLabelMessage({ rows, fileName, gives, example, choices }), {
    cause,
  });
}
