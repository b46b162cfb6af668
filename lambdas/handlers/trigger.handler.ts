import { Logger } from '@aws-lambda-powertools/logger';
import type { Context } from 'aws-lambda';
import { SERVICE_NAME } from '../runtime/index.js';
import {
  createTriggerHandler,
  sfnStarterFromEnvironment,
  type ExecutionStarter,
  type TriggerOptions,
} from '../trigger/start-execution.js';

const logger = new Logger({ serviceName: SERVICE_NAME });
let trigger: ((event: unknown) => Promise<unknown>) | undefined;

/** In Lambda: StartExecution through the SDK, with its own X-Ray subsegment. Built on first use. */
async function cloudTrigger(): Promise<(event: unknown) => Promise<unknown>> {
  const [{ Tracer }, { SFNClient }, { S3Client }] = await Promise.all([
    import('@aws-lambda-powertools/tracer'),
    import('@aws-sdk/client-sfn'),
    import('@aws-sdk/client-s3'),
  ]);
  const tracer = new Tracer({ serviceName: SERVICE_NAME });
  const sfn = tracer.captureAWSv3Client(new SFNClient({}));
  // Writes each run's first status and the records of `hopper doctor`'s probes (status/).
  const s3 = tracer.captureAWSv3Client(new S3Client({}));
  return createTriggerHandler(sfnStarterFromEnvironment(sfn), { logger, s3 });
}

/**
 * EventBridge "Object Created" for inbox/<drop>/train.json -> StartExecution (not a state machine
 * Task); for a `hopper doctor` probe, a record that it came. A container runs one invocation at a time, so its logger takes each invocation's
 * context (request id, cold start) in turn.
 */
export async function handler(event: unknown, context?: Context): Promise<unknown> {
  if (context !== undefined) logger.addContext(context);
  trigger ??= await cloudTrigger();
  return trigger(event);
}

/** The same trigger starting executions with `starter` (local mode's state machine). */
export function withStarter(starter: ExecutionStarter, options: TriggerOptions) {
  return createTriggerHandler(starter, options);
}
