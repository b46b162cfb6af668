/**
 * A queue for what could not be delivered (events of a rule, failed asynchronous invocations):
 * encrypted, TLS only, and kept long enough to read and replay.
 */
import { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** How often and how long EventBridge retries delivering an event to a rule's target. */
export const EVENT_DELIVERY_RETRY = { retryAttempts: 8, maxEventAge: Duration.hours(24) };

/** Messages are kept 14 days, SQS's longest. */
export function deadLetterQueue(scope: Construct, id: string): Queue {
  return new Queue(scope, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: Duration.days(14),
  });
}
