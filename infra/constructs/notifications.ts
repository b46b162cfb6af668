/**
 * Per-run notifications: an SNS topic, apart from the alarm topic, that receives one paragraph
 * for a person about every run that ended. An EventBridge rule on the default bus takes the
 * pipeline's own `Hopper Run Succeeded` and `Hopper Run Failed` events and hands the topic the
 * event's `detail.summary` as plain text, so a notification goes out exactly when an event does
 * (lambdas/run/events.ts writes the summary; docs/operations.md, "Notifications").
 */
import { Stack } from 'aws-cdk-lib';
import { Rule, RuleTargetInput, type IRule, type RuleTargetInputProperties } from 'aws-cdk-lib/aws-events';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { EmailSubscription } from 'aws-cdk-lib/aws-sns-subscriptions';
import { Construct } from 'constructs';
import { encryptedTopic } from './encrypted-topic.js';
import { RUN_EVENT_TYPES } from '../../lambdas/run/events.js';

export interface HopperNotificationsProps {
  /** The `source` of the pipeline's run events (HopperPipeline.eventSource). */
  readonly eventSource: string;
  /** An e-mail address subscribed to the topic (it must confirm). @default - no subscription */
  readonly email?: string;
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
  readonly topic: Topic;
  /** Matches the pipeline's Succeeded and Failed events on the default bus. */
  readonly rule: Rule;

  constructor(scope: Construct, id: string, props: HopperNotificationsProps) {
    super(scope, id);
    this.rule = new Rule(this, 'RunEnded', {
      description: 'Hopper: every run that ended, as a summary to the run notification topic',
      eventPattern: {
        source: [props.eventSource],
        detailType: [RUN_EVENT_TYPES.succeeded, RUN_EVENT_TYPES.failed, RUN_EVENT_TYPES.superseded],
      },
    });
    // EventBridge may publish for this rule only (the topic's policy) with the key for rules of
    // this account and region (the key's policy, which cannot name the rule: the rule names the
    // topic, which names the key). A rule target's own grants would let any rule of any account in.
    const stack = Stack.of(this);
    const fromThisRule = { ArnEquals: { 'aws:SourceArn': this.rule.ruleArn } };
    const fromOwnRules = {
      StringEquals: { 'aws:SourceAccount': stack.account },
      ArnLike: { 'aws:SourceArn': `arn:${stack.partition}:events:${stack.region}:${stack.account}:rule/*` },
    };
    this.topic = encryptedTopic(this, {
      id: 'RunTopic',
      displayName: 'Hopper runs',
      purpose: 'the run notification topic',
      publisher: EVENTBRIDGE,
      keyActions: ['kms:Decrypt', 'kms:GenerateDataKey'],
      keySid: 'RunEndedRulePublishesToTopic',
      topicSid: 'RunEndedRulePublishes',
      keyConditions: fromOwnRules,
      publishConditions: fromThisRule,
    });
    const topic = this.topic;
    this.rule.addTarget({
      bind: () => ({ arn: topic.topicArn, input: new SummaryText(), targetResource: topic }),
    });
    if (props.email !== undefined) this.topic.addSubscription(new EmailSubscription(props.email));
  }
}
