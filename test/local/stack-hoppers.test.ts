/**
 * `hopper status --stack` finds every Hopper of a team's own stack with no outputs added by hand
 * (issue 36): a consumer app as a team writes one, two Hoppers in one stack and one alone in
 * another, synthesized; a loopback CloudFormation, reached through AWS_ENDPOINT_URL_CLOUDFORMATION
 * as the SDKs read it, answers DescribeStacks with the outputs that template would have deployed;
 * the local S3 holds each Hopper's bucket.
 */
import { CreateBucketCommand, PutObjectCommand } from '@aws-sdk/client-s3';
import { App, Stack } from 'aws-cdk-lib';
import { Bucket } from 'aws-cdk-lib/aws-s3';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { Hopper } from '../../infra/index.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { CLOUDFORMATION_ENDPOINT_ENV } from '../../local/cli/target.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { CLIENT_SETTINGS } from '../helpers/aws-json-endpoint.js';
import {
  outputsOfTemplate,
  startCloudFormationEndpoint,
  type CloudFormationEndpoint,
  type OutputTemplate,
} from '../helpers/cloudformation-endpoint.js';
import { runCommandCaptured } from '../helpers/commands.js';
import { SKIP_BUNDLING } from '../infra/helpers.js';

const REGION = 'eu-west-1';
const ACCOUNT = '123456789012';
const BUCKETS = { Reviews: 'team-reviews', Tickets: 'team-tickets', Search: 'solo-search' } as const;

/** The team's app: two Hoppers in stack Team, one in stack Solo, each on a bucket of its own. */
function teamApp(): Record<string, OutputTemplate> {
  const app = new App({ context: SKIP_BUNDLING });
  const stacks = { Team: new Stack(app, 'Team'), Solo: new Stack(app, 'Solo') };
  const add = (stack: Stack, id: keyof typeof BUCKETS, props: { dashboard?: boolean } = {}) =>
    new Hopper(stack, id, {
      serviceUrl: `https://${id.toLowerCase()}.training.example.com`,
      bucket: Bucket.fromBucketName(stack, `${id}Drops`, BUCKETS[id]),
      ...props,
    });
  add(stacks.Team, 'Reviews');
  add(stacks.Team, 'Tickets', { dashboard: false });
  add(stacks.Solo, 'Search');
  const assembly = app.synth();
  const template = (name: string) => assembly.getStackByName(name).template as OutputTemplate;
  return { Team: template('Team'), Solo: template('Solo') };
}

/** A deployment's outputs: physical ids as CloudFormation would give them, in one account. */
function deployedOutputs(stackName: string, template: OutputTemplate): Record<string, string> {
  return outputsOfTemplate(
    template,
    {
      'AWS::Region': REGION,
      'AWS::AccountId': ACCOUNT,
      'AWS::Partition': 'aws',
      'AWS::StackId': `arn:aws:cloudformation:${REGION}:${ACCOUNT}:stack/${stackName}/abcd1234-0000-4000-8000-000000000000`,
      'AWS::StackName': stackName,
    },
    (logicalId, type) =>
      type === 'AWS::StepFunctions::StateMachine'
        ? `arn:aws:states:${REGION}:${ACCOUNT}:stateMachine:${logicalId}`
        : `arn:aws:secretsmanager:${REGION}:${ACCOUNT}:secret:${logicalId}-AbCdEf`,
  );
}

let s3: LocalS3;
let cloudformation: CloudFormationEndpoint;

beforeAll(async () => {
  s3 = await startLocalS3();
  const templates = teamApp();
  cloudformation = await startCloudFormationEndpoint({
    Team: deployedOutputs('Team', templates.Team!),
    Solo: deployedOutputs('Solo', templates.Solo!),
  });
  for (const [id, bucket] of Object.entries(BUCKETS)) {
    await s3.client.send(new CreateBucketCommand({ Bucket: bucket }));
    const drop = `${id.toLowerCase()}-drop`;
    await s3.client.send(
      new PutObjectCommand({ Bucket: bucket, Key: statusKey(drop), Body: JSON.stringify(succeeded(drop)) }),
    );
  }
}, 120_000);

afterAll(async () => {
  await Promise.all([s3.close(), cloudformation.close()]);
});

function succeeded(drop: string): Partial<RunStatus> {
  return {
    run_id: `${drop}-${'a'.repeat(32)}`,
    drop,
    state: 'succeeded',
    hopper_step: 'report',
    step: 5,
    next_action: null,
    files: ['train.csv'],
    started_at: '2026-12-02T04:50:00.000Z',
    updated_at: '2026-12-02T04:55:00.000Z',
    finished_at: '2026-12-02T04:55:00.000Z',
    error: null,
  };
}

async function status(argv: readonly string[]): Promise<{ code: number; stdout: string; stderr: string }> {
  // The endpoint comes as the SDKs take it, from the environment; the rest from the overrides.
  return await runCommandCaptured(runStatusCommand, ['--json', ...argv], {
    env: { [CLOUDFORMATION_ENDPOINT_ENV]: cloudformation.url },
    aws: {
      cloudformation: CLIENT_SETTINGS,
      s3: {
        endpoint: s3.endpoint,
        region: 'us-east-1',
        credentials: LOCAL_S3_CREDENTIALS,
        forcePathStyle: true,
        requestChecksumCalculation: 'WHEN_REQUIRED',
        responseChecksumValidation: 'WHEN_REQUIRED',
      },
    },
    now: () => Date.parse('2026-12-02T05:00:00Z'),
  });
}

const dropsIn = (stdout: string): string[] => (JSON.parse(stdout) as RunStatus[]).map((entry) => entry.drop);

describe('hopper status --stack in a stack of the team’s own app', () => {
  it('finds the one Hopper of a stack that holds one, by its own output', async () => {
    const found = await status(['--stack', 'Solo']);
    expect(found).toMatchObject({ code: 0, stderr: '' });
    expect(dropsIn(found.stdout)).toEqual(['search-drop']);
    expect(cloudformation.actions).toContain('DescribeStacks');
  });

  it('lists the Hoppers of a stack that holds several, and exits 2, without --hopper', async () => {
    const several = await status(['--stack', 'Team']);
    expect(several).toMatchObject({ code: 2, stderr: '' });
    expect(JSON.parse(several.stdout)).toEqual({
      error: {
        code: 'several_hoppers',
        message: 'stack "Team" holds 2 Hoppers: choose one with --hopper ID (Reviews, Tickets)',
      },
    });
  });

  it.each([
    ['Reviews', 'reviews-drop'],
    ['Tickets', 'tickets-drop'],
  ])('finds Hopper %s of the stack with --hopper', async (id, drop) => {
    const found = await status(['--stack', 'Team', '--hopper', id]);
    expect(found).toMatchObject({ code: 0, stderr: '' });
    expect(dropsIn(found.stdout)).toEqual([drop]);
  });

  it('names the Hoppers there are for an id the stack does not hold', async () => {
    const wrong = await status(['--stack', 'Team', '--hopper', 'Nope']);
    expect(wrong.code).toBe(2);
    expect(wrong.stdout).toContain('stack \\"Team\\" holds no Hopper \\"Nope\\": it holds Reviews, Tickets');
  });

  it("prints the console's pages of a Hopper with --links: its state machine, dashboard and bucket", async () => {
    const reviews = await status(['--stack', 'Team', '--hopper', 'Reviews', '--links']);
    const machine = (JSON.parse(reviews.stdout) as { stateMachine: string }).stateMachine;
    expect(JSON.parse(reviews.stdout)).toEqual({
      stateMachine: expect.stringMatching(
        /^https:\/\/eu-west-1\.console\.aws\.amazon\.com\/states\/home\?region=eu-west-1#\/statemachines\/view\/arn:aws:states:eu-west-1:123456789012:stateMachine:Reviews\w+$/,
      ) as unknown,
      dashboard:
        'https://eu-west-1.console.aws.amazon.com/cloudwatch/home?region=eu-west-1#dashboards:name=Team-Reviews-eu-west-1',
      bucket: 'https://s3.console.aws.amazon.com/s3/buckets/team-reviews?region=eu-west-1',
    });
    expect(machine).not.toContain('Tickets');
    // Tickets has no dashboard (dashboard: false): no link to one.
    const tickets = await status(['--stack', 'Team', '--hopper', 'Tickets', '--links']);
    expect(Object.keys(JSON.parse(tickets.stdout) as object)).toEqual(['stateMachine', 'bucket']);
  });

  it('refuses --hopper without --stack', async () => {
    const alone = await status(['--hopper', 'Reviews']);
    expect(alone.code).toBe(2);
    expect(alone.stdout).toContain('--hopper chooses a Hopper of a stack: give --stack NAME too');
  });
});
