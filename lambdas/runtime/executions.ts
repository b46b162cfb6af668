/**
 * Whether another run's execution still runs, asked of Step Functions (DescribeExecution on the
 * state machine's executions): a run holding the drop's training claim whose execution was
 * killed, timed out or stopped before its report frees the claim at once, not after
 * CLAIM_FRESH_MS (lambdas/ownership/training-claim.ts). Only the entry file of PollDataset, the
 * loop a run waiting for the claim polls in, connects it (STEP_FUNCTIONS; infra/tasks.ts gives
 * that Task `executions`), so only its bundle asks.
 */
import { DescribeExecutionCommand, SFNClient } from '@aws-sdk/client-sfn';
import { messageOf } from '../core/errors/errors.js';
import type { ExecutionLookup } from '../ownership/training-claim.js';
import { invocationLogger, type ExecutionsConnection } from './runtime.js';
import type { Logger } from '@aws-lambda-powertools/logger';

/**
 * DescribeExecution through `sfn`. An execution Step Functions does not know has ended (local
 * mode's of an earlier start; in AWS a claim names only executions of this state machine, kept
 * 90 days after they close). Any other failure is `unknown`, logged: the claim then waits as
 * before, never taken from a run that may still be running.
 */
export function describeExecutions(sfn: SFNClient, logger: Logger): ExecutionLookup {
  return async (executionArn) => {
    try {
      const { status } = await sfn.send(new DescribeExecutionCommand({ executionArn }));
      return status === 'RUNNING' || status === 'PENDING_REDRIVE' ? 'running' : 'ended';
    } catch (error) {
      if (error instanceof Error && error.name === 'ExecutionDoesNotExist') return 'ended';
      invocationLogger(logger).warn('could not tell whether an execution still runs', {
        execution_arn: executionArn,
        reason: messageOf(error),
      });
      return 'unknown';
    }
  };
}

/** Step Functions, as PollDataset's entry file connects it (LambdaConnections). */
export const STEP_FUNCTIONS: ExecutionsConnection = {
  fromEnvironment: (tracer, logger) =>
    describeExecutions(tracer.captureAWSv3Client(new SFNClient({})), logger),
  fromClient: describeExecutions,
};
