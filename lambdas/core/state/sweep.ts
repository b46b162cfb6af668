/**
 * A run's trainings, one encoder after another. train.json `encoders` (a sweep) trains each from
 * the one dataset, in order, each with its own attempts; without it a run trains one encoder.
 * What the model slot says for the Choices is computed here, once (trainingPlan): AttemptsLeft
 * and ModelCopied route on its `retryLeft` and `nextEncoder`, and start_training asks the same
 * rule (attemptsLeft).
 */
import { modelCopied, type EncoderOutcome, type ModelSlot, type RunState, type SweepSlot } from './state.js';

/** The attempt limit's one owner: whether `attempts` trainings leave room for another. */
export function attemptsLeft(attempts: number, maxAttempts: number): boolean {
  return attempts < maxAttempts;
}

/** The model slot's fields that are Hopper's, not the service's: what the Choices read. */
export type TrainingPlan = Pick<ModelSlot, 'attempts' | 'retryLeft' | 'sweep' | 'nextEncoder'>;

export function trainingPlan(attempts: number, maxAttempts: number, sweep?: SweepSlot): TrainingPlan {
  const next = sweep?.encoders[sweep.outcomes.length + 1];
  return {
    attempts,
    retryLeft: attemptsLeft(attempts, maxAttempts),
    ...(sweep === undefined ? {} : { sweep }),
    ...(next === undefined ? {} : { nextEncoder: next }),
  };
}

/**
 * Which of the run's trainings `plan` is, counting from 1 across a sweep's encoders: the credit
 * budget's key for its credit (lambdas/ownership/credit-ledger.ts).
 */
export function trainingOrdinal(plan: TrainingPlan): number {
  return (plan.sweep?.outcomes ?? []).reduce((sum, outcome) => sum + outcome.attempts, plan.attempts);
}

/**
 * The sweep start_training goes on with: the model slot's, with its encoder's outcome added when
 * the run moves on from it to the next (its model copied, or no attempt left).
 */
export function sweepOnwards(state: RunState): SweepSlot | undefined {
  const { model } = state;
  if (model?.sweep === undefined || model.nextEncoder === undefined) return model?.sweep;
  const outcome = outcomeOf(state, model);
  if (outcome.outcome === 'training') return model.sweep;
  return { ...model.sweep, outcomes: [...model.sweep.outcomes, outcome] };
}

/** Every encoder's outcome so far (the status file's and model.json's `encoders`); undefined outside a sweep. */
export function encoderOutcomes(state: RunState): EncoderOutcome[] | undefined {
  const { model } = state;
  const sweep = model?.sweep;
  if (model === undefined || sweep === undefined) return undefined;
  return sweep.encoders.map(
    (encoder, index) =>
      sweep.outcomes[index] ??
      (index === sweep.outcomes.length
        ? outcomeOf(state, model)
        : { encoder, outcome: 'pending', model_id: null, attempts: 0, error: null }),
  );
}

/** The ids of the run's models copied so far, every encoder's in a sweep. */
export function copiedModelIds(state: RunState): string[] {
  const outcomes =
    encoderOutcomes(state) ?? (state.model === undefined ? [] : [outcomeOf(state, state.model)]);
  return outcomes.flatMap((one) => (one.outcome === 'copied' && one.model_id !== null ? [one.model_id] : []));
}

function outcomeOf(state: RunState, model: ModelSlot): EncoderOutcome {
  const copied = modelCopied(state);
  const failed = !copied && model.nextAction === 'retry' && !model.retryLeft;
  return {
    encoder: model.encoder,
    outcome: copied ? 'copied' : failed ? 'failed' : 'training',
    model_id: model.id,
    attempts: model.attempts,
    error: failed ? model.error : null,
  };
}
