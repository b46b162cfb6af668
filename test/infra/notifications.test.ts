/**
 * Template assertions for run events and run notifications: who may put events on the default
 * bus and with which source, the settings that change the source and subscribe an address, and
 * the rule that turns each Succeeded or Failed event into the topic's plain-text summary.
 */
import { describe, expect, it } from 'vitest';
import { STORAGE_DEFAULTS } from '../../infra/constructs/storage.js';
import { EXECUTION_TIMEOUT_SECONDS } from '../../infra/run-limits.js';
import { RUN_EVENT_TYPES } from '../../lambdas/records/events/index.js';
import {
  actionsOf,
  functionNamed,
  resourcesOf,
  resourcesOfType,
  statementsFor,
  synthesize,
  type CfnResource,
  type Statement,
} from './helpers.js';

const defaults = synthesize();
const configured = synthesize({
  eventSource: 'com.example.hopper',
  runNotificationEmail: 'team@example.com',
});

const DEFAULT_BUS = {
  'Fn::Join': [
    '',
    [
      'arn:',
      { Ref: 'AWS::Partition' },
      ':events:',
      { Ref: 'AWS::Region' },
      ':',
      { Ref: 'AWS::AccountId' },
      ':event-bus/default',
    ],
  ],
};

function putEvents(template: typeof defaults.template, name: string): Statement[] {
  return statementsFor(template, functionNamed(template, name).resource, 'events');
}

function runTopic(template: typeof defaults.template): [string, CfnResource] {
  const topics = resourcesOfType(template, 'AWS::SNS::Topic').filter(([id]) => id.includes('RunTopic'));
  expect(topics).toHaveLength(1);
  return topics[0]!;
}

describe('run events', () => {
  it('only ValidateDrop and Report may put events: on the default bus, with the source hopper only', () => {
    const functions = resourcesOfType(defaults.template, 'AWS::Lambda::Function');
    const putting: string[] = [];
    for (const [, fn] of functions) {
      if (statementsFor(defaults.template, fn, 'events').length > 0)
        putting.push(String(fn.Properties.Description).split(':')[0]!);
    }
    expect(putting.sort()).toEqual(['Hopper Report', 'Hopper ValidateDrop']);
    for (const name of ['ValidateDrop', 'Report']) {
      const [statement, ...others] = putEvents(defaults.template, name);
      expect(others).toEqual([]);
      expect(actionsOf(statement!)).toEqual(['events:PutEvents']);
      expect(resourcesOf(statement!)).toEqual([DEFAULT_BUS]);
      expect(statement!.Condition).toEqual({
        'ForAllValues:StringEquals': { 'events:source': 'hopper' },
        Null: { 'events:source': 'false' },
      });
    }
  });

  it('takes its source from context eventSource: the Lambdas are told it and may put no other', () => {
    for (const name of ['ValidateDrop', 'Report']) {
      const { resource } = functionNamed(configured.template, name);
      expect(resource.Properties.Environment).toMatchObject({
        Variables: { HOPPER_EVENT_SOURCE: 'com.example.hopper' },
      });
      expect(putEvents(configured.template, name)[0]?.Condition).toEqual({
        'ForAllValues:StringEquals': { 'events:source': 'com.example.hopper' },
        Null: { 'events:source': 'false' },
      });
    }
    configured.template.hasOutput('EventSource', { Value: 'com.example.hopper' });
  });

  it.each([
    ['aws.hopper', /starts with "aws\."/],
    ['has space', /not an event source/],
  ])('refuses the event source %s at synth', (eventSource, message) => {
    expect(() => synthesize({ eventSource })).toThrow(message);
  });

  it('expires the event markers under status/.events/ after a month, when no run can retry a step any more', () => {
    expect(STORAGE_DEFAULTS.eventMarkerRetentionDays * 86400).toBeGreaterThan(EXECUTION_TIMEOUT_SECONDS);
    const [bucket] = resourcesOfType(defaults.template, 'AWS::S3::Bucket')
      .map(([, resource]) => resource)
      .filter((resource) => resource.Properties.NotificationConfiguration !== undefined);
    const rules = (bucket!.Properties.LifecycleConfiguration as { Rules: Record<string, unknown>[] }).Rules;
    expect(rules).toContainEqual(
      expect.objectContaining({ Prefix: 'status/.events/', ExpirationInDays: 30, Status: 'Enabled' }),
    );
  });
});

describe('run notifications', () => {
  it('has a topic of its own, apart from the alarm topic, encrypted and TLS-only, subscribed only when configured', () => {
    const [topicId, topic] = runTopic(defaults.template);
    const alarmTopics = resourcesOfType(defaults.template, 'AWS::SNS::Topic').filter(
      ([id]) => id !== topicId,
    );
    expect(alarmTopics).toHaveLength(1);
    expect(topic.Properties.KmsMasterKeyId).toEqual({ 'Fn::GetAtt': [expect.any(String) as unknown, 'Arn'] });
    expect(topic.Properties.KmsMasterKeyId).not.toEqual(alarmTopics[0]![1].Properties.KmsMasterKeyId);
    const policy = resourcesOfType(defaults.template, 'AWS::SNS::TopicPolicy').find(
      ([, candidate]) => JSON.stringify(candidate.Properties.Topics) === JSON.stringify([{ Ref: topicId }]),
    );
    const statements = (policy![1].Properties.PolicyDocument as { Statement: Statement[] }).Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    defaults.template.hasOutput('RunNotificationTopicArn', { Value: { Ref: topicId } });
    expect(
      resourcesOfType(defaults.template, 'AWS::SNS::Subscription').filter(
        ([, subscription]) =>
          JSON.stringify(subscription.Properties.TopicArn) === JSON.stringify({ Ref: topicId }),
      ),
    ).toEqual([]);

    const [configuredTopicId] = runTopic(configured.template);
    configured.template.hasResourceProperties('AWS::SNS::Subscription', {
      Protocol: 'email',
      Endpoint: 'team@example.com',
      TopicArn: { Ref: configuredTopicId },
    });
  });

  it('a rule on the default bus sends each Succeeded, Failed or Superseded event of the source as its plain summary', () => {
    const [topicId] = runTopic(configured.template);
    const rules = resourcesOfType(configured.template, 'AWS::Events::Rule').filter(([, rule]) =>
      JSON.stringify(rule.Properties.Targets).includes(`"Ref":"${topicId}"`),
    );
    expect(rules).toHaveLength(1);
    const [ruleId, rule] = rules[0]!;
    expect(rule.Properties.EventBusName).toBeUndefined();
    expect(rule.Properties.EventPattern).toEqual({
      source: ['com.example.hopper'],
      'detail-type': [RUN_EVENT_TYPES.succeeded, RUN_EVENT_TYPES.failed, RUN_EVENT_TYPES.superseded],
    });
    const targets = rule.Properties.Targets as Record<string, unknown>[];
    expect(targets).toEqual([
      expect.objectContaining({
        Arn: { Ref: topicId },
        InputTransformer: { InputPathsMap: { summary: '$.detail.summary' }, InputTemplate: '<summary>' },
      }),
    ]);
    // No role: the topic's policy lets EventBridge publish for this rule only.
    expect(targets[0]).not.toHaveProperty('RoleArn');
    const policy = resourcesOfType(configured.template, 'AWS::SNS::TopicPolicy').find(
      ([, candidate]) => JSON.stringify(candidate.Properties.Topics) === JSON.stringify([{ Ref: topicId }]),
    );
    const allow = (policy![1].Properties.PolicyDocument as { Statement: Statement[] }).Statement.filter(
      (statement) => statement.Effect === 'Allow',
    );
    expect(allow).toEqual([
      expect.objectContaining({
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sns:Publish',
        Resource: { Ref: topicId },
        Condition: { ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [ruleId, 'Arn'] } } },
      }),
    ]);
  });

  it("the topic's key lets EventBridge encrypt without source conditions, which SNS does not support for it", () => {
    const [, topic] = runTopic(defaults.template);
    const keyId = (topic.Properties.KmsMasterKeyId as { 'Fn::GetAtt': [string, string] })['Fn::GetAtt'][0];
    const key = defaults.template.findResources('AWS::KMS::Key')[keyId] as CfnResource;
    const forEvents = (key.Properties.KeyPolicy as { Statement: Statement[] }).Statement.filter((statement) =>
      JSON.stringify(statement).includes('events.amazonaws.com'),
    );
    // The SNS Developer Guide ("Managing Amazon SNS encryption keys and costs"): aws:SourceAccount
    // and aws:SourceArn in a KMS key policy are not supported for EventBridge-to-encrypted topics.
    expect(forEvents).toEqual([
      expect.objectContaining({ Action: ['kms:Decrypt', 'kms:GenerateDataKey'], Resource: '*' }),
    ]);
    expect(forEvents[0]!.Condition).toBeUndefined();
  });

  it('retries delivery for a day, then keeps the event in a dead-letter queue only this rule may send to', () => {
    const [topicId] = runTopic(defaults.template);
    const [ruleId, rule] = resourcesOfType(defaults.template, 'AWS::Events::Rule').find(([, candidate]) =>
      JSON.stringify(candidate.Properties.Targets).includes(`"Ref":"${topicId}"`),
    )!;
    const [target] = rule.Properties.Targets as {
      DeadLetterConfig: { Arn: { 'Fn::GetAtt': [string, string] } };
    }[];
    expect(target).toMatchObject({
      RetryPolicy: { MaximumRetryAttempts: 8, MaximumEventAgeInSeconds: 86400 },
    });
    const queueId = target!.DeadLetterConfig.Arn['Fn::GetAtt'][0];
    const queue = defaults.template.findResources('AWS::SQS::Queue')[queueId] as CfnResource;
    expect(queue.Properties).toMatchObject({
      SqsManagedSseEnabled: true,
      MessageRetentionPeriod: 14 * 86400,
    });
    const [[, policy]] = resourcesOfType(defaults.template, 'AWS::SQS::QueuePolicy').filter(
      ([, candidate]) => JSON.stringify(candidate.Properties.Queues) === JSON.stringify([{ Ref: queueId }]),
    ) as [[string, CfnResource]];
    const statements = (policy.Properties.PolicyDocument as { Statement: Statement[] }).Statement;
    expect(statements).toContainEqual(
      expect.objectContaining({ Effect: 'Deny', Condition: { Bool: { 'aws:SecureTransport': 'false' } } }),
    );
    expect(statements.filter((statement) => statement.Effect === 'Allow')).toEqual([
      expect.objectContaining({
        Principal: { Service: 'events.amazonaws.com' },
        Action: 'sqs:SendMessage',
        Resource: { 'Fn::GetAtt': [queueId, 'Arn'] },
        Condition: { ArnEquals: { 'aws:SourceArn': { 'Fn::GetAtt': [ruleId, 'Arn'] } } },
      }),
    ]);
  });
});
