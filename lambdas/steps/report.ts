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
 * 3. $.copy: succeeded.
 * 4. Otherwise internal_error: the run got here without a model and without an error.
 * A run a newer train.json of the drop took over (lambdas/run/supersede.ts) is `superseded`
 * instead when it stopped for that (rule 1 with the code `superseded`), or when its training,
 * which held a credit, went on to the copy (rule 3): the message says which and what it cost.
 *
 * The final status goes to status/<drop>.json (or, for a superseded run, to its entry there) and
 * to status/.runs/<drop>/<run id>.json, the drop's runs history that `hopper runs` reads. A run
 * that ends lets the drop's training claim go unless its training is still under way.
 *
 * Then it puts the run's Succeeded or Failed event (and Started, if validate_drop did not),
 * once even when this step is retried (lambdas/run/event-bus.ts).
 */
import {
  isErrorCode,
  RETRYABLE_ERROR,
  FINAL_ERROR,
  trainingFailedMessage,
  type ErrorCode,
} from '../run/errors.js';
import type { Step } from '../run/handler.js';
import { announceRunEnd } from '../run/publish-events.js';
import type { CaughtFailure, ReportSlot, RunState } from '../run/state.js';
import { modelLocation, statusOf, writeStatus } from '../run/status.js';
import { trainingInFlight, type NewerRun } from '../run/supersede.js';
import { releaseTraining } from '../run/training-claim.js';
import { runRecordKey } from '../storage/keys.js';
import { putJson } from '../storage/objects.js';

export const reportStep: Step<'report'> = {
  stage: 'report',
  slot: 'report',
  writesStatus: false,
  decidesWhenSuperseded: true,
  async run(state, env) {
    const report = reportOf(state, env.supersededBy ?? null);
    const now = env.runtime.now();
    const summary = env.summary?.(state);
    const status = statusOf(
      state,
      { stage: 'report', state: report.outcome, error: report.error, summary },
      now,
    );
    const { s3 } = env.runtime;
    await writeStatus(s3, state.run.bucket, status);
    await putJson(s3, state.run.bucket, runRecordKey(state.run.drop, state.run.runId), status);
    await releaseTraining({ s3, run: state.run, now }, trainingInFlight(state));
    // After the status, so the event never announces an outcome the status file does not show.
    await announceRunEnd(state, report, now, env, summary?.credits);
    return report;
  },
};

const TIMEOUT_ERRORS: readonly string[] = ['States.Timeout', 'Sandbox.Timedout'];
const HOPPER_ERRORS: readonly string[] = [RETRYABLE_ERROR, FINAL_ERROR];
/** Longest message taken from a Cause: enough for any Hopper message, not for a dumped object. */
const MAX_CAUSE_CHARS = 1000;

/**
 * The run's outcome as the state shows it.
 * @param supersededBy the newer run of the drop that took it over, or null
 */
export function reportOf(state: RunState, supersededBy: NewerRun | null = null): ReportSlot {
  if (state.failure !== undefined) {
    const error = failureError(state, state.failure);
    return error.code === 'superseded' ? { outcome: 'superseded', error } : failed(error);
  }
  if (state.stop !== undefined) return failed(stopError(state, state.stop.code));
  if (state.copy !== undefined && supersededBy !== null) {
    const location = modelLocation(state.run, state.copy);
    return {
      outcome: 'superseded',
      error: {
        code: 'superseded',
        message: `a newer train.json of drop "${state.run.drop}" (run ${supersededBy.runId}, uploaded ${supersededBy.startedAt}) took over while this run's training (model ${state.model?.id ?? '?'}) held a credit, so this run finished it rather than waste it: its model is kept under its own model id at ${location?.onnx ?? '(unknown)'}, and it cost 1 credit. status/${state.run.drop}.json follows the newer run`,
      },
    };
  }
  if (state.copy !== undefined) return { outcome: 'succeeded', error: null };
  return failed({
    code: 'internal_error',
    message: `run ${state.run.runId} reached its report without a model and without an error: a bug in Hopper's state machine; drop train.json again and report the run id`,
  });
}

interface RunFailure {
  readonly code: ErrorCode;
  readonly message: string;
}

function failed(error: RunFailure): ReportSlot {
  return { outcome: 'failed', error };
}

function failureError(state: RunState, failure: CaughtFailure): RunFailure {
  const name = typeof failure.Error === 'string' && failure.Error !== '' ? failure.Error : 'unknown error';
  const text = causeText(failure.Cause);
  if (TIMEOUT_ERRORS.includes(name)) {
    return {
      code: 'step_timeout',
      message: `a step ran past its time limit (${name}) while ${whereTheRunWas(state)}; the service or S3 may have been slow: drop train.json again to start over`,
    };
  }
  if (HOPPER_ERRORS.includes(name) && text !== undefined) {
    const match = /^([a-z][a-z0-9_]*): (.+)$/s.exec(text);
    const code = match?.[1];
    const detail = match?.[2];
    if (code !== undefined && detail !== undefined && isErrorCode(code)) return { code, message: detail };
  }
  return {
    code: 'internal_error',
    message: `Hopper failed unexpectedly (${name}${text === undefined ? '' : `: ${text}`}) while ${whereTheRunWas(state)}; look up run ${state.run.runId} in the logs, then drop train.json again`,
  };
}

/**
 * The message in a Cause: Lambda's JSON ({"errorMessage", "errorType", "stackTrace", ...}) or a
 * plain string (local mode, other integrations). Stack frames are cut off: the status file is
 * for the person who dropped the folder, the logs keep the rest.
 */
export function causeText(cause: unknown): string | undefined {
  if (typeof cause !== 'string' || cause.trim() === '') return undefined;
  let text = cause;
  try {
    const parsed: unknown = JSON.parse(cause);
    if (typeof parsed === 'object' && parsed !== null && 'errorMessage' in parsed) {
      const message = parsed.errorMessage;
      text = typeof message === 'string' ? message : '';
    } else if (typeof parsed === 'string') {
      text = parsed;
    }
  } catch {
    // Not JSON: the Cause is the message itself.
  }
  const lines: string[] = [];
  for (const line of text.split(/\r?\n/)) {
    if (/^\s*at\s/.test(line)) break;
    if (line.trim() !== '') lines.push(line.trim());
  }
  const message = lines.join(' ');
  if (message === '') return undefined;
  return message.length > MAX_CAUSE_CHARS ? `${message.slice(0, MAX_CAUSE_CHARS)}...` : message;
}

function stopError(state: RunState, code: string): RunFailure {
  const { dataset, model, config } = state;
  switch (code) {
    case 'dataset_unreadable':
      return {
        code,
        message: `the service could not read the data${dataset === undefined ? '' : ` of dataset ${dataset.id}`}: ${dataset?.error ?? 'it gave no reason'}. Fix the file and drop the folder again, train.json last`,
      };
    case 'dataset_expired':
      return {
        code,
        message: `dataset ${dataset?.id ?? '(unknown)'} expired at the service at ${dataset?.expiresAt ?? 'an unknown time'}, at step ${String(dataset?.step ?? '?')}, before a model was trained; drop the folder again, train.json last, to start over`,
      };
    case 'training_failed':
      return {
        code,
        message: trainingFailedMessage({
          attempts: model?.attempts ?? 0,
          maxAttempts: config?.maxAttempts,
          modelId: model?.id,
          error: model?.error,
        }),
      };
    case 'model_files_gone':
      return {
        code,
        message: `the files of model ${model?.id ?? '(unknown)'} are gone at the service (expired, refunded or moved) before Hopper could copy them; drop train.json again to train a new model`,
      };
    case 'unsupported_next_action': {
      const record =
        model !== undefined ? { kind: 'model', slot: model } : { kind: 'dataset', slot: dataset };
      const value = record.slot?.nextAction ?? '(none)';
      return {
        code,
        message: `the service asked for next_action "${value}" on the ${record.kind} ${record.slot?.id ?? '(unknown)'} at step ${String(record.slot?.step ?? '?')}, which Hopper does not handle there; check the ${record.kind} at the service, or upgrade Hopper`,
      };
    }
    default:
      return {
        code: 'internal_error',
        message: `the run stopped with the unknown code "${code}": a bug in Hopper's state machine; drop train.json again and report run ${state.run.runId}`,
      };
  }
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
