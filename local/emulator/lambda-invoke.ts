/**
 * A Task's handler called the way Lambda calls it: a context with the time left and a request
 * id, the function's timeout enforced, and a failure handed to the state machine the way
 * Step Functions sees a Lambda error (the error type as the name Retry and Catch match, and a
 * JSON cause `{ errorType, errorMessage }`, which the report step reads). An invocation abandoned
 * at its timeout sends no AWS request after it, as a stopped Lambda sends none.
 */
import { AsyncLocalStorage } from 'node:async_hooks';
import { randomUUID } from 'node:crypto';
import type { S3Client } from '@aws-sdk/client-s3';
import type { InvocationContext } from '../../lambdas/runtime/index.js';
import { LAMBDA_TIMEOUT_ERROR, lambdaCause } from '../../lambdas/core/errors/index.js';
import { withResolvers } from './with-resolvers.js';

export type LocalTaskHandler = (event: unknown, context: InvocationContext) => Promise<unknown>;

/**
 * An error as Step Functions receives it from a failed Lambda invocation: the interpreter
 * matches Retry and Catch on its name and passes its message on as the Cause.
 */
export class LambdaInvocationError extends Error {
  constructor(errorType: string, errorMessage: string) {
    super(lambdaCause(errorType, errorMessage));
    this.name = errorType;
  }
}

/** The invocation a piece of handler code runs for (it follows the handler's async calls). */
const currentInvocation = new AsyncLocalStorage<{ readonly abandoned: () => boolean }>();

/** A request an abandoned invocation tried to send: Lambda stopped it, so it never reaches AWS. */
export class AbandonedInvocationError extends Error {
  constructor(what: string) {
    super(`${what} refused: the invocation was stopped at its timeout`);
    this.name = 'AbandonedInvocationError';
  }
}

/**
 * Makes `client` refuse every request (each attempt, retries included) of an invocation asLambda
 * has abandoned: in Lambda its late writes would never land. Requests made outside an invocation
 * pass.
 */
export function refuseAbandonedRequests(client: S3Client): void {
  client.middlewareStack.add(
    (next, context) => (args) => {
      if (currentInvocation.getStore()?.abandoned() === true)
        return Promise.reject(new AbandonedInvocationError(`S3 ${String(context.commandName)}`));
      return next(args);
    },
    { step: 'finalizeRequest', name: 'refuseAbandonedRequests' },
  );
}

/**
 * The state machine's view of a Lambda function running `handler` with a timeout of
 * `timeoutSeconds`. As in Lambda, a handler still running at the timeout is abandoned (its
 * promise is no longer awaited, and a client under refuseAbandonedRequests sends nothing more for
 * it) and the invocation fails with Sandbox.Timedout.
 * @param fn what the function is, as Lambda's context says it: its name and memory
 */
export function asLambda(
  handler: LocalTaskHandler,
  timeoutSeconds: number,
  fn?: { readonly functionName: string; readonly memoryMb: number },
): (event: unknown) => Promise<unknown> {
  return async (event) => {
    const deadline = Date.now() + timeoutSeconds * 1000;
    const context: InvocationContext = {
      getRemainingTimeInMillis: () => Math.max(0, deadline - Date.now()),
      awsRequestId: randomUUID(),
      ...(fn === undefined ? {} : { functionName: fn.functionName, memoryLimitInMB: String(fn.memoryMb) }),
    };
    const timedOut = withResolvers<never>();
    let abandoned = false;
    const timer = setTimeout(() => {
      abandoned = true;
      const message = `Task timed out after ${timeoutSeconds.toFixed(2)} seconds`;
      timedOut.reject(new LambdaInvocationError(LAMBDA_TIMEOUT_ERROR, message));
    }, timeoutSeconds * 1000);
    // Through a promise even if the handler throws at once, so the timer is always cleared.
    const running = currentInvocation.run({ abandoned: () => abandoned }, () =>
      Promise.resolve().then(() => handler(event, context)),
    );
    // An abandoned handler may still fail later; that is no longer anyone's error.
    running.catch(() => undefined);
    try {
      return await Promise.race([running, timedOut.promise]);
    } catch (error) {
      if (error instanceof LambdaInvocationError) throw error;
      const { name, message } = error instanceof Error ? error : new Error(String(error));
      throw new LambdaInvocationError(name, message);
    } finally {
      clearTimeout(timer);
    }
  };
}

/**
 * The handler invocations still running, abandoned ones (past their timeout, or of a stopped
 * execution) included. Local mode waits for them at close, so that no late status write lands
 * in a store that is being removed.
 */
export class RunningInvocations {
  readonly #running = new Set<Promise<unknown>>();

  /** `handler`, with each of its invocations counted until it settles. */
  track(handler: LocalTaskHandler): LocalTaskHandler {
    return (event, context) => {
      const running = Promise.resolve().then(() => handler(event, context));
      this.#running.add(running);
      const forget = (): void => {
        this.#running.delete(running);
      };
      running.then(forget, forget);
      return running;
    };
  }

  /** Waits until every tracked invocation has settled, or `withinMs` has passed. */
  async settled(withinMs: number): Promise<void> {
    const givenUp = withResolvers<'given up'>();
    const timer = setTimeout(() => {
      givenUp.resolve('given up');
    }, withinMs);
    try {
      while (this.#running.size > 0) {
        const before = [...this.#running];
        const all = Promise.allSettled(before).then(() => 'settled' as const);
        if ((await Promise.race([all, givenUp.promise])) === 'given up') return;
      }
    } finally {
      clearTimeout(timer);
    }
  }
}
