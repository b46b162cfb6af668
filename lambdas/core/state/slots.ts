/**
 * The slots the service steps return, built from the service's records: what the state machine
 * routes on (`nextAction`), what the Wait states sleep (`waitSeconds`), and what status.json shows.
 */
import type { Dataset, Model } from '../../service-client/index.js';
import {
  FILES_EXPIRY_MARGIN_SECONDS,
  nextBatch,
  nextPoll,
  noWait,
  pollCeilingSeconds,
  type ExpectedFinish,
} from '../schedule/polling.js';
import type { DatasetSlot, ModelSlot } from './state.js';
import type { TrainingPlan } from './sweep.js';

/**
 * The dataset slot after a call that returned `record`.
 * @param previous the slot before the call (carries the backoff and the run's poll count)
 */
export function datasetSlot(
  record: Dataset,
  previous: DatasetSlot | undefined,
  now: number,
  labelled = previous?.labelled ?? 0,
): DatasetSlot {
  const schedule = nextPoll(record.next_action, previous, { now, deadline: record.expires_at });
  // Still at the action the Task was called for (not a wait, which nextPoll counts): the Choice
  // sends the run round to the same Task for another batch.
  const again =
    previous !== undefined && record.next_action !== 'wait' && record.next_action === previous.nextAction;
  return {
    id: record.id,
    step: record.step,
    status: record.status,
    nextAction: record.next_action,
    expiresAt: record.expires_at,
    error: record.error,
    labelled,
    ...(again ? nextBatch(schedule, doingAt(record.next_action, labelled)) : schedule),
  };
}

/** What a run still at `action` is doing, for history_limit's message. */
function doingAt(action: string, labelled: number): string {
  if (action === 'label_examples') return `labelling (${String(labelled)} labels so far)`;
  if (action === 'upload_files') return 'uploading files';
  return `at next_action ${action}`;
}

/**
 * The model slot after a call that returned `record`.
 * @param plan trainings started so far (this one included) and what follows (trainingPlan)
 * @param previous the model slot before the call, or for the run's first model the dataset slot
 * @param history what the account's earlier models showed (AccountHistory); by default the
 *   previous model slot's (nothing when there is none)
 */
export function modelSlot(
  record: Model,
  plan: TrainingPlan,
  previous: ModelSlot | DatasetSlot | undefined,
  now: number,
  history: AccountHistory = historyOf(previous),
): ModelSlot {
  const { filesRetentionSeconds, expectedFinish } = history;
  // The backoff goes on only for the same model; a new one (the first, or a retry) starts
  // afresh, while the run's poll count carries on.
  const sameModel = previous !== undefined && isModelSlot(previous) && previous.id === record.id;
  const schedule = previous === undefined || sameModel ? previous : noWait(previous);
  return {
    id: record.id,
    step: record.step,
    status: record.status,
    nextAction: record.next_action,
    version: record.version,
    encoder: record.encoder,
    attempts: plan.attempts,
    retryLeft: plan.retryLeft,
    ...(sameModel && previous.paidBy !== undefined ? { paidBy: previous.paidBy } : {}),
    ...(plan.sweep === undefined ? {} : { sweep: plan.sweep }),
    ...(plan.nextEncoder === undefined ? {} : { nextEncoder: plan.nextEncoder }),
    filesExpireAt: record.files_expire_at,
    filesRetentionSeconds,
    expectedFinish,
    onnxBytes: record.onnx_bytes,
    error: record.error,
    // Only once the service reports them (a finished training): the slot stays small until then.
    ...(record.gpu_usd === null ? {} : { gpuUsd: record.gpu_usd }),
    ...(record.jev_usd === null ? {} : { jevUsd: record.jev_usd }),
    ...(record.files_deleted_at === null ? {} : { filesDeletedAt: record.files_deleted_at }),
    ...(record.hf_repo === null ? {} : { hfRepo: record.hf_repo }),
    ...nextPoll(record.next_action, schedule, {
      now,
      deadline: record.files_expire_at,
      marginSeconds: FILES_EXPIRY_MARGIN_SECONDS,
      maxSeconds: pollCeilingSeconds(filesRetentionSeconds),
      since: record.created_at,
      expected: expectedFinish,
    }),
  };
}

/** What StartTraining learnt from the account's earlier done models, carried on by every poll. */
export interface AccountHistory {
  /** The shortest time they kept their files (seconds), or null. */
  readonly filesRetentionSeconds: number | null;
  /** When a training is expected to finish, from how long theirs took, or null. */
  readonly expectedFinish: ExpectedFinish | null;
}

/** What the previous model slot carried; nothing before the run's first model. */
function historyOf(previous: ModelSlot | DatasetSlot | undefined): AccountHistory {
  const model = previous !== undefined && isModelSlot(previous) ? previous : undefined;
  return {
    filesRetentionSeconds: model?.filesRetentionSeconds ?? null,
    expectedFinish: model?.expectedFinish ?? null,
  };
}

function isModelSlot(slot: ModelSlot | DatasetSlot): slot is ModelSlot {
  return 'attempts' in slot;
}
