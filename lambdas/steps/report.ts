/**
 * report: the last Task of every run. It decides the run's outcome from the state, writes the
 * final status/<drop>.json (the handler wrapper does not: `writesStatus: false`) and returns
 * the outcome, on which the definition chooses Succeed or Fail.
 *
 * Outcome rules, first that applies:
 * 1. $.failure (a Task's Catch): failed. A Hopper error (`Hopper.*`) carries `<code>: <text>`
 *    in its Cause; a Task timeout is step_timeout; anything else is internal_error.
 * 2. $.stop (a Pass state on a next_action the run cannot go on from): failed with that code and
 *    a message built from the state.
 * 3. $.copy, a model copied (not a copy put off, CopyWaitSlot): succeeded; in a sweep, failed with
 *    training_failed when an encoder ran out of attempts (the others' models are kept).
 * 4. Otherwise internal_error: the run got here without a model and without an error.
 * A run a newer train.json of the drop took over (lambdas/ownership/supersede.ts) is `superseded`
 * instead when it stopped for that (rule 1 with the code `superseded`), or when its training,
 * which held a credit, went on to the copy (rule 3): the message says which and what it cost.
 *
 * Before the status, a run that copied a model promotes its best one to the drop's current model
 * when it wins, and writes each model's lineage (lineage.ts); status and event say what it decided.
 *
 * The final status goes to status/<drop>.json (or, for a superseded run, to its entry there) and
 * to status/.runs/<drop>/<run id>.json, the drop's runs history that `hopper runs` reads. A run
 * that ends lets the drop's training claim go unless its training is still under way.
 *
 * Then it puts the run's Succeeded or Failed event (and Started, if validate_drop did not),
 * once even when this step is retried (lambdas/records/events/event-bus.ts).
 */
import {
  isRunErrorCode,
  causeMessage,
  isHopperError,
  isTimeoutError,
  parseCodedMessage,
  datasetExpiredMessage,
  modelFilesGoneMessage,
  supersededMessage,
  sweepFailedMessage,
  trainingFailedMessage,
  unsupportedNextActionMessage,
  withRetryAdvice,
} from '../core/errors/index.js';
import { announceRunEnd, defineStep } from '../runtime/index.js';
import {
  copiedModel,
  encoderOutcomes,
  type CaughtFailure,
  type ReportSlot,
  type RunFailure,
  type RunState,
} from '../core/state/index.js';
import { modelLocation, statusOf, writeStatus } from '../records/status/index.js';
import { holdsPaidModel, paidModelOf, type NewerRun, releaseTraining } from '../ownership/index.js';
import type { StopCode } from '../core/state/index.js';
import { runRecordKey } from '../storage/keys.js';
import { putJson } from '../storage/objects.js';
import { promoteRunModels } from './lineage.js';

export const reportStep = defineStep(
  'report',
  async (state, env) => {
    const supersededBy = env.supersededBy ?? null;
    const report = reportOf(state, supersededBy);
    const now = env.runtime.now();
    const summary = env.summary?.(state);
    const { s3 } = env.runtime;
    const lineage = await promoteRunModels(s3, state, now, supersededBy);
    const promotion = lineage?.promotion;
    const update = {
      hopperStep: 'report',
      state: report.outcome,
      error: report.error,
      summary,
      promotion,
    } as const;
    const status = statusOf(state, update, now);
    // Conditional on the file as the invocation found it: no second read.
    await writeStatus(s3, state.run.bucket, status, env.found);
    await putJson(s3, state.run.bucket, runRecordKey(state.run.drop, state.run.runId), status);
    // The drop's claim stays with a run that leaves a paid model, for the run that adopts it.
    await releaseTraining({ s3, run: state.run, now }, holdsPaidModel(state, report.error?.code));
    // After the status, so the event never announces an outcome the status file does not show.
    const end = { report, finishedAt: now, credits: summary?.credits ?? 0, promotion };
    await announceRunEnd(state, { ...end, records: lineage?.records ?? [] }, env);
    return report;
  },
  { writesStatus: false, decidesWhenSuperseded: true },
);

/**
 * The run's outcome as the state shows it.
 * @param supersededBy the newer run of the drop that took it over, or null
 */
export function reportOf(state: RunState, supersededBy: NewerRun | null = null): ReportSlot {
  if (state.failure !== undefined) {
    const error = failureError(state, state.failure);
    return error.code === 'superseded' ? { outcome: 'superseded', error } : failed(state, error);
  }
  if (state.stop !== undefined) return failed(state, stopError(state, state.stop.code));
  const copy = copiedModel(state.copy);
  if (copy !== undefined && supersededBy !== null) {
    const keptAt = modelLocation(state.run, copy)?.onnx ?? '(unknown)';
    const message = supersededMessage(state, supersededBy, { keptAt });
    return { outcome: 'superseded', error: { code: 'superseded', message } };
  }
  if (copy !== undefined) {
    const sweepFailed = sweepFailure(state);
    return sweepFailed === undefined ? { outcome: 'succeeded', error: null } : failed(state, sweepFailed);
  }
  const message = `run ${state.run.runId} reached its report without a model and without an error: a bug in Hopper's state machine; drop train.json again and report the run id`;
  return failed(state, { code: 'internal_error', message });
}

/** A failed outcome; while the run holds a paid model, its message says how to adopt it. */
function failed(state: RunState, error: RunFailure): ReportSlot {
  const paid = paidModelOf(state, error.code);
  if (paid === null) return { outcome: 'failed', error };
  const advice = { drop: state.run.drop, paidModel: paid, datasetId: state.dataset?.id ?? null };
  return { outcome: 'failed', error: { ...error, message: withRetryAdvice(error.message, advice) } };
}

function failureError(state: RunState, failure: CaughtFailure): RunFailure {
  const name = typeof failure.Error === 'string' && failure.Error !== '' ? failure.Error : 'unknown error';
  const text = causeMessage(failure.Cause);
  if (isTimeoutError(name)) {
    const message = `a step ran past its time limit (${name}) while ${whereTheRunWas(state)}; the service or S3 may have been slow: drop train.json again to start over`;
    return { code: 'step_timeout', message };
  }
  const coded = isHopperError(name) && text !== undefined ? parseCodedMessage(text) : null;
  if (coded !== null && isRunErrorCode(coded.code)) return { code: coded.code, message: coded.text };
  const message = `Hopper failed unexpectedly (${name}${text === undefined ? '' : `: ${text}`}) while ${whereTheRunWas(state)}; look up run ${state.run.runId} in the logs, then drop train.json again`;
  return { code: 'internal_error', message };
}

/** The error of a run a stop ended: its code, worded from the state. */
function stopError(state: RunState, code: StopCode): RunFailure {
  const { dataset, model, config } = state;
  switch (code) {
    case 'dataset_unreadable':
      return {
        code,
        message: `the service could not read the data${dataset === undefined ? '' : ` of dataset ${dataset.id}`}: ${dataset?.error ?? 'it gave no reason'}. Fix the file and drop the folder again, train.json last`,
      };
    case 'dataset_expired':
      return { code, message: datasetExpiredMessage(dataset ?? { id: undefined, expiresAt: undefined }) };
    case 'training_failed': {
      const tried = { attempts: model?.attempts ?? 0, maxAttempts: config?.maxAttempts, modelId: model?.id };
      return (
        sweepFailure(state) ?? { code, message: trainingFailedMessage({ ...tried, error: model?.error }) }
      );
    }
    case 'model_files_gone': {
      const goneAt = model?.filesDeletedAt ?? model?.filesExpireAt;
      const gone = { id: model?.id, drop: state.run.drop, goneAt, movedTo: model?.hfRepo };
      return { code, message: modelFilesGoneMessage(gone) };
    }
    case 'unsupported_next_action': {
      const [kind, slot] =
        model !== undefined ? (['model', model] as const) : (['dataset', dataset] as const);
      const where = `the ${kind} ${slot?.id ?? '(unknown)'} at step ${String(slot?.step ?? '?')}`;
      return { code, message: unsupportedNextActionMessage(slot?.nextAction ?? '(none)', where) };
    }
    default: {
      // Every StopCode has its case above: the compiler says so here when one is added.
      const unknown: never = code;
      const message = `the run stopped with the unknown code "${String(unknown)}": a bug in Hopper's state machine; drop train.json again and report run ${state.run.runId}`;
      return { code: 'internal_error', message };
    }
  }
}

/** training_failed of a sweep in which an encoder ran out of attempts; undefined when none did. */
function sweepFailure(state: RunState): RunFailure | undefined {
  const outcomes = encoderOutcomes(state) ?? [];
  const encodersThat = (outcome: string) => outcomes.filter((one) => one.outcome === outcome);
  const failed = encodersThat('failed');
  if (failed.length === 0) return undefined;
  const message = sweepFailedMessage({
    drop: state.run.drop,
    maxAttempts: state.config?.maxAttempts,
    failed: failed.map((one) => one.encoder),
    trained: encodersThat('copied').map((one) => one.encoder),
    error: failed.at(-1)?.error ?? null,
  });
  return { code: 'training_failed', message };
}

/** Where the run stood, for a failure that does not say: the latest record's next_action. */
function whereTheRunWas(state: RunState): string {
  if (state.model !== undefined)
    return `model ${state.model.id} was at next_action "${state.model.nextAction}"`;
  if (state.dataset !== undefined) {
    return `dataset ${state.dataset.id} was at next_action "${state.dataset.nextAction}"`;
  }
  return state.config === undefined ? 'the drop was being validated' : 'the dataset was being created';
}
