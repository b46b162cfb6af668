/**
 * `hopper doctor [--stack NAME [--hopper ID]]`: checks a Hopper end to end without spending a
 * credit, one line per check with what to do about a failure; exit 0 only when every check holds.
 *
 *   api key        the key is there to read (the stack's secret; HOPPER_API_KEY or the simulated
 *                  service's own in local mode)
 *   service        the training service accepts it: GET /v1/encoders, an authenticated read that costs nothing
 *   bucket events  the bucket sends EventBridge events (GetBucketNotificationConfiguration)
 *   trigger        a probe, inbox/.hopper-doctor/<probe id>/train.json, reaches the trigger within
 *                  --wait, which records it (status/.doctor/<probe id>.json) and starts no run
 *   alarm topic    the stack's alarm topic exists (SNS GetTopicAttributes); local mode has none
 *
 * The API key is never printed: only where it was read from.
 */
import { randomBytes } from 'node:crypto';
import { setTimeout as sleep } from 'node:timers/promises';
import { GetBucketNotificationConfigurationCommand } from '@aws-sdk/client-s3';
import { GetTopicAttributesCommand, SNSClient } from '@aws-sdk/client-sns';
import { messageOf } from '../../lambdas/core/errors/index.js';
import { ServiceError, TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { doctorProbeKey, probeSeenKey } from '../../lambdas/storage/keys.js';
import { deleteObject, putJson, readJson } from '../../lambdas/storage/objects.js';
import type { ProbeSeen } from '../../lambdas/trigger/start-execution.js';
import { EXIT, json, stopSignal, type CommandDeps, type CommandSpec } from './command.js';
import { API_KEY_ENV, targetCommand, TARGET_FLAGS, type Target } from './target.js';

/** How long the probe may take to reach the trigger (--wait), by default and at most. */
export const PROBE_WAIT_SECONDS = { byDefault: 60, max: 900 } as const;
/** How often the doctor looks for the trigger's record of the probe. */
const LOOK_MS = 500;

export const DOCTOR_SPEC: CommandSpec = {
  name: 'doctor',
  usage: '[--stack NAME [--hopper ID]] [options]',
  about:
    "Checks a Hopper end to end without spending a credit, and prints one line per check, with what to do about a failure: the API key is there to read (the stack's secret), the training service accepts it (GET /v1/encoders, which costs nothing), the bucket sends EventBridge events, a probe written to inbox/.hopper-doctor/<probe id>/train.json reaches the trigger within --wait, which records it in status/.doctor/<probe id>.json and starts no run (both are deleted after), and the alarm topic exists (local mode has no alarm topic, and says so). Run it after the first deploy: S3 may take up to five minutes to start sending a new bucket's events (docs/deploy.md). The API key is never printed.",
  flags: {
    wait: {
      value: 'SECONDS',
      range: [1, PROBE_WAIT_SECONDS.max],
      help: `how long the probe may take to reach the trigger (default ${String(PROBE_WAIT_SECONDS.byDefault)})`,
    },
    ...TARGET_FLAGS,
  },
  positionals: { min: 0, max: 0, what: 'arguments', hint: 'hopper doctor --stack NAME' },
  exits: {
    0: 'every check holds',
    1: 'a check failed: its line says what to do',
    2: true,
    130: true,
  },
};

/** One check's outcome: `not_applicable` (local mode's alarm topic) does not fail the doctor. */
export type CheckResult = 'ok' | 'failed' | 'not_checked' | 'not_applicable';

export interface DoctorCheck {
  readonly check: 'api key' | 'service' | 'bucket events' | 'trigger' | 'alarm topic';
  readonly result: CheckResult;
  /** What was found. */
  readonly detail: string;
  /** What to do about a failure. */
  readonly fix?: string;
}

const MARKS: Readonly<Record<CheckResult, string>> = {
  ok: 'ok  ',
  failed: 'FAIL',
  not_checked: 'skip',
  not_applicable: 'n/a ',
};

export const runDoctorCommand = targetCommand(DOCTOR_SPEC, async (args, target, io, deps) => {
  const waitMs = 1000 * (args.number('wait') ?? PROBE_WAIT_SECONDS.byDefault);
  const signal = stopSignal(io);
  const checks: DoctorCheck[] = [];
  const report = (check: DoctorCheck): void => {
    checks.push(check);
    if (!args.on('json')) io.stdout.write(`${lineOf(check)}\n`);
  };
  for (const check of await keyChecks(target, keySource(target, deps.env))) report(check);
  report(await bucketEventsCheck(target));
  report(await triggerCheck(target, waitMs, signal));
  report(await alarmTopicCheck(target, deps));
  if (signal.aborted) {
    io.stderr.write('hopper doctor: stopped\n');
    return EXIT.stopped;
  }
  const healthy = checks.every((check) => check.result === 'ok' || check.result === 'not_applicable');
  if (args.on('json')) io.stdout.write(json({ target: target.label, healthy, checks }));
  return healthy ? EXIT.succeeded : EXIT.failed;
});

function lineOf({ check, result, detail, fix }: DoctorCheck): string {
  return `${MARKS[result]} ${check}: ${detail}${fix === undefined ? '' : `; ${fix}`}`;
}

/** Where the key comes from, for the lines (never the key itself). */
function keySource(target: Target, env: NodeJS.ProcessEnv): string {
  const secret = target.stackHopper?.apiKeySecret;
  if (secret !== undefined) return `the secret ${secret}`;
  return (env[API_KEY_ENV] ?? '').trim() === ''
    ? `the simulated service's own key (${API_KEY_ENV} is not set)`
    : API_KEY_ENV;
}

/** The key read, then an authenticated read at the service that costs nothing (GET /v1/encoders). */
async function keyChecks(target: Target, source: string): Promise<DoctorCheck[]> {
  let service: { readonly url: string; readonly apiKey: string };
  try {
    service = await target.service();
  } catch (error) {
    return [
      { check: 'api key', result: 'failed', detail: messageOf(error) },
      { check: 'service', result: 'not_checked', detail: 'no API key to present' },
    ];
  }
  const keyOk: DoctorCheck = { check: 'api key', result: 'ok', detail: `read from ${source}` };
  const client = new TrainingServiceClient({
    baseUrl: service.url,
    apiKey: service.apiKey,
    maxRetries: 1,
    timeoutMs: 15_000,
  });
  try {
    const encoders = await client.listEncoders();
    const detail = `the training service at ${service.url} accepts the key (GET /v1/encoders: ${String(encoders.length)} encoders)`;
    return [keyOk, { check: 'service', result: 'ok', detail }];
  } catch (error) {
    const refused = error instanceof ServiceError && error.code === 'unauthorized';
    const detail = refused
      ? `the training service at ${service.url} refused the key`
      : `the training service at ${service.url} did not answer GET /v1/encoders: ${messageOf(error)}`;
    const fix = refused
      ? target.stackHopper === null
        ? `set ${API_KEY_ENV} to the training service's API key`
        : `put the service's API key in ${source}, as plain text (docs/deploy.md)`
      : `check the service URL and that it is up; then run hopper doctor again`;
    return [keyOk, { check: 'service', result: 'failed', detail, fix }];
  } finally {
    await client.close();
  }
}

/** Whether S3 sends the bucket's events to EventBridge (its notification configuration says so). */
async function bucketEventsCheck({ s3, bucket }: Target): Promise<DoctorCheck> {
  const fix =
    "deploy again (the Hopper construct turns them on, for an imported bucket too), or turn on 'Amazon EventBridge: send notifications' in the bucket's Properties in the S3 console";
  try {
    const answer = await s3.send(new GetBucketNotificationConfigurationCommand({ Bucket: bucket }));
    return answer.EventBridgeConfiguration === undefined
      ? {
          check: 'bucket events',
          result: 'failed',
          detail: `bucket ${bucket} sends no EventBridge events`,
          fix,
        }
      : { check: 'bucket events', result: 'ok', detail: `bucket ${bucket} sends EventBridge events` };
  } catch (error) {
    const detail = `could not read the notification configuration of bucket ${bucket}: ${messageOf(error)}`;
    return {
      check: 'bucket events',
      result: 'failed',
      detail,
      fix: 'your AWS credentials need s3:GetBucketNotification on the bucket',
    };
  }
}

/**
 * A probe written where the rule sees it and no drop is; the check holds when the trigger has
 * recorded it, within `waitMs`, without starting a run. The probe and its record are deleted.
 */
async function triggerCheck(target: Target, waitMs: number, signal: AbortSignal): Promise<DoctorCheck> {
  const { s3, bucket } = target;
  const probeId = `doctor-${Date.now().toString(36)}-${randomBytes(4).toString('hex')}`;
  const [probeKey, seenKey] = [doctorProbeKey(probeId), probeSeenKey(probeId)];
  const sentAt = Date.now();
  try {
    await putJson(s3, bucket, probeKey, { probe: 'hopper doctor', probe_id: probeId });
  } catch (error) {
    const detail = `could not write the probe s3://${bucket}/${probeKey}: ${messageOf(error)}`;
    return {
      check: 'trigger',
      result: 'failed',
      detail,
      fix: 'your AWS credentials need s3:PutObject on the bucket',
    };
  }
  try {
    const seen = await probeRecord(target, seenKey, sentAt + waitMs, signal);
    if (seen === null) return probeLost(target, probeKey, waitMs);
    if (seen.run_started !== false) {
      const detail = `the trigger saw the probe ${probeKey} but does not say it started no run`;
      return { check: 'trigger', result: 'failed', detail, fix: 'deploy this version of Hopper again' };
    }
    const seconds = ((Date.now() - sentAt) / 1000).toFixed(1);
    const detail = `the probe ${probeKey} reached the trigger within ${seconds} s; it recorded it and started no run`;
    return { check: 'trigger', result: 'ok', detail };
  } finally {
    // Best effort: a probe left behind is a few bytes, and starts nothing.
    await deleteObject(s3, bucket, seenKey).catch(() => undefined);
    await deleteObject(s3, bucket, probeKey).catch(() => undefined);
  }
}

/** The trigger's record of the probe, looked for until `deadline` (null: none by then). */
async function probeRecord(
  { s3, bucket }: Target,
  seenKey: string,
  deadline: number,
  signal: AbortSignal,
): Promise<Partial<ProbeSeen> | null> {
  for (let look = 0; look <= PROBE_WAIT_SECONDS.max * (1000 / LOOK_MS); look++) {
    const record = await readJson(s3, bucket, seenKey);
    if (record !== null) return record.value as Partial<ProbeSeen>;
    const left = deadline - Date.now();
    if (left <= 0 || signal.aborted) return null;
    if (await sleep(Math.min(LOOK_MS, left), false, { signal }).catch(() => true)) return null;
  }
  return null;
}

function probeLost(target: Target, probeKey: string, waitMs: number): DoctorCheck {
  const detail = `the probe ${probeKey} did not reach the trigger within ${String(waitMs / 1000)} s`;
  const warmUp =
    target.stackHopper === null
      ? 'local mode started with an EventBridge warm-up (eventBridgeWarmUpMs) delivers no event until it has passed: run hopper doctor again then'
      : 'S3 may take up to five minutes to start sending a bucket\'s events after they are turned on (a first deploy): run hopper doctor again in five minutes (docs/deploy.md, "Check the deployment")';
  const after =
    target.stackHopper === null
      ? ''
      : "; if it fails again, look at the trigger's log group and its dead-letter queue (docs/operations.md), and that the rule TrainJsonCreated is enabled";
  return { check: 'trigger', result: 'failed', detail, fix: `${warmUp}${after}` };
}

/** The stack's alarm topic exists; local mode has none, which is said, not failed. */
async function alarmTopicCheck(target: Target, { aws }: CommandDeps): Promise<DoctorCheck> {
  const hopper = target.stackHopper;
  if (hopper === null) {
    const detail =
      'local mode has no SNS topic and no alarms (they exist only in a deployed stack): nothing to check';
    return { check: 'alarm topic', result: 'not_applicable', detail };
  }
  const arn = hopper.alarmTopic;
  if (arn === undefined) {
    const detail = "the stack's outputs name no alarm topic (it was deployed with an older Hopper)";
    return { check: 'alarm topic', result: 'failed', detail, fix: 'deploy again with this version' };
  }
  const sns = new SNSClient({ ...aws?.sns });
  try {
    const answer = await sns.send(new GetTopicAttributesCommand({ TopicArn: arn }));
    const confirmed = Number(answer.Attributes?.SubscriptionsConfirmed ?? 0);
    const detail =
      confirmed > 0
        ? `${arn} exists (${String(confirmed)} confirmed subscriptions)`
        : `${arn} exists, with no confirmed subscription: alarms reach no one until someone subscribes (notificationEmail, docs/deploy.md)`;
    return { check: 'alarm topic', result: 'ok', detail };
  } catch (error) {
    const missing = (error as { name?: unknown }).name === 'NotFoundException';
    return {
      check: 'alarm topic',
      result: 'failed',
      detail: missing ? `${arn} does not exist` : `could not read ${arn}: ${messageOf(error)}`,
      fix: missing
        ? 'deploy again; with your own alarmTopic, create that topic first'
        : 'your AWS credentials need sns:GetTopicAttributes on the topic',
    };
  } finally {
    sns.destroy();
  }
}
