/**
 * A queue for what could not be delivered (events of a rule, failed asynchronous invocations):
 * encrypted, TLS only, and kept long enough to read and replay.
 */
import { Duration } from 'aws-cdk-lib';
import { Queue, QueueEncryption } from 'aws-cdk-lib/aws-sqs';
import type { Construct } from 'constructs';

/** How often and how long EventBridge retries delivering an event to a rule's target. */
export const EVENT_DELIVERY_RETRY = { retryAttempts: 8, maxEventAge: Duration.hours(24) } as const;

/** @param retention how long a message is kept; @default Duration.days(14), SQS's longest */
export function deadLetterQueue(scope: Construct, id: string, retention?: Duration): Queue {
  return new Queue(scope, id, {
    encryption: QueueEncryption.SQS_MANAGED,
    enforceSSL: true,
    retentionPeriod: retention ?? Duration.days(14),
  });
}
