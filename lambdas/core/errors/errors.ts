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
import type { RunErrorCode } from './codes.js';
import { contendedWriteMessage } from './messages.js';

export { FINAL_ERROR, RETRYABLE_ERROR };

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
