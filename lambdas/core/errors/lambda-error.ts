/**
 * A failed step as Step Functions sees it, in one place: the error names it matches in Retry and
 * Catch (Hopper's own, and the timeouts), the Cause of a Lambda error (JSON with `errorType` and
 * `errorMessage`), and the `<code>: <text>` message every Hopper error carries so that its code
 * survives the trip (a Cause holds only the message). Plain data and functions, no imports: the
 * definition (infra/), the handlers, local mode and the console all read it.
 */

/** A transient failure: the definition retries the Task with backoff. */
export const RETRYABLE_ERROR = 'Hopper.Retryable';
/** Every other failure of a step: caught at once and reported. */
export const FINAL_ERROR = 'Hopper.Failed';
/** The names a Hopper error has (a Lambda's errorType). */
export const HOPPER_ERRORS = [RETRYABLE_ERROR, FINAL_ERROR] as const;

/** Lambda's errorType when a function runs past its timeout. */
export const LAMBDA_TIMEOUT_ERROR = 'Sandbox.Timedout';
/** Step Functions' error when a Task runs past its TimeoutSeconds. */
export const TASK_TIMEOUT_ERROR = 'States.Timeout';
/** A Task (or its Lambda) that ran out of time: reported as step_timeout. */
export const TIMEOUT_ERRORS = [TASK_TIMEOUT_ERROR, LAMBDA_TIMEOUT_ERROR] as const;
/** Lambda's errorType when a function's runtime process exits (a crash, an OOM kill). */
export const LAMBDA_CRASH_ERROR = 'Runtime.ExitError';
/** Lambda's errorType for a failed invocation that gave none of its own. */
export const LAMBDA_UNKNOWN_ERROR = 'Lambda.Unknown';
/**
 * A Task that ran out of time, or whose Lambda died: the definition tries it once more (every
 * step is safe to run again after its side effect; test/local/handler-kills.test.ts).
 */
export const LAMBDA_DEATH_ERRORS = [...TIMEOUT_ERRORS, LAMBDA_CRASH_ERROR, LAMBDA_UNKNOWN_ERROR] as const;

export function isTimeoutError(name: string): boolean {
  return (TIMEOUT_ERRORS as readonly string[]).includes(name);
}

export function isHopperError(name: string): boolean {
  return (HOPPER_ERRORS as readonly string[]).includes(name);
}

/** `<code>: <text>`: the message of every Hopper error. */
export function codedMessage(code: string, text: string): string {
  return `${code}: ${text}`;
}

/** The code and text of a `<code>: <text>` message, or null when it is not one. */
export function parseCodedMessage(message: string): { readonly code: string; readonly text: string } | null {
  const [, code, text] = /^([a-z][a-z0-9_]*): (.+)$/s.exec(message) ?? [];
  return code === undefined || text === undefined ? null : { code, text };
}

/** The Cause Step Functions receives from a Lambda invocation that failed. */
export function lambdaCause(errorType: string, errorMessage: string): string {
  return JSON.stringify({ errorType, errorMessage });
}

/**
 * What a Cause says: a Lambda error's `errorMessage` (`fromLambda`), or the Cause itself when it
 * is anything else (Step Functions' own words, a Fail state's cause, local mode's plain text).
 * Undefined for no Cause, or an empty one.
 */
export function parseCause(
  cause: unknown,
): { readonly message: string; readonly fromLambda: boolean } | undefined {
  if (typeof cause !== 'string' || cause.trim() === '') return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(cause);
  } catch {
    // Not JSON: the Cause is the message itself.
  }
  const message = (parsed as { errorMessage?: unknown } | null | undefined)?.errorMessage;
  return typeof message === 'string' ? { message, fromLambda: true } : { message: cause, fromLambda: false };
}

/** Longest message taken from a Cause: enough for any Hopper message, not for a dumped object. */
const MAX_CAUSE_CHARS = 1000;

/**
 * The message of a Cause for the person who dropped the folder: stack frames cut off, lines
 * joined, at most MAX_CAUSE_CHARS (the logs keep the rest). Undefined when nothing is left.
 */
export function causeMessage(cause: unknown): string | undefined {
  const parsed = parseCause(cause);
  if (parsed === undefined) return undefined;
  const lines: string[] = [];
  for (const line of parsed.message.split(/\r?\n/)) {
    if (/^\s*at\s/.test(line)) break;
    if (line.trim() !== '') lines.push(line.trim());
  }
  const message = lines.join(' ');
  if (message === '') return undefined;
  return message.length > MAX_CAUSE_CHARS ? `${message.slice(0, MAX_CAUSE_CHARS)}...` : message;
}

/**
 * A failed state's error as a person reads it (progress lines, the console): a Lambda error's
 * message alone (it carries Hopper's `<code>: <text>`; the name adds nothing), else the error
 * name with the Cause.
 */
export function describeFailure(error: string, cause: unknown): string {
  const parsed = parseCause(cause);
  if (parsed === undefined) return error;
  if (parsed.fromLambda) return parsed.message === '' ? error : parsed.message;
  return `${error}: ${parsed.message}`;
}
