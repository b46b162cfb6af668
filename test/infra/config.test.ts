/**
 * Settings are checked where they enter: the CDK context by a zod schema (infra/config.ts), every
 * wrong setting named in one error; invalid and conflicting props by the `Hopper` construct itself
 * (infra/constructs/hopper-props.ts), whoever builds it.
 */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { configFromContext, DEFAULT_STACK_NAME } from '../../infra/config.js';
import { Bucket, type IBucket } from 'aws-cdk-lib/aws-s3';
import { Topic, type ITopic } from 'aws-cdk-lib/aws-sns';
import { Hopper } from '../../infra/index.js';
import { cdkJsonContext } from '../../infra/hopper-app.js';

/** A stack with the project's feature flags, as the app has them. */
function stack(): Stack {
  return new Stack(new App({ context: cdkJsonContext() }), 'Test');
}

function config(context: Record<string, unknown>): ReturnType<typeof configFromContext> {
  return configFromContext(new App({ context }).node);
}

function failure(work: () => unknown): string {
  try {
    work();
  } catch (error) {
    return error instanceof Error ? error.message : String(error);
  }
  throw new Error('expected an error');
}

describe('CDK context', () => {
  it('is read trimmed, blanks as left out, days from a -c string', () => {
    const { stackName, props } = config({
      serviceUrl: ' https://train.example.com ',
      bucketName: '',
      logLevel: 'debug',
      inboxRetentionDays: '7',
      creditBudget: '20',
      creditBudget30Days: 400,
      notificationEmail: null,
    });
    expect(stackName).toBe(DEFAULT_STACK_NAME);
    expect(props).toMatchObject({
      serviceUrl: 'https://train.example.com',
      bucketName: undefined,
      logLevel: 'DEBUG',
      inboxRetentionDays: 7,
      creditBudget: 20,
      creditBudget30Days: 400,
      notificationEmail: undefined,
    });
  });

  it('names every wrong setting at once, each with what to give', () => {
    const message = failure(() =>
      config({
        serviceUrl: 'http://train.example.com',
        bucketName: 'Bad_Bucket',
        logLevel: 'LOUD',
        inboxRetentionDays: 'a week',
        creditBudget: '0',
        notificationEmail: 42,
        stackName: '9lives',
      }),
    );
    expect(message).toMatch(/^7 context settings are wrong/);
    expect(message.split('\n').slice(1)).toEqual([
      '  - context serviceUrl: "http://train.example.com" must be an https:// URL',
      '  - context bucketName: "Bad_Bucket" is not a valid S3 bucket name',
      '  - context notificationEmail: must be a string, got 42',
      '  - context stackName: "9lives" is not a valid CloudFormation stack name',
      '  - context logLevel: "LOUD" is not a log level; use one of TRACE, DEBUG, INFO, WARN, ERROR, CRITICAL, SILENT',
      '  - context inboxRetentionDays: must be a whole number of days >= 1, got "a week"',
      '  - context creditBudget: must be a whole number of credits >= 1, got "0"',
    ]);
  });

  it('reports a single wrong setting on one line', () => {
    expect(failure(() => config({ eventSource: 'aws.hopper' }))).toBe(
      'context eventSource: "aws.hopper" starts with "aws.", which only AWS services may use',
    );
  });
});

describe('Hopper props', () => {
  const bucket = (scope: Stack): IBucket => Bucket.fromBucketName(scope, 'Drops', 'team-drops');
  const topic = (scope: Stack): ITopic =>
    Topic.fromTopicArn(scope, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:ops');

  it('names every problem in one error: invalid values and props that mean nothing together', () => {
    const scope = stack();
    const message = failure(
      () =>
        new Hopper(scope, 'Training', {
          serviceUrl: 'http://train.example.com/v1',
          bucket: bucket(scope),
          inboxRetentionDays: 7,
          removalPolicy: RemovalPolicy.DESTROY,
          alarmTopic: topic(scope),
          notificationEmail: 'ops@example.com',
          creditBudget: { perDay: 0, per30Days: 2.5 },
          eventSource: 'aws.hopper',
        }),
    );
    expect(message.split('\n')).toEqual([
      'Hopper Test/Training: invalid props:',
      '- serviceUrl "http://train.example.com/v1" must be an https:// URL',
      '- creditBudget.perDay is 0, which would refuse every training: leave creditBudget out for no budget, or give at least 1',
      '- creditBudget.per30Days must be a whole number of credits >= 1, got 2.5',
      '- eventSource "aws.hopper" starts with "aws.", which only AWS services may use',
      '- inboxRetentionDays and removalPolicy configure a bucket Hopper creates: with bucket (your own), leave them out and set them on that bucket',
      '- notificationEmail subscribes to a topic Hopper creates: with alarmTopic (your own), subscribe to that topic instead',
    ]);
  });

  it('refuses a missing service URL and one ending in /v1', () => {
    expect(failure(() => new Hopper(stack(), 'A', { serviceUrl: '' }))).toContain('serviceUrl is required');
    expect(failure(() => new Hopper(stack(), 'B', { serviceUrl: 'https://train.example.com/v1' }))).toContain(
      'give the base URL without /v1',
    );
  });

  it('takes your bucket and topic alone, and a new bucket with its options', () => {
    const scope = stack();
    expect(
      () =>
        new Hopper(scope, 'Existing', {
          serviceUrl: 'https://t.example.com',
          bucket: bucket(scope),
          alarmTopic: topic(scope),
        }),
    ).not.toThrow();
    expect(
      () =>
        new Hopper(stack(), 'New', {
          serviceUrl: 'https://t.example.com',
          inboxRetentionDays: 7,
          removalPolicy: RemovalPolicy.DESTROY,
          creditBudget: { perDay: 3 },
        }),
    ).not.toThrow();
  });
});
