/**
 * How a step fails. A step throws a RunError with a stable `code` (the status file's
 * `error.code`, listed in docs/errors.md) and a message a person can act on.
 *
 * The error's `name` is what Step Functions matches in Retry and Catch (a Lambda's errorType):
 * - RETRYABLE_ERROR for a transient failure: the definition retries the Task with backoff and
 *   full jitter, and once retries run out the report step shows the code and message;
 * - FINAL_ERROR for everything else: caught at once and reported.
 * The message is `<code>: <text>` (lambda-error.ts), so the code survives the trip through Step
 * Functions, whose Cause carries only the message.
 *
 * These are Hopper's run error codes, not the training service's (ServiceErrorCode in
 * lambdas/service-client/errors.ts), which error-mapping.ts turns into these.
 */
import { codedMessage, FINAL_ERROR, RETRYABLE_ERROR } from './lambda-error.js';
import { contendedWriteMessage } from './messages.js';

export { FINAL_ERROR, RETRYABLE_ERROR };

export const RUN_ERROR_CODES = [
  // The drop (validate step)
  'invalid_event',
  'invalid_train_json',
  'missing_file',
  'nested_files',
  'invalid_file_name',
  'too_many_files',
  'empty_file',
  'no_data_files',
  'invalid_labels_file',
  'drop_changed',
  'files_still_arriving',
  'not_resumable',
  // The service's verdicts
  'dataset_unreadable',
  'dataset_expired',
  'dataset_gone',
  'invalid_decision',
  'labels_required',
  'label_missing',
  'label_ambiguous',
  'invalid_label',
  'unknown_encoder',
  'no_credits',
  'training_failed',
  'model_files_gone',
  'model_gone',
  'model_size_mismatch',
  'unsupported_next_action',
  // The service as a whole
  'unauthorized',
  'service_unavailable',
  'service_busy',
  'service_error',
  'unexpected_response',
  'wait_limit',
  'history_limit',
  // Hopper itself
  'step_timeout',
  'storage_error',
  'events_unavailable',
  'internal_error',
  // The deploy's credit budget is used up (lambdas/run/lock/credit-ledger.ts)
  'credit_budget',
  // A newer train.json of the same drop took over (not a failure: the run gave way)
  'superseded',
  'training_in_progress',
  // Local mode
  'interrupted',
  // A local drop folder, refused before any upload (hopper run)
  'linked_files',
  // A name that gives a key over S3's limit: refused before anything is sent (validate step)
  'name_too_long',
] as const;

export type RunErrorCode = (typeof RUN_ERROR_CODES)[number];

export function isRunErrorCode(value: string): value is RunErrorCode {
  return (RUN_ERROR_CODES as readonly string[]).includes(value);
}

export class RunError extends Error {
  readonly code: RunErrorCode;
  readonly retryable: boolean;
  /** The message without the `<code>: ` prefix. */
  readonly detail: string;

  constructor(code: RunErrorCode, detail: string, options: { retryable?: boolean; cause?: unknown } = {}) {
    super(codedMessage(code, detail), options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.detail = detail;
    this.retryable = options.retryable ?? false;
    this.name = this.retryable ? RETRYABLE_ERROR : FINAL_ERROR;
  }
}

/** Shorthand for a transient failure the state machine should retry. */
export function retryable(code: RunErrorCode, detail: string, cause?: unknown): RunError {
  return new RunError(code, detail, { retryable: true, cause });
}

/**
 * The error of a conditional write (updateJsonConditionally) that lost to other writers of `what`
 * every time it tried: transient, the step is retried.
 */
export function contendedWrite(what: string, why = ''): (attempts: number, cause: unknown) => RunError {
  return (attempts, cause) => retryable('storage_error', contendedWriteMessage(what, attempts, why), cause);
}

/** An error's message, or the thrown value as text when it is not an Error. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}
