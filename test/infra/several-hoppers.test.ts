/**
 * Several Hoppers in one team's app (issue 36): two in one stack and one more in a second stack,
 * made as a team's app makes them (a fresh App, none of this repository's feature flags), with
 * CDK's CloudFormation validation on. Every physical name differs from every other's in one
 * account and region, the validation finds no "Primary identifiers" clash, and an imported alarm
 * topic brings no warning about the notification rule's environment.
 */
import { App, Stack } from 'aws-cdk-lib';
import { Annotations, Match } from 'aws-cdk-lib/assertions';
import { Topic } from 'aws-cdk-lib/aws-sns';
import { existsSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { Hopper } from '../../infra/index.js';
import { SKIP_BUNDLING } from './helpers.js';
import { physicalNames, type PhysicalName, type TemplateJson } from './physical-names.js';

const outdir = await mkdtemp(join(tmpdir(), 'hopper-several-'));
afterAll(() => rm(outdir, { recursive: true, force: true }));

const app = new App({ outdir, context: SKIP_BUNDLING });
const search = new Stack(app, 'Search');
const team = new Stack(app, 'Team');
const serviceUrl = 'https://training.example.com';
new Hopper(search, 'Drops', { serviceUrl });
new Hopper(team, 'Reviews', { serviceUrl });
new Hopper(team, 'Tickets', {
  serviceUrl,
  alarmTopic: Topic.fromTopicArn(team, 'Ops', 'arn:aws:sns:eu-west-1:123456789012:team-ops'),
});
const assembly = app.synth();

function template(stack: string): TemplateJson {
  return assembly.getStackByName(stack).template as TemplateJson;
}

const at = (stackName: string, stackUuid: string) =>
  ({ stackName, stackUuid, region: 'eu-west-1', account: '123456789012' }) as const;
const names: PhysicalName[] = [
  ...physicalNames(template('Search'), at('Search', '11111111-aaaa-4aaa-8aaa-aaaaaaaaaaaa')),
  ...physicalNames(template('Team'), at('Team', '22222222-bbbb-4bbb-8bbb-bbbbbbbbbbbb')),
];

describe('several Hoppers in one app', () => {
  it('give every resource a physical name of its own', () => {
    const counts = new Map<string, number>();
    for (const { name } of names) counts.set(name, (counts.get(name) ?? 0) + 1);
    expect([...counts].filter(([, count]) => count > 1)).toEqual([]);
    // Each of the three has its secret, its execution log group and its dashboard.
    expect(names.filter((entry) => entry.type === 'AWS::SecretsManager::Secret').map((e) => e.name)).toEqual([
      'Search/training-service-api-key-11111111',
      'Team-Reviews/training-service-api-key-22222222',
      'Team-Tickets/training-service-api-key-22222222',
    ]);
    expect(names.filter((entry) => entry.type === 'AWS::CloudWatch::Dashboard').map((e) => e.name)).toEqual([
      'Search-eu-west-1',
      'Team-Reviews-eu-west-1',
      'Team-Tickets-eu-west-1',
    ]);
  });

  it("leave CDK's CloudFormation validation nothing to report", async () => {
    const report = join(outdir, 'validation-report.json');
    const found = existsSync(report) ? await readFile(report, 'utf8') : '';
    expect(found).not.toMatch(/Primary identifiers|E3019/);
  });

  it('warn of nothing, an imported alarm topic included (the rule and its target share the region)', () => {
    for (const stack of [search, team]) {
      expect(Annotations.fromStack(stack).findWarning('*', Match.anyValue())).toEqual([]);
    }
  });

  it('are refused at synth when two paths of one stack give the same names', () => {
    const clash = new App({ context: SKIP_BUNDLING });
    const stack = new Stack(clash, 'Clash');
    new Hopper(stack, 'Search.Drops', { serviceUrl });
    new Hopper(stack, 'SearchDrops', { serviceUrl });
    expect(() => clash.synth()).toThrow(
      /another Hopper of stack Clash has the path "SearchDrops" .*give one of them another id/,
    );
  });
});
