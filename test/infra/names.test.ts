/**
 * Deploying Hopper again in the same account never fails on a name taken (issue 11): two stacks of
 * different names in one app share no physical name; the same stack in a second region shares no
 * name of an account-wide resource; and a stack created again after `cdk destroy` gives new names
 * to what the old one left behind (retained log groups, a secret in its recovery window).
 */
import { App } from 'aws-cdk-lib';
import { Template } from 'aws-cdk-lib/assertions';
import { describe, expect, it } from 'vitest';
import { cdkJsonContext } from '../../infra/hopper-app.js';
import { VENDED_LOGS_PREFIX } from '../../infra/names.js';
import { HopperStack } from '../../infra/stack.js';
import { SKIP_BUNDLING } from './helpers.js';
import { physicalNames, type Deployment, type PhysicalName, type TemplateJson } from './physical-names.js';

const app = new App({ context: { ...cdkJsonContext(), ...SKIP_BUNDLING } });
const stacks = [new HopperStack(app, 'HopperA'), new HopperStack(app, 'HopperB')];
const [first, second] = stacks.map((stack) => Template.fromStack(stack).toJSON() as TemplateJson) as [
  TemplateJson,
  TemplateJson,
];

const ACCOUNT = '123456789012';
const at = (stackName: string, stackUuid: string, region = 'eu-west-1'): Deployment => ({
  stackName,
  stackUuid,
  region,
  account: ACCOUNT,
});

/** Resource types whose names are unique in the whole account, not per region. */
const ACCOUNT_WIDE = [
  'AWS::CloudWatch::Dashboard',
  'AWS::IAM::Role',
  'AWS::IAM::ManagedPolicy',
  'AWS::IAM::InstanceProfile',
  'AWS::S3::Bucket',
];

function shared(a: readonly PhysicalName[], b: readonly PhysicalName[]): string[] {
  const names = new Set(b.map((entry) => entry.name));
  return a
    .filter((entry) => names.has(entry.name))
    .map((entry) => `${entry.logicalId}.${entry.path}: ${entry.name}`);
}

function namesOfType(names: readonly PhysicalName[], type: string): string[] {
  return names.filter((entry) => entry.type === type).map((entry) => entry.name);
}

describe('physical names', () => {
  const a = physicalNames(first, at('HopperA', '11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa'));
  const b = physicalNames(second, at('HopperB', '22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb'));

  it('are given to the secret, the state machine log group, the dashboard and the composite alarm', () => {
    expect(a.map((entry) => `${entry.type} ${entry.path}`).sort()).toEqual([
      'AWS::CloudWatch::CompositeAlarm AlarmName',
      'AWS::CloudWatch::Dashboard DashboardName',
      'AWS::Logs::LogGroup LogGroupName',
      'AWS::SecretsManager::Secret Name',
    ]);
    expect(namesOfType(a, 'AWS::SecretsManager::Secret')).toEqual([
      'HopperA/training-service-api-key-11111111',
    ]);
    expect(namesOfType(a, 'AWS::Logs::LogGroup')).toEqual([`${VENDED_LOGS_PREFIX}HopperA-11111111`]);
    expect(namesOfType(a, 'AWS::CloudWatch::Dashboard')).toEqual(['HopperA-eu-west-1']);
  });

  it('of two stacks of different names in one account and region are all different', () => {
    expect(b.length).toBe(a.length);
    expect(shared(a, b)).toEqual([]);
  });

  it('of the same stack deployed in a second region differ for every account-wide resource', () => {
    const elsewhere = physicalNames(
      first,
      at('HopperA', '33333333-cccc-4ccc-8ccc-cccccccccccc', 'us-east-1'),
    );
    const accountWide = (names: readonly PhysicalName[]) =>
      names.filter((entry) => ACCOUNT_WIDE.includes(entry.type));
    expect(accountWide(a).length).toBeGreaterThan(0); // the dashboard
    expect(shared(accountWide(a), accountWide(elsewhere))).toEqual([]);
  });

  it('of what outlives the stack change when it is created again under the same name', () => {
    const again = physicalNames(first, at('HopperA', '44444444-dddd-4ddd-8ddd-dddddddddddd'));
    // Retained resources stay after `cdk destroy`; a deleted secret keeps its name 7 to 30 days.
    const leftBehind = (names: readonly PhysicalName[]) =>
      names.filter((entry) => entry.retained || entry.type === 'AWS::SecretsManager::Secret');
    expect(
      leftBehind(a)
        .map((entry) => entry.type)
        .sort(),
    ).toEqual(['AWS::Logs::LogGroup', 'AWS::SecretsManager::Secret']);
    expect(shared(leftBehind(a), leftBehind(again))).toEqual([]);
  });
});
