/**
 * Every AWS call Hopper's functions make, recorded from local runs that together take every path
 * that calls AWS (test/helpers/aws-call-recorder.ts), must be the set kept in
 * local/permissions/recorded-calls.json, which `hopper permissions` checks against the template:
 * a call no kept entry names would go unchecked, an entry no path makes any more is stale.
 * HOPPER_UPDATE_PERMISSIONS=1 rewrites the file (then run `npm run permissions`).
 *
 * The paths: a plain run with labels whose API key is read through Secrets Manager (a loopback
 * stand-in of its JSON protocol) and whose first copy fails mid-way and aborts its multipart
 * upload; a sweep with promotion, one encoder failing (its credit refunded to the budget) and
 * `hopper retry` resuming it; a second run of the drop (lineage against the current model); a
 * run superseded by a newer train.json; a failed run's report; a run the credit budget refuses;
 * a run taking over the training claim of a run whose execution has ended (DescribeExecution);
 * `hopper doctor`'s probe, which the trigger records; the trigger and the run events all along.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { SecretsProvider } from '@aws-lambda-powertools/parameters/secrets';
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { SecretsManagerClient } from '@aws-sdk/client-secrets-manager';
import { afterAll, describe, expect, it } from 'vitest';
import { secretsManagerKey } from '../../lambdas/runtime/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import { inboxKey, trainingClaimKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { runDoctorCommand } from '../../local/cli/doctor.js';
import { runRetryCommand } from '../../local/cli/retry.js';
import { AwsCallRecorder } from '../helpers/aws-call-recorder.js';
import type { LocalMode, LocalModeOptions } from '../../local/emulator/local-mode.js';
import { CLIENT_SETTINGS, startAwsJsonEndpoint } from '../helpers/aws-json-endpoint.js';
import { runCommandCaptured, settingsOf } from '../helpers/commands.js';
import { REVIEWS_FILES as DATA } from '../helpers/fixtures.js';
import {
  dropAndRun,
  finished,
  nextExecution,
  stateReached,
  useLocalMode,
  wrapOnly,
} from '../helpers/local-mode.js';
import { gate } from '../../testkit/timeout.js';
import { putDrop } from '../helpers/pipeline.js';

const fixture = useLocalMode();
const recorder = new AwsCallRecorder();
const MiB = 1024 * 1024;
const API_KEY = 'recorded-key';
const ENCODERS = [
  { id: 'enc-a', name: 'A', default: true },
  { id: 'enc-b', name: 'B', default: false },
];

/** Secrets Manager's GetSecretValue over loopback, answering the simulated service's key. */
async function secretsStandIn(): Promise<{ apiKey: LocalModeOptions['apiKey']; close(): Promise<void> }> {
  const endpoint = await startAwsJsonEndpoint('application/x-amz-json-1.1', () => ({
    status: 200,
    body: { ARN: 'arn:aws:secretsmanager:us-east-1:1:secret:k', Name: 'k', SecretString: API_KEY },
  }));
  const client = new SecretsManagerClient({ ...CLIENT_SETTINGS, endpoint: endpoint.url });
  recorder.attach(client);
  return {
    // Read anew by each invocation, as by each function's own container in Lambda (local mode
    // runs all functions in one process: one cache would hide all reads but the first).
    apiKey: () => secretsManagerKey('hopper/api-key', new SecretsProvider({ awsSdkV3Client: client }))(),
    async close() {
      client.destroy();
      await endpoint.close();
    },
  };
}

/**
 * The first UploadPart fails (the copy aborts its multipart upload); the first part of the next
 * upload stores 10 bytes short (the size check deletes the copy, which is made again later).
 */
function spoilParts(local: LocalMode): void {
  const spoilt: string[] = [];
  local.functionS3('CopyModel')!.middlewareStack.add(
    (next, context) => (args) => {
      const input = args.input as { UploadId?: string; Body?: unknown };
      if (context.commandName !== 'UploadPartCommand' || spoilt.length >= 2) return next(args);
      if (spoilt.includes(input.UploadId ?? '')) return next(args);
      spoilt.push(input.UploadId ?? '');
      if (spoilt.length === 1) return Promise.reject(new Error('a part lost on the way (test)'));
      if (Buffer.isBuffer(input.Body)) input.Body = input.Body.subarray(10);
      return next(args);
    },
    { step: 'initialize', name: 'spoilParts' },
  );
}

/** Runs `drop` (by `train`) to its end; the run's state and error code. */
async function run(
  local: LocalMode,
  drop: string,
  train: object,
  files: Readonly<Record<string, string>> = DATA,
) {
  const ended = await dropAndRun(local, drop, { ...files, [TRAIN_JSON]: JSON.stringify(train) });
  return [ended.status?.state, ended.status?.error?.code ?? null];
}

/** train.json of `drop` uploaded again as the first run reaches CreateDataset: the first gives way. */
async function superseded(local: LocalMode, drop: string, hold: { reached: Promise<void>; release(): void }) {
  const first = nextExecution(local, inboxKey(drop, TRAIN_JSON));
  await putDrop(local.s3.client, local.bucket, drop, { ...DATA, [TRAIN_JSON]: '{}' });
  await hold.reached;
  const second = nextExecution(local, inboxKey(drop, TRAIN_JSON));
  await putDrop(local.s3.client, local.bucket, drop, { [TRAIN_JSON]: '{"maxAttempts": 2}' });
  await stateReached(local, (await second.execution).name, 'CreateDataset');
  hold.release();
  await finished(local, await first.execution);
  const newer = await finished(local, await second.execution);
  const gaveWay = local.events.events().filter((event) => event['detail-type'] === 'Hopper Run Superseded');
  return [gaveWay.length, newer.status?.state];
}

describe('the AWS calls of every path', { timeout: 120_000 }, () => {
  const secrets = secretsStandIn();
  afterAll(async () => (await secrets).close());

  it('a plain run, a sweep, a retry, promotion, a superseded run, a failed run and a refused one', async () => {
    const reached = gate();
    const release = gate();
    const supersedeDrop = 'superseded';
    let failTraining = true;
    const wrapTask: LocalModeOptions['wrapTask'] = (name, lambda) => {
      if (name === 'StartTraining') {
        return wrapOnly(name, (inner) => (input) => {
          if (failTraining && (input as RunState).model?.nextEncoder === 'enc-b') {
            failTraining = false;
            local.simulated?.configure({ failTrainings: 1 });
          }
          return inner(input);
        })(name, lambda);
      }
      if (name !== 'CreateDataset') return lambda;
      let held = false;
      return async (input) => {
        // The older run of the superseded drop waits here until the newer one has taken over.
        if (!held && (input as RunState).run.drop === supersedeDrop) {
          held = true;
          reached.open();
          await release.opened;
        }
        return lambda(input);
      };
    };
    const local = await fixture.start({
      recorder,
      apiKey: (await secrets).apiKey,
      creditBudget: { perDay: 100 },
      wrapTask,
      simulated: { apiKey: API_KEY, encoders: ENCODERS, modelBytes: 9 * MiB },
    });
    spoilParts(local);

    // The copy's upload is aborted and the run fails; the sweep and the refused test run plain successes.
    expect(await run(local, 'copy-fails', {})).toEqual(['failed', 'internal_error']);
    const sweep = {
      decisions: 'suggested',
      encoders: ['enc-a', 'enc-b'],
      maxAttempts: 1,
      promote: { metric: 'f1', min_delta: 0 },
    };
    expect(await run(local, 'sweep', sweep)).toEqual(['failed', 'training_failed']);
    const resumed = nextExecution(local, inboxKey('sweep', TRAIN_JSON));
    const retried = await runCommandCaptured(
      runRetryCommand,
      ['sweep', '--max-attempts', '2'],
      settingsOf(local),
    );
    expect(retried).toMatchObject({ code: 0 });
    expect((await finished(local, await resumed.execution)).status?.state).toBe('succeeded');
    expect(await run(local, 'sweep', { promote: { metric: 'f1', min_delta: 0 } }, {})).toEqual([
      'succeeded',
      null,
    ]);
    expect(
      await superseded(local, supersedeDrop, {
        reached: reached.opened,
        release: () => {
          release.open();
        },
      }),
    ).toEqual([1, 'succeeded']);
    expect(await run(local, 'bad', { maxAttempts: 'many' })).toEqual(['failed', 'invalid_train_json']);
  });

  it('a run the credit budget refuses', async () => {
    const local = await fixture.start({ recorder, creditBudget: { perDay: 1 } });
    expect(await run(local, 'first', {})).toEqual(['succeeded', null]);
    expect(await run(local, 'refused', {})).toEqual(['failed', 'credit_budget']);
  });

  it('a run taking over the training claim of a run whose execution has ended', async () => {
    const local = await fixture.start({ recorder });
    const claim = { run_id: 'gone-run', dataset_id: 'ds-gone', model_id: null, started_at: null };
    const now = new Date().toISOString();
    await local.s3.client.send(
      new PutObjectCommand({
        Bucket: local.bucket,
        Key: trainingClaimKey('taker'),
        Body: JSON.stringify({ ...claim, claimed_at: now }),
      }),
    );
    expect(await run(local, 'taker', {})).toEqual(['succeeded', null]);
  });

  it("hopper doctor's probe, which the trigger records (and starts no run)", async () => {
    const local = await fixture.start({ recorder });
    const doctor = await runCommandCaptured(runDoctorCommand, ['--wait', '30'], settingsOf(local));
    expect(doctor).toMatchObject({ code: 0 });
  });

  it('are the calls kept in local/permissions/recorded-calls.json, no more and no fewer', () => {
    const file = new URL('../../local/permissions/recorded-calls.json', import.meta.url);
    const calls = recorder.calls();
    if (process.env.HOPPER_UPDATE_PERMISSIONS === '1') {
      writeFileSync(file, `${JSON.stringify(calls, null, 2)}\n`);
    }
    expect(JSON.parse(readFileSync(file, 'utf8'))).toEqual(calls);
  });
});
