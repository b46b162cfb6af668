/**
 * How often, and for how long, one call to the training service may be tried, across the two
 * layers that retry it: the service client within an invocation (LAMBDA_CLIENT_OPTIONS) and the
 * state machine across invocations (the Retry of every Task: TRANSIENT_RETRY, LAMBDA_DEATH_RETRY).
 * The numbers live here alone: the Lambda runtime and the definition (infra/state-machine.ts)
 * read them, docs/pipeline.md states what they allow together, and
 * test/pipeline/service-outage.test.ts derives that bound and checks it against the synthesized
 * definition.
 *
 * A third limit caps both: each invocation's deadline (DEADLINE_MARGIN_MS before Lambda would
 * cut it off, lambdas/runtime/handler.ts), which every service call gets as its AbortSignal, so no
 * call, with its retries, outlives the invocation.
 */

/**
 * The client in Lambda: each attempt gets 20 s, and no retry starts later than 40 s after the
 * call began (at most 3 retries, waits of at most 10 s, or a Retry-After of at most 30 s), so a
 * call gives up within a minute, well inside the Task Lambdas' timeouts (infra/tasks.ts).
 */
export const LAMBDA_CLIENT_OPTIONS = {
  timeoutMs: 20_000,
  maxRetries: 3,
  backoffCapMs: 10_000,
  maxRetryAfterMs: 30_000,
  callBudgetMs: 40_000,
} as const;

/** One Retry of the state machine (a Task's retrier), in the definition's own units. */
export interface RetrierSettings {
  readonly intervalSeconds: number;
  readonly backoffRate: number;
  /** Retries after the first invocation. */
  readonly maxAttempts: number;
  readonly maxDelaySeconds?: number | undefined;
}

/**
 * The Retry of transient errors (Hopper.Retryable, which a step throws once its client has
 * given up, and Lambda's service errors): few, since each invocation already retried.
 */
export const TRANSIENT_RETRY: RetrierSettings = {
  intervalSeconds: 5,
  backoffRate: 2,
  maxAttempts: 3,
  maxDelaySeconds: 30,
};

/**
 * The Retry of a Task that timed out or whose Lambda died (infra/state-machine.ts,
 * LAMBDA_DEATH_ERRORS): once. A service call never causes a timeout (the deadline ends it
 * first, as Hopper.Retryable); a hung S3 request, a step's own work or a crash can.
 */
export const LAMBDA_DEATH_RETRY: RetrierSettings = { intervalSeconds: 2, backoffRate: 2, maxAttempts: 1 };

/**
 * Time an invocation keeps after its service calls' deadline: to write the status file, record
 * the failure and return it, before Lambda would cut the invocation off.
 */
export const DEADLINE_MARGIN_MS = 10_000;
