import { Logger } from '@aws-lambda-powertools/logger';
import { Tracer } from '@aws-lambda-powertools/tracer';
import { SFNClient } from '@aws-sdk/client-sfn';
import type { Context } from 'aws-lambda';
import { SERVICE_NAME } from '../run/invocation/index.js';
import { createTriggerHandler, sfnStarterFromEnvironment } from '../trigger/start-execution.js';

const logger = new Logger({ serviceName: SERVICE_NAME });
// StartExecution gets its own X-Ray subsegment (the tracer is off outside Lambda).
const tracer = new Tracer({ serviceName: SERVICE_NAME });
const trigger = createTriggerHandler(
  sfnStarterFromEnvironment(process.env, tracer.captureAWSv3Client(new SFNClient({}))),
  { logger },
);

/**
 * EventBridge "Object Created" for inbox/<drop>/train.json -> StartExecution (not a state machine
 * Task). A container runs one invocation at a time, so its logger takes each invocation's
 * context (request id, cold start) in turn.
 */
export async function handler(event: unknown, context?: Context): Promise<unknown> {
  if (context !== undefined) logger.addContext(context);
  return trigger(event);
}
