/**
 * `hopper doctor` against local mode and against a stack, with real parts: local mode's S3,
 * trigger bundle and simulated service over loopback; for --stack, loopback stand-ins of
 * CloudFormation (the stack's outputs), Secrets Manager (the key) and SNS (the alarm topic), with
 * local mode's S3 as the stack's bucket. Each check's failure path is seen: a refused key, a
 * bucket that sends no events, a probe lost to the EventBridge warm-up, a missing alarm topic.
 */
import { ListObjectsV2Command } from '@aws-sdk/client-s3';
import { afterEach, describe, expect, it } from 'vitest';
import { DOCTOR_PROBE_PREFIX, DOCTOR_SEEN_PREFIX } from '../../lambdas/storage/keys.js';
import type { CommandDeps } from '../../local/cli/command.js';
import { runDoctorCommand } from '../../local/cli/doctor.js';
import { API_KEY_ENV, CLOUDFORMATION_ENDPOINT_ENV } from '../../local/cli/target.js';
import type { LocalMode } from '../../local/emulator/local-mode.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint } from '../helpers/aws-json-endpoint.js';
import { startCloudFormationEndpoint } from '../helpers/cloudformation-endpoint.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { useLocalMode } from '../helpers/local-mode.js';
import { startSnsEndpoint } from '../helpers/sns-endpoint.js';

const fixture = useLocalMode();
const API_KEY = 'doctor-test-key-5f1c9a';
const TOPIC = 'arn:aws:sns:us-east-1:123456789012:hopper-alarms';
const closing: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closing.splice(0).reverse()) await close();
});

function start(options: Parameters<typeof fixture.start>[0] = {}): Promise<LocalMode> {
  return fixture.start({ ...options, simulated: { apiKey: API_KEY, ...options.simulated } });
}

/** `hopper doctor` as a shell with `hopper local`'s export lines runs it. */
async function doctorLocal(local: LocalMode, argv: readonly string[] = [], key = API_KEY) {
  const result = await runCommandCaptured(runDoctorCommand, ['--wait', '10', ...argv], {
    ...settingsOf(local),
    [API_KEY_ENV]: key,
  });
  expect(result.stdout + result.stderr).not.toContain(key);
  return result;
}

/** Each check's line, by check: `ok`, `FAIL`, `skip` or `n/a`, and the rest. */
function linesOf(stdout: string): Record<string, string> {
  return Object.fromEntries(
    stdout
      .trimEnd()
      .split('\n')
      .map((line) => {
        const match = /^(ok|FAIL|skip|n\/a) +([a-z ]+?): (.*)$/.exec(line);
        if (match === null) throw new Error(`not a check line: ${line}`);
        return [match[2]!, `${match[1]!} ${match[3]!}`] as const;
      }),
  );
}

/** The keys left under the probe's folder and the records' folder. */
async function probeLeftovers(client: LocalS3['client'], bucket: string): Promise<string[]> {
  const keys: string[] = [];
  for (const prefix of [DOCTOR_PROBE_PREFIX, DOCTOR_SEEN_PREFIX]) {
    const listed = await client.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix }));
    keys.push(...(listed.Contents ?? []).map((object) => object.Key ?? ''));
  }
  return keys;
}

describe('hopper doctor against hopper local', { timeout: 60_000 }, () => {
  it('passes every check, the probe recorded by the trigger and no run started; exit 0', async () => {
    const local = await start();
    const result = await doctorLocal(local);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = linesOf(result.stdout);
    expect(Object.keys(lines)).toEqual(['api key', 'service', 'bucket events', 'trigger', 'alarm topic']);
    expect(lines['api key']).toMatch(/^ok read from HOPPER_API_KEY/);
    expect(lines.service).toMatch(/^ok the training service at http:\/\/127\.0\.0\.1:\d+ accepts the key/);
    expect(lines['bucket events']).toBe(`ok bucket ${local.bucket} sends EventBridge events`);
    expect(lines.trigger).toMatch(
      /^ok the probe inbox\/\.hopper-doctor\/doctor-[a-z0-9]+-[0-9a-f]{8}\/train\.json reached the trigger within [\d.]+ s; it recorded it and started no run$/,
    );
    expect(lines['alarm topic']).toMatch(/^n\/a local mode has no SNS topic and no alarms/);
    expect(local.stateMachine.executions()).toEqual([]);
    expect(await probeLeftovers(local.s3.client, local.bucket)).toEqual([]);
  });

  it('fails the service check when the service refuses the key, never printing it; exit 1', async () => {
    const local = await start();
    const result = await doctorLocal(local, [], 'not-the-key-0b9e');
    expect(result.code).toBe(1);
    const lines = linesOf(result.stdout);
    expect(lines.service).toMatch(
      /^FAIL the training service at \S+ refused the key; set HOPPER_API_KEY to the training service's API key$/,
    );
    expect(lines.trigger).toMatch(/^ok /);
  });

  it('fails the trigger check while EventBridge warms up, and passes once it has; --json', async () => {
    const warmUpMs = 4000;
    const local = await start({ eventBridgeWarmUpMs: warmUpMs });
    // The warm-up began before local mode was started; it has passed warmUpMs from now.
    const startedAt = Date.now();
    const during = await doctorLocal(local, ['--wait', '1']);
    expect(during.code).toBe(1);
    expect(linesOf(during.stdout).trigger).toMatch(
      /^FAIL the probe \S+ did not reach the trigger within 1 s; local mode started with an EventBridge warm-up \(eventBridgeWarmUpMs\)/,
    );
    expect(linesOf(during.stdout)['bucket events']).toMatch(/^ok /);
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, startedAt + warmUpMs - Date.now())));
    const after = await doctorLocal(local, ['--json']);
    expect(after.code).toBe(0);
    const report = JSON.parse(after.stdout) as {
      healthy: boolean;
      checks: { check: string; result: string }[];
    };
    expect(report.healthy).toBe(true);
    expect(report.checks.map((check) => [check.check, check.result])).toEqual([
      ['api key', 'ok'],
      ['service', 'ok'],
      ['bucket events', 'ok'],
      ['trigger', 'ok'],
      ['alarm topic', 'not_applicable'],
    ]);
    expect(local.stateMachine.executions()).toEqual([]);
  });
});

/** A stack `name` whose Hopper is on `bucket` of the S3 at `s3Endpoint`, its key in a stand-in secret. */
async function stackDeps(
  s3Endpoint: string,
  hopper: { bucket: string; serviceUrl: string; alarmTopic?: string },
  topics: Readonly<Record<string, number>>,
  secretString = API_KEY,
): Promise<CommandDeps> {
  const output = {
    hopper: 'Hopper',
    stateMachineArn: 'arn:aws:states:us-east-1:123456789012:stateMachine:Hopper',
    apiKeySecret: 'arn:aws:secretsmanager:us-east-1:123456789012:secret:hopper-key-AbCdEf',
    ...hopper,
  };
  const cloudformation = await startCloudFormationEndpoint({ Team: { CliTarget: JSON.stringify(output) } });
  const secrets = await startAwsJsonEndpoint('application/x-amz-json-1.1', () => ({
    status: 200,
    body: { ARN: output.apiKeySecret, Name: 'hopper-key', SecretString: secretString },
  }));
  const sns = await startSnsEndpoint(topics);
  closing.push(
    () => cloudformation.close(),
    () => secrets.close(),
    () => sns.close(),
  );
  return {
    env: { [CLOUDFORMATION_ENDPOINT_ENV]: cloudformation.url },
    aws: {
      cloudformation: CLIENT_SETTINGS,
      secretsmanager: { ...CLIENT_SETTINGS, endpoint: secrets.url },
      sns: { ...CLIENT_SETTINGS, endpoint: sns.url },
      s3: {
        endpoint: s3Endpoint,
        region: 'us-east-1',
        credentials: LOCAL_S3_CREDENTIALS,
        forcePathStyle: true,
      },
    },
  };
}

async function doctorStack(deps: CommandDeps, argv: readonly string[] = []) {
  const result = await runCommandCaptured(
    runDoctorCommand,
    ['--stack', 'Team', '--wait', '2', ...argv],
    deps,
  );
  expect(result.stdout + result.stderr).not.toContain(API_KEY);
  return result;
}

describe('hopper doctor --stack', { timeout: 60_000 }, () => {
  it("passes every check of a stack whose bucket is local mode's, reading the key from its secret", async () => {
    const local = await start();
    const deps = await stackDeps(
      local.s3.endpoint,
      { bucket: local.bucket, serviceUrl: local.serviceUrl, alarmTopic: TOPIC },
      { [TOPIC]: 1 },
    );
    const result = await doctorStack(deps);
    expect(result).toMatchObject({ code: 0, stderr: '' });
    const lines = linesOf(result.stdout);
    expect(lines['api key']).toBe(
      'ok read from the secret arn:aws:secretsmanager:us-east-1:123456789012:secret:hopper-key-AbCdEf',
    );
    expect(lines.trigger).toMatch(/^ok the probe \S+ reached the trigger/);
    expect(lines['alarm topic']).toBe(`ok ${TOPIC} exists (1 confirmed subscriptions)`);
    expect(local.stateMachine.executions()).toEqual([]);
  });

  it('fails on a bucket that sends no events, a lost probe and a missing alarm topic; exit 1', async () => {
    const local = await start();
    // A bucket of an S3 whose events go nowhere, and says so.
    const quiet = await startLocalS3();
    closing.push(() => quiet.close());
    const deps = await stackDeps(
      quiet.endpoint,
      { bucket: quiet.bucket, serviceUrl: local.serviceUrl, alarmTopic: TOPIC },
      {},
    );
    const result = await doctorStack(deps);
    expect(result.code).toBe(1);
    const lines = linesOf(result.stdout);
    expect(lines.service).toMatch(/^ok /);
    expect(lines['bucket events']).toMatch(
      /^FAIL bucket hopper-local sends no EventBridge events; deploy again \(the Hopper construct turns them on/,
    );
    expect(lines.trigger).toMatch(
      /^FAIL the probe \S+ did not reach the trigger within 2 s; S3 may take up to five minutes to start sending a bucket's events/,
    );
    expect(lines['alarm topic']).toBe(
      `FAIL ${TOPIC} does not exist; deploy again; with your own alarmTopic, create that topic first`,
    );
    expect(await probeLeftovers(quiet.client, quiet.bucket)).toEqual([]);
  });

  it('fails the api key check of a stack whose secret holds no key, and skips the service check', async () => {
    const local = await start();
    const deps = await stackDeps(
      local.s3.endpoint,
      { bucket: local.bucket, serviceUrl: local.serviceUrl, alarmTopic: TOPIC },
      { [TOPIC]: 0 },
      '  ',
    );
    const result = await doctorStack(deps);
    expect(result.code).toBe(1);
    const lines = linesOf(result.stdout);
    expect(lines['api key']).toBe(
      'FAIL the secret arn:aws:secretsmanager:us-east-1:123456789012:secret:hopper-key-AbCdEf holds no API key: put the key in it',
    );
    expect(lines.service).toBe('skip no API key to present');
    expect(lines.trigger).toMatch(/^ok /);
    expect(lines['alarm topic']).toMatch(
      /^ok \S+ exists, with no confirmed subscription: alarms reach no one/,
    );
  });

  it('fails the alarm topic check of a stack whose outputs name none', async () => {
    const local = await start();
    const deps = await stackDeps(
      local.s3.endpoint,
      { bucket: local.bucket, serviceUrl: local.serviceUrl },
      {},
    );
    const result = await doctorStack(deps);
    expect(result.code).toBe(1);
    expect(linesOf(result.stdout)['alarm topic']).toBe(
      "FAIL the stack's outputs name no alarm topic (it was deployed with an older Hopper); deploy again with this version",
    );
  });
});
