/**
 * A run Step Functions stopped at the execution's TimeoutSeconds, as local mode runs it: the
 * console, `hopper runs` and `hopper wait` give it one name (lambdas/core/state/vocabulary.ts),
 * read through the real executions endpoint, the local S3 and the commands.
 */
import { PutObjectCommand } from '@aws-sdk/client-s3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { RunStatus } from '../../lambdas/records/status/index.js';
import { statusKey } from '../../lambdas/storage/keys.js';
import { runRunsCommand } from '../../local/cli/runs.js';
import { runWaitCommand } from '../../local/cli/wait.js';
import { RunLog, summarize } from '../../local/console/run-log.js';
import { startExecutionsEndpoint } from '../../local/emulator/executions-endpoint.js';
import { LOCAL_STATE_MACHINE_ARN, LocalStateMachine } from '../../local/emulator/state-machine.js';
import { LOCAL_S3_CREDENTIALS, startLocalS3, type LocalS3 } from '../../local/s3/local-s3.js';
import { withTimeout } from '../../testkit/timeout.js';
import { runCommandCaptured } from '../helpers/commands.js';

const DROP = 'slow';
const NAME = `${DROP}-${'f'.repeat(32)}`;

let s3: LocalS3;
let machine: LocalStateMachine;
let endpoint: Awaited<ReturnType<typeof startExecutionsEndpoint>>;

beforeEach(async () => {
  s3 = await startLocalS3();
  // A Wait of 30 s in an execution allowed 1 s: Step Functions stops it as TIMED_OUT.
  machine = new LocalStateMachine({
    definition: {
      StartAt: 'Sleep',
      TimeoutSeconds: 1,
      States: { Sleep: { Type: 'Wait', Seconds: 30, End: true } },
    },
    tasks: {},
  });
  endpoint = await startExecutionsEndpoint(machine);
});

afterEach(async () => {
  await machine.stopAll();
  await Promise.all([endpoint.close(), s3.close()]);
});

function env(): NodeJS.ProcessEnv {
  return {
    AWS_ENDPOINT_URL: s3.endpoint,
    AWS_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
    AWS_REGION: 'us-east-1',
    HOPPER_BUCKET: s3.bucket,
    AWS_ENDPOINT_URL_SFN: endpoint.url,
    HOPPER_STATE_MACHINE_ARN: LOCAL_STATE_MACHINE_ARN,
  };
}

/** The status file of a run whose Report never ran: it still says running. */
function runningStatus(): RunStatus {
  const at = new Date().toISOString();
  return {
    run_id: NAME,
    drop: DROP,
    state: 'running',
    hopper_step: 'poll_model',
    step: 4,
    next_action: 'wait',
    dataset_id: null,
    model_id: null,
    attempts: 1,
    max_attempts: 2,
    labelled: 0,
    files: [],
    labels: null,
    summary: null,
    started_at: at,
    updated_at: at,
    finished_at: null,
    error: null,
    model: null,
    paid_model: null,
    config_fingerprint: null,
    waiting_for: null,
    copy_put_off: null,
  };
}

async function timedOutRun(): Promise<RunLog> {
  const log = new RunLog(machine);
  const run = {
    runId: NAME,
    bucket: s3.bucket,
    drop: DROP,
    key: `inbox/${DROP}/train.json`,
    etag: 'e',
    startedAt: new Date().toISOString(),
  };
  await machine.start(NAME, { run });
  const execution = machine.execution(NAME);
  if (execution === undefined) throw new Error('the execution did not start');
  await withTimeout(execution.done, 'the execution to time out', 10_000);
  return log;
}

describe('a run that timed out', () => {
  it('is timed_out in the console and in hopper runs alike', async () => {
    const log = await timedOutRun();
    const logged = log.run(NAME);
    if (logged === undefined) throw new Error('the console kept no run');
    expect(summarize(logged).state).toBe('timed_out');

    const runs = await runCommandCaptured(runRunsCommand, [DROP, '--json'], env());
    expect(runs.stderr).toBe('');
    expect((JSON.parse(runs.stdout) as { outcome: string }[]).map((run) => run.outcome)).toEqual([
      'timed_out',
    ]);
    log.close();
  });

  it('ends hopper wait with exit 5, though its status file, which no report wrote, says running', async () => {
    (await timedOutRun()).close();
    const status = runningStatus();
    await s3.client.send(
      new PutObjectCommand({ Bucket: s3.bucket, Key: statusKey(DROP), Body: JSON.stringify(status) }),
    );
    const waited = await runCommandCaptured(runWaitCommand, [DROP], env());
    expect(waited).toMatchObject({ code: 5, stderr: '' });
    expect(waited.stdout).toMatch(new RegExp(`^${DROP}: timed_out\\ndrop +${DROP}\\nrun +${NAME}\\n`));
    const asJson = await runCommandCaptured(runWaitCommand, [DROP, '--json'], env());
    expect(asJson.code).toBe(5);
    expect(JSON.parse(asJson.stdout)).toEqual({ drop: DROP, outcome: 'timed_out', status });
  });
});
