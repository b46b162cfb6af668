/**
 * The training a run is about to start: POST /v1/datasets/{id}/models pays a credit, has no
 * idempotency key, and its answer can be lost (a kill, a restart, a dropped connection). So the
 * status write before start_training (the step that routes the run there: label_examples,
 * poll_dataset, create_dataset of a resumed run, poll_model at `retry`, copy_model before a sweep's
 * next encoder) carries what start_training is about to create: the status's `training_intent`.
 * A run that finds it and no model after it (a restart of local mode, `hopper retry`, the same
 * train.json uploaded again) looks for the model at the service through the dataset's models
 * before it does anything again. Pure over the run state: statusOf records it.
 */
import { TRAINABLE_NEXT_ACTIONS } from '../../service-client/contract.js';
import { modelCopied, type RunState } from './state.js';

/** The status's `training_intent` (snake_case, as the status file's fields). */
export interface TrainingIntent {
  /** The dataset start_training trains: the model is found among its models. */
  readonly dataset_id: string;
  /** The encoder it trains; null: the service's default (or a sweep's first, not resolved yet). */
  readonly encoder: string | null;
  /** Which training of the dataset (of this encoder, in a sweep) it is, counting from 1. */
  readonly attempt: number;
}

/** The training the run's next step, start_training, is about to start; null when it goes elsewhere. */
export function trainingIntentOf(state: RunState): TrainingIntent | null {
  const { dataset, model, config } = state;
  if (dataset === undefined) return null;
  if (model === undefined) {
    if (!TRAINABLE_NEXT_ACTIONS.includes(dataset.nextAction)) return null;
    const sweep = config?.encoders;
    const encoder =
      sweep === undefined ? (config?.encoder ?? null) : sweep === 'all' ? null : (sweep[0] ?? null);
    return { dataset_id: dataset.id, encoder, attempt: 1 };
  }
  if (model.nextAction === 'retry' && model.retryLeft) {
    return { dataset_id: dataset.id, encoder: model.encoder, attempt: model.attempts + 1 };
  }
  const movesOn = modelCopied(state) || (model.nextAction === 'retry' && !model.retryLeft);
  if (model.nextEncoder !== undefined && movesOn) {
    return { dataset_id: dataset.id, encoder: model.nextEncoder, attempt: 1 };
  }
  return null;
}
