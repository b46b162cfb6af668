/**
 * How often, and for how long, one call to the training service may be tried, across the two
 * layers that retry it: the service client within an invocation (LAMBDA_CLIENT_OPTIONS) and the
 * state machine across invocations (the Retry of every Task: TRANSIENT_RETRY, LAMBDA_DEATH_RETRY).
 * The numbers live here alone: the Lambda runtime and the definition (infra/state-machine.ts)
 * read them, retryBound derives what they allow together, docs/pipeline.md states it, and
 * test/pipeline/service-outage.test.ts checks the bound against the synthesized definition.
 *
 * A third limit caps both: each invocation's deadline (DEADLINE_MARGIN_MS before Lambda would
 * cut it off, lambdas/run/invocation/handler.ts), which every service call gets as its AbortSignal, so no
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

/** What the client and state machine settings allow one service call against a failing service. */
export interface RetryBound {
  /** Invocations of the Task: the first, and the state machine's retries of Hopper.Retryable. */
  readonly invocations: number;
  /** Requests of the call within one invocation: the first attempt and the client's retries. */
  readonly requestsPerInvocation: number;
  /** Requests of the call in all: the most a failing service sees of it. */
  readonly requests: number;
  /** The longest one invocation spends on the call, seconds. */
  readonly invocationSeconds: number;
  /** From the call's first request until the run gives up on it, seconds (pauses at their longest). */
  readonly seconds: number;
}

/** The longest pauses of `retrier` before each of its retries, seconds. */
export function retryPausesSeconds(retrier: RetrierSettings): number[] {
  return Array.from({ length: retrier.maxAttempts }, (_, index) =>
    Math.min(retrier.intervalSeconds * retrier.backoffRate ** index, retrier.maxDelaySeconds ?? Infinity),
  );
}

/**
 * The bound of one logical service call: a failing service makes the client give up within
 * `callBudgetMs + timeoutMs` after at most `maxRetries + 1` requests, the step throws
 * Hopper.Retryable, and the state machine invokes the Task again `transient.maxAttempts` times.
 */
export function retryBound(
  client: Pick<typeof LAMBDA_CLIENT_OPTIONS, 'maxRetries' | 'callBudgetMs' | 'timeoutMs'>,
  transient: RetrierSettings,
): RetryBound {
  const invocations = 1 + transient.maxAttempts;
  const requestsPerInvocation = client.maxRetries + 1;
  const invocationSeconds = (client.callBudgetMs + client.timeoutMs) / 1000;
  const pauses = retryPausesSeconds(transient).reduce((sum, pause) => sum + pause, 0);
  return {
    invocations,
    requestsPerInvocation,
    requests: invocations * requestsPerInvocation,
    invocationSeconds,
    seconds: invocations * invocationSeconds + pauses,
  };
}

/** The bound of Hopper's own settings (its figures are in docs/pipeline.md, checked by a test). */
export const RETRY_BOUND: RetryBound = retryBound(LAMBDA_CLIENT_OPTIONS, TRANSIENT_RETRY);
