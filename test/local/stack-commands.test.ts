/**
 * `hopper status`, `runs`, `models` and `retry` with `--stack NAME`, through the real AWS SDK
 * clients pointed at loopback stand-ins: CloudFormation (query protocol) with the stack's
 * outputs, Step Functions and Secrets Manager (JSON protocol), S3 (the local s3rver), and the
 * simulated training service holding the key the secret holds.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, statusKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { runModelsCommand } from '../../local/cli/models.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import { runRunsCommand } from '../../local/cli/runs.js';
import { runStatusCommand } from '../../local/cli/status.js';
import { runWaitCommand } from '../../local/cli/wait.js';
import { STACK_OUTPUTS, type AwsOverrides } from '../../local/cli/target.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { startSimulatedService, type SimulatedService } from '../../local/service/index.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint, type AwsJsonEndpoint } from '../helpers/aws-json-endpoint.js';
import {
  startCloudFormationEndpoint,
  type CloudFormationEndpoint,
} from '../helpers/cloudformation-endpoint.js';
import { runCommandCaptured, type Command } from '../helpers/commands.js';
import { readText } from '../helpers/pipeline.js';
import { synthesize } from '../infra/helpers.js';

const KEY = 'sk-stack-Zq9-SECRET';
const STACK = 'HopperProd';
const MACHINE = 'arn:aws:states:us-east-1:123456789012:stateMachine:HopperProd-Pipeline';
const SECRET = 'HopperProd/training-service-api-key-a1b2';
const LONG = 'x'.repeat(45);
const hex = (digit: string): string => digit.repeat(32);

/** Executions of the state machine: two runs of `reviews`, and look-alikes of other drops. */
const EXECUTIONS = [
  {
    name: `reviews-${hex('a')}`,
    drop: 'reviews',
    status: 'FAILED',
    start: 1_000,
    stop: 1_060,
    error: 'no_credits',
  },
  { name: `reviews-${hex('b')}`, drop: 'reviews', status: 'SUCCEEDED', start: 2_000, stop: 2_300 },
  { name: `reviews-2-${hex('c')}`, drop: 'reviews-2', status: 'SUCCEEDED', start: 3_000, stop: 3_100 },
  { name: `${LONG.slice(0, 40)}-${hex('d')}`, drop: `${LONG}y`, status: 'RUNNING', start: 4_000 },
  { name: `${LONG.slice(0, 40)}-${hex('e')}`, drop: LONG, status: 'RUNNING', start: 5_000 },
  { name: `slow-${hex('f')}`, drop: 'slow', status: 'TIMED_OUT', start: 6_000, stop: 7_000 },
] as const;

let s3: LocalS3;
let service: SimulatedService;
let cloudformation: CloudFormationEndpoint;
let sfn: AwsJsonEndpoint;
let secrets: AwsJsonEndpoint;
let secretValue: string;

beforeEach(async () => {
  s3 = await startLocalS3();
  service = await startSimulatedService({ apiKey: KEY });
  secretValue = KEY;
  cloudformation = await startCloudFormationEndpoint({
    [STACK]: {
      BucketName: s3.bucket,
      StateMachineArn: MACHINE,
      ApiKeySecretName: SECRET,
      TrainingServiceUrl: service.apiUrl,
    },
  });
  sfn = await startAwsJsonEndpoint('application/x-amz-json-1.0', ({ target, body }) => {
    const arnOf = (name: string): string => `${MACHINE.replace(':stateMachine:', ':execution:')}:${name}`;
    if (target === 'AWSStepFunctions.ListExecutions') {
      if (body.stateMachineArn !== MACHINE)
        return { status: 400, body: { __type: 'StateMachineDoesNotExist', message: 'no' } };
      // One execution a page, newest first, to make the command page.
      const sorted = [...EXECUTIONS].sort((a, b) => b.start - a.start);
      const at = typeof body.nextToken === 'string' ? Number(body.nextToken) : 0;
      const item = sorted[at];
      return {
        status: 200,
        body: {
          executions:
            item === undefined
              ? []
              : [
                  {
                    executionArn: arnOf(item.name),
                    stateMachineArn: MACHINE,
                    name: item.name,
                    status: item.status,
                    startDate: item.start,
                  },
                ],
          ...(at + 1 < sorted.length ? { nextToken: String(at + 1) } : {}),
        },
      };
    }
    const item = EXECUTIONS.find((execution) => arnOf(execution.name) === body.executionArn);
    if (target !== 'AWSStepFunctions.DescribeExecution' || item === undefined) {
      return { status: 400, body: { __type: 'ExecutionDoesNotExist', message: 'no such execution' } };
    }
    return {
      status: 200,
      body: {
        executionArn: arnOf(item.name),
        stateMachineArn: MACHINE,
        name: item.name,
        status: item.status,
        startDate: item.start,
        ...('stop' in item ? { stopDate: item.stop } : {}),
        input: JSON.stringify({ run: { drop: item.drop } }),
        ...('error' in item
          ? { error: item.error, cause: 'the training service account has no credits left' }
          : {}),
      },
    };
  });
  secrets = await startAwsJsonEndpoint('application/x-amz-json-1.1', ({ body }) =>
    body.SecretId === SECRET
      ? {
          status: 200,
          body: {
            ARN: `arn:aws:secretsmanager:us-east-1:123456789012:secret:${SECRET}`,
            Name: SECRET,
            SecretString: secretValue,
          },
        }
      : {
          status: 400,
          body: { __type: 'ResourceNotFoundException', message: 'Secrets Manager cannot find the secret' },
        },
  );
});

afterEach(async () => {
  await Promise.all([s3.close(), service.close(), cloudformation.close(), sfn.close(), secrets.close()]);
});

function aws(): AwsOverrides {
  return {
    cloudformation: { ...CLIENT_SETTINGS, endpoint: cloudformation.url },
    sfn: { ...CLIENT_SETTINGS, endpoint: sfn.url },
    secretsmanager: { ...CLIENT_SETTINGS, endpoint: secrets.url },
    s3: {
      endpoint: s3.endpoint,
      region: 'us-east-1',
      credentials: LOCAL_S3_CREDENTIALS,
      forcePathStyle: true,
    },
  };
}

async function run(
  command: Command,
  argv: readonly string[],
): Promise<{ code: number; stdout: string; stderr: string }> {
  // No Hopper settings in the environment: everything comes from the stack.
  return await runCommandCaptured(command, argv, {
    env: {},
    aws: aws(),
    now: () => Date.parse('2026-11-25T05:00:00Z'),
  });
}

function failedStatus(drop: string, datasetId: string | null): RunStatus {
  return {
    run_id: `${drop}-${hex('a')}`,
    drop,
    state: 'failed',
    hopper_step: 'report',
    step: datasetId === null ? null : 3,
    next_action: datasetId === null ? null : 'start_training',
    dataset_id: datasetId,
    model_id: null,
    attempts: 0,
    max_attempts: 2,
    labelled: 0,
    files: ['reviews.csv'],
    labels: null,
    summary: null,
    started_at: '2026-11-25T04:50:00.000Z',
    updated_at: '2026-11-25T04:55:00.000Z',
    finished_at: '2026-11-25T04:55:00.000Z',
    error:
      datasetId === null
        ? { code: 'missing_file', message: 'missing' }
        : { code: 'no_credits', message: 'no credits' },
    model: null,
    paid_model: null,
    config_fingerprint: null,
    waiting_for: null,
    copy_put_off: null,
  };
}

async function put(key: string, body: string): Promise<void> {
  await s3.client.send(new PutObjectCommand({ Bucket: s3.bucket, Key: key, Body: body }));
}

describe('the commands against a deployed stack (--stack)', () => {
  it('hopper status reads the bucket named by the stack output', async () => {
    await put(
      statusKey('reviews'),
      JSON.stringify(failedStatus('reviews', '11111111-1111-4111-8111-111111111111')),
    );
    await put(
      statusKey('typo'),
      JSON.stringify({ ...failedStatus('typo', null), updated_at: '2026-11-25T04:58:00.000Z' }),
    );
    const table = await run(runStatusCommand, ['--stack', STACK]);
    expect(table).toEqual({
      code: 0,
      stderr: '',
      stdout:
        'DROP     STATE   STEP  NEXT_ACTION     AGE  ERROR\n' +
        'typo     failed  -     -               2m   missing_file\n' +
        'reviews  failed  3     start_training  5m   no_credits\n',
    });
    expect(cloudformation.actions).toEqual(['DescribeStacks']);
  });

  it('hopper runs lists the drop runs from Step Functions, newest first, telling look-alike drops apart', async () => {
    const runs = await run(runRunsCommand, ['reviews', '--stack', STACK, '--json']);
    expect(runs.stderr).toBe('');
    expect(JSON.parse(runs.stdout)).toEqual([
      expect.objectContaining({ run_id: `reviews-${hex('b')}`, outcome: 'succeeded', error: null }),
      expect.objectContaining({
        run_id: `reviews-${hex('a')}`,
        outcome: 'failed',
        started_at: new Date(1_000_000).toISOString(),
        stopped_at: new Date(1_060_000).toISOString(),
        error: { code: 'no_credits', message: 'the training service account has no credits left' },
      }),
    ]);
    const long = await run(runRunsCommand, [LONG, '--stack', STACK, '--json']);
    expect((JSON.parse(long.stdout) as { run_id: string }[]).map((entry) => entry.run_id)).toEqual([
      `${LONG.slice(0, 40)}-${hex('e')}`,
    ]);
    // Every page was read: the listing pages with Step Functions' nextToken.
    expect(
      sfn.requests.filter((request) => request.target.endsWith('ListExecutions')).length,
    ).toBeGreaterThanOrEqual(5);
  });

  it('hopper models reads the API key from the stack secret and never prints it', async () => {
    const models = await run(runModelsCommand, ['--stack', STACK, '--json']);
    expect(models).toEqual({ code: 0, stdout: '[]\n', stderr: '' });
    expect(service.requestCount('listModels')).toBe(1);
    expect(secrets.requests.map((request) => request.body.SecretId)).toEqual([SECRET]);

    secretValue = `${KEY}-OLD`;
    const refused = await run(runModelsCommand, ['--stack', STACK]);
    expect(refused.code).toBe(1);
    expect(refused.stderr).toMatch(/refused the API key/);
    expect(`${refused.stdout}${refused.stderr}`).not.toContain(KEY);
  });

  it('hopper retry uploads train.json again with "resume": true, keeping its fields', async () => {
    await put(
      statusKey('reviews'),
      JSON.stringify(failedStatus('reviews', '11111111-1111-4111-8111-111111111111')),
    );
    await put(inboxKey('reviews', TRAIN_JSON), '{"maxAttempts": 2, "name": "Reviews"}');
    const retry = await run(runRetryCommand, ['reviews', '--stack', STACK, '--max-attempts', '4']);
    expect(retry.stderr).toBe('');
    expect(retry.code).toBe(0);
    expect(retry.stdout).toContain('from dataset 11111111-1111-4111-8111-111111111111');
    const written = await readText(s3.client, s3.bucket, inboxKey('reviews', TRAIN_JSON));
    expect(JSON.parse(written ?? '')).toEqual({ maxAttempts: 4, name: 'Reviews', resume: true });

    await put(statusKey('typo'), JSON.stringify(failedStatus('typo', null)));
    const nothing = await run(runRetryCommand, ['typo', '--stack', STACK]);
    expect(nothing.code).toBe(1);
    // The error the run failed with comes from the drop: a resume would meet it again.
    expect(nothing.stderr).toMatch(/failed with missing_file, which a resumed run would fail with again: /);
    // What to do instead, as docs/errors.md says: fix the drop, upload train.json again.
    expect(nothing.stderr).toMatch(
      /Fix it in inbox\/typo\/ \(docs\/errors.md, missing_file\), then upload train.json again, without "resume"/,
    );
  });

  it('hopper wait exits by how the run ended: 5 for one Step Functions timed out, 124 for one still going at --timeout', async () => {
    await put(
      statusKey('reviews'),
      JSON.stringify(failedStatus('reviews', '11111111-1111-4111-8111-111111111111')),
    );
    const failed = await run(runWaitCommand, ['reviews', '--stack', STACK]);
    expect(failed).toMatchObject({ code: 1, stderr: '' });
    expect(failed.stdout).toMatch(/^reviews: failed\n(.*\n)*error +no_credits: no credits\n/);

    // Their status files still say running: no report ran. Their executions say how they stand.
    const running = (drop: string, runId: string): RunStatus => ({
      ...failedStatus(drop, null),
      run_id: runId,
      state: 'running',
      error: null,
    });
    await put(statusKey('slow'), JSON.stringify(running('slow', `slow-${hex('f')}`)));
    const timedOut = await run(runWaitCommand, ['slow', '--stack', STACK, '--json']);
    expect(timedOut.code).toBe(5);
    expect(JSON.parse(timedOut.stdout)).toMatchObject({ drop: 'slow', outcome: 'timed_out' });

    await put(statusKey(LONG), JSON.stringify(running(LONG, `${LONG.slice(0, 40)}-${hex('e')}`)));
    const gaveUp = await run(runWaitCommand, [LONG, '--stack', STACK, '--timeout', '1']);
    expect(gaveUp).toEqual({
      code: 124,
      stdout: '',
      stderr: `hopper wait: the latest run of "${LONG}" had not ended after 1 s: hopper status ${LONG} shows where it is; wait again, with a longer --timeout\n`,
    });
  });

  it('reads outputs the stack has', () => {
    const outputs = Object.keys(
      synthesize({ serviceUrl: 'https://service.example' }).template.toJSON().Outputs as object,
    );
    expect(outputs).toEqual(expect.arrayContaining(Object.values(STACK_OUTPUTS)));
  });

  it("refuses --stack in a shell holding hopper local's export lines, which would send it to local mode", async () => {
    const local = {
      AWS_ENDPOINT_URL: s3.endpoint,
      AWS_ACCESS_KEY_ID: 'S3RVER',
      AWS_SECRET_ACCESS_KEY: 'S3RVER',
      AWS_REGION: 'us-east-1',
      HOPPER_BUCKET: s3.bucket,
    };
    const result = await runCommandCaptured(runStatusCommand, ['--stack', STACK], { env: local, aws: aws() });
    expect(result).toMatchObject({ code: 1, stdout: '' });
    expect(result.stderr).toBe(
      `hopper status: --stack ${STACK} talks to AWS, but this shell holds the settings \`hopper local\` prints (AWS_ENDPOINT_URL=${s3.endpoint}), which send AWS requests to local mode: run it in a shell without them, or first: unset AWS_ENDPOINT_URL AWS_ACCESS_KEY_ID AWS_SECRET_ACCESS_KEY AWS_REGION HOPPER_BUCKET\n`,
    );
    expect(cloudformation.actions).toEqual([]);
  });

  it('names a stack CloudFormation does not know', async () => {
    const missing = await run(runStatusCommand, ['--stack', 'Nope']);
    expect(missing.code).toBe(1);
    expect(missing.stderr).toMatch(
      /could not read stack "Nope" from CloudFormation \(Stack with id Nope does not exist\)/,
    );
  });
});
