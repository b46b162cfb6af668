/**
 * Settings are checked where they enter: the CDK context by a zod schema (infra/config.ts), every
 * wrong setting named in one error; conflicting construct props by the construct itself
 * (HopperStorage), whoever builds it.
 */
import { App, RemovalPolicy, Stack } from 'aws-cdk-lib';
import { describe, expect, it } from 'vitest';
import { configFromContext, DEFAULT_STACK_NAME } from '../../infra/config.js';
import { HopperStorage } from '../../infra/constructs/storage.js';
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

describe('HopperStorage props', () => {
  it('refuses the options of a new bucket given with an existing one, naming each', () => {
    const message = failure(
      () =>
        new HopperStorage(stack(), 'Storage', {
          bucketName: 'team-drops',
          accessLogRetentionDays: 10,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
    );
    expect(message).toBe(
      'HopperStorage Test/Storage: accessLogRetentionDays, removalPolicy apply to a bucket the stack creates; with bucketName (the existing bucket "team-drops"), leave them out and set them on that bucket yourself',
    );
  });

  it('refuses day counts a lifecycle rule does not take, all at once', () => {
    const message = failure(
      () => new HopperStorage(stack(), 'Storage', { inboxRetentionDays: 0, accessLogRetentionDays: 1.5 }),
    );
    expect(message).toContain('inboxRetentionDays must be a whole number of days >= 1, got 0');
    expect(message).toContain('accessLogRetentionDays must be a whole number of days >= 1, got 1.5');
  });

  it('takes an existing bucket alone, and a new one with its options', () => {
    expect(() => new HopperStorage(stack(), 'Existing', { bucketName: 'team-drops' })).not.toThrow();
    expect(
      () =>
        new HopperStorage(stack(), 'New', {
          inboxRetentionDays: 7,
          removalPolicy: RemovalPolicy.DESTROY,
        }),
    ).not.toThrow();
  });
});
