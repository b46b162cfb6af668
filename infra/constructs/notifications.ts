/**
 * Per-run notifications: an SNS topic, apart from the alarm topic, that receives one paragraph
 * for a person about every run that ended. An EventBridge rule on the default bus takes the
 * pipeline's own `Hopper Run Succeeded`, `Hopper Run Failed` and `Hopper Run Superseded` events and
 * hands the topic the event's `detail.summary` as plain text, so a notification goes out exactly
 * when an event does (lambdas/records/events/events.ts writes the summary; docs/operations.md,
 * "Notifications"). What cannot be delivered after a day of retries lands in a dead-letter queue.
 */
import { Annotations } from 'aws-cdk-lib';
import { Rule, RuleTargetInput, type IRule, type RuleTargetInputProperties } from 'aws-cdk-lib/aws-events';
import { SnsTopic } from 'aws-cdk-lib/aws-events-targets';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import type { Queue } from 'aws-cdk-lib/aws-sqs';
import { Construct } from 'constructs';
import { EVENT_DELIVERY_RETRY, deadLetterQueue } from './dead-letter-queue.js';
import { encryptedTopic } from './encrypted-topic.js';
import { RUN_EVENT_TYPES } from '../../lambdas/records/events/index.js';
import { RUN_OUTCOMES } from '../../lambdas/core/state/index.js';
import { acknowledgeRule } from '../nag.js';

export interface HopperNotificationsProps {
  /** The `source` of the pipeline's run events (HopperPipeline.eventSource). */
  readonly eventSource: string;
  /** An e-mail address subscribed to the topic (it must confirm). @default - no subscription */
  readonly email?: string;
  /**
   * The topic the summaries go to, instead of a new one; it must let EventBridge publish (and use
   * its key, if it has one). @default - a new topic with its own KMS key
   */
  readonly topic?: ITopic;
}

/**
 * The event's summary as the whole message, as plain text. RuleTargetInput.fromText would wrap
 * it in JSON quotes, which e-mail shows.
 */
class SummaryText extends RuleTargetInput {
  // RuleTargetInput's own constructor is protected.
  public constructor() {
    super();
  }

  bind(_rule: IRule): RuleTargetInputProperties {
    return { inputPathsMap: { summary: '$.detail.summary' }, inputTemplate: '<summary>' };
  }
}

/** The AWS service that delivers the rule's matches to the topic. */
const EVENTBRIDGE = 'events.amazonaws.com';

export class HopperNotifications extends Construct {
  /** Receives a summary of every run that ended; subscribe e-mail, chat or a queue to it. */
  readonly topic: ITopic;
  /** Matches the pipeline's Succeeded, Failed and Superseded events on the default bus. */
  readonly rule: Rule;
  /** The notifications the rule could not deliver, after its retries. */
  readonly deadLetterQueue: Queue;

  constructor(scope: Construct, id: string, props: HopperNotificationsProps) {
    super(scope, id);
    this.rule = new Rule(this, 'RunEnded', {
      description: 'Hopper: every run that ended, as a summary to the run notification topic',
      eventPattern: {
        source: [props.eventSource],
        detailType: RUN_OUTCOMES.map((outcome) => RUN_EVENT_TYPES[outcome]),
      },
    });
    this.topic = props.topic ?? this.createTopic();
    // A notification that cannot be delivered is retried, then kept (and alarmed on: monitoring.ts);
    // SnsTopic lets only this rule send to the queue. It is given the topic by ARN, as an imported
    // one, to which it adds no grant of its own: its grant would let any rule of any account publish.
    this.deadLetterQueue = deadLetterQueue(this, 'DeadLetters');
    acknowledgeRule(
      this.deadLetterQueue,
      'AwsSolutions-SQS3',
      "It is a dead-letter queue: the run notification rule's target's (an EventBridge DeadLetterConfig, " +
        'which cdk-nag does not recognize as a dead-letter queue use).',
    );
    const byArn = props.topic ?? Topic.fromTopicArn(this, 'RunTopicByArn', this.topic.topicArn);
    // A topic imported by ARN names its region, and an environment-agnostic stack does not, so CDK
    // cannot tell whether the two differ and warns. EventBridge delivers only to a topic of the
    // rule's own region: the topic must be in the region the stack is deployed to (API.md, alarmTopic).
    if (props.topic !== undefined) {
      Annotations.of(this.rule).acknowledgeWarning(
        '@aws-cdk/aws-events:ruleUnresolvedEnvironment',
        "The alarm topic is given by ARN; it must be in the stack's region (API.md, alarmTopic).",
      );
    }
    this.rule.addTarget(
      new SnsTopic(byArn, {
        message: new SummaryText(),
        deadLetterQueue: this.deadLetterQueue,
        ...EVENT_DELIVERY_RETRY,
      }),
    );
    if (props.email !== undefined) this.topic.addSubscription(new EmailSubscription(props.email));
  }

  private createTopic(): Topic {
    // EventBridge may publish for this rule only (the topic's policy). The key's grant carries no
    // condition: "Adding the aws:SourceAccount, aws:SourceArn, and aws:SourceOrgID to a AWS KMS
    // policy is not supported for EventBridge-to-encrypted topics" (Amazon SNS Developer Guide,
    // "Managing Amazon SNS encryption keys and costs", docs.aws.amazon.com/sns/latest/dg/
    // sns-key-management.html). The key serves this topic only.
    return encryptedTopic(this, {
      id: 'RunTopic',
      displayName: 'Hopper runs',
      purpose: 'the run notification topic',
      publisher: EVENTBRIDGE,
      keyActions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      topicSid: 'RunEndedRulePublishes',
      publishConditions: { ArnEquals: { 'aws:SourceArn': this.rule.ruleArn } },
    });
  }
}
