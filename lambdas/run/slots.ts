/**
 * The slots the service steps return, built from the service's records: what the state machine
 * routes on (`nextAction`), what the Wait states sleep (`waitSeconds`), and what status.json shows.
 */
import type { Dataset, Model } from '../service-client/index.js';
import { nextPoll } from './polling.js';
import type { DatasetSlot, ModelSlot, PollSchedule } from './state.js';

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
  return {
    id: record.id,
    step: record.step,
    status: record.status,
    nextAction: record.next_action,
    expiresAt: record.expires_at,
    error: record.error,
    labelled,
    ...nextPoll(record.next_action, previous, record.expires_at, now),
  };
}

/**
 * The model slot after a call that returned `record`.
 * @param attempts trainings of the dataset started so far, this one included
 * @param previous the schedule before the call: the model slot's, or for a new model the
 *   dataset's (so the run's poll count carries on)
 */
export function modelSlot(
  record: Model,
  attempts: number,
  previous: PollSchedule | undefined,
  now: number,
): ModelSlot {
  // A different model (a retry) starts its backoff afresh; the run's poll count carries on.
  const schedule =
    previous !== undefined && 'id' in previous && previous.id !== record.id
      ? { ...previous, waitSeconds: 0, polls: 0 }
      : previous;
  return {
    id: record.id,
    step: record.step,
    status: record.status,
    nextAction: record.next_action,
    version: record.version,
    encoder: record.encoder,
    attempts,
    filesExpireAt: record.files_expire_at,
    onnxBytes: record.onnx_bytes,
    error: record.error,
    ...nextPoll(record.next_action, schedule, record.files_expire_at, now),
  };
}
