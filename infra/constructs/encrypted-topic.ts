/**
 * An SNS topic one AWS service publishes to: encrypted with a customer managed key (services
 * cannot use the AWS managed SNS key), TLS only, and with explicit grants for that service on
 * the key and the topic (the policy Topic writes for enforceSSL replaces SNS's default one). The
 * alarm topic (monitoring.ts) and the run notification topic (notifications.ts) are built here.
 */
import { Duration, RemovalPolicy } from 'aws-cdk-lib';
import { PolicyStatement, ServicePrincipal } from 'aws-cdk-lib/aws-iam';
import { Key } from 'aws-cdk-lib/aws-kms';
import { Topic } from 'aws-cdk-lib/aws-sns';
import type { Construct } from 'constructs';

type Conditions = Record<string, Record<string, string>>;

export interface EncryptedTopicProps {
  /** The topic's construct id (its key is `TopicKey` beside it). */
  readonly id: string;
  readonly displayName: string;
  /** What the key protects, for its description. */
  readonly purpose: string;
  /** The service that publishes, e.g. `cloudwatch.amazonaws.com`. */
  readonly publisher: string;
  /** The KMS actions the publisher needs on the key. */
  readonly keyActions: readonly string[];
  /** The statement id of the topic's grant; the key's is `<topicSid>ToTopic`. */
  readonly topicSid: string;
  /**
   * Whom the key's grant admits (the key policy cannot always name the exact source).
   * @default - no condition: the publisher may use the key, which serves this one topic
   */
  readonly keyConditions?: Conditions;
  /** Whom the topic's grant admits. */
  readonly publishConditions: Conditions;
}

export function encryptedTopic(scope: Construct, props: EncryptedTopicProps): Topic {
  const key = new Key(scope, 'TopicKey', {
    description: `Hopper: encrypts ${props.purpose}`,
    enableKeyRotation: true,
    // It protects the topic's messages only, and the topic goes with the stack: so does the key
    // (KMS deletes it after the pending window), rather than costing a month each forever.
    removalPolicy: RemovalPolicy.DESTROY,
    pendingWindow: Duration.days(30),
  });
  key.addToResourcePolicy(
    new PolicyStatement({
      sid: `${props.topicSid}ToTopic`,
      principals: [new ServicePrincipal(props.publisher)],
      actions: [...props.keyActions],
      resources: ['*'], // in a key policy, "*" is this key
      conditions: props.keyConditions,
    }),
  );
  const topic = new Topic(scope, props.id, {
    displayName: props.displayName,
    masterKey: key,
    enforceSSL: true,
  });
  topic.addToResourcePolicy(
    new PolicyStatement({
      sid: props.topicSid,
      principals: [new ServicePrincipal(props.publisher)],
      actions: ['sns:Publish'],
      resources: [topic.topicArn],
      conditions: props.publishConditions,
    }),
  );
  return topic;
}
