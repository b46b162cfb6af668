/**
 * `hopper wait <drop>`: the drop's status (as `hopper status` reads it, status.ts) read until its
 * latest run ends, and the command's exit code by how it ended, for scripts.
 */
import { HeadObjectCommand } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { setTimeout as sleep } from 'node:timers/promises';
import { listedRunState, type ListedRunState } from '../../lambdas/core/state/index.js';
import { readStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { nullIfNotFound } from '../../lambdas/storage/objects.js';
import { executionArnOf } from '../../lambdas/core/state/index.js';
import { CommandError, EXIT, json, stopSignal, type CommandSpec } from './command.js';
import { describeStatus, noRun } from './status.js';
import { targetCommand, TARGET_FLAGS, type Target } from './target.js';

/** `hopper wait`'s --timeout by default (as `aws cloudformation wait`), and at most (15 days, a run's longest). */
const WAIT_SECONDS = { byDefault: 3600, max: 15 * 24 * 3600 } as const;
/** It looks after 1 s, then half as long again each time, at most every 15 s. */
const LOOK_MS = { first: 1000, max: 15_000 } as const;

export const WAIT_SPEC: CommandSpec = {
  name: 'wait',
  usage: '<drop> [options]',
  about:
    "Waits until the drop's latest run ends (the run of its train.json as last uploaded, which may not have started yet), prints how it ended, and exits by it, for scripts: as `aws cloudformation wait` and `kubectl wait` do. It reads status/<drop>.json as hopper status does, and for a run still running its execution, after 1 s and then less and less often, at most every 15 s.",
  flags: {
    timeout: {
      value: 'SECONDS',
      range: [1, WAIT_SECONDS.max],
      help: `give up after SECONDS (default ${String(WAIT_SECONDS.byDefault)})`,
    },
    ...TARGET_FLAGS,
  },
  positionals: { min: 1, max: 1, what: 'drop', hint: 'hopper wait reviews' },
  exits: {
    0: 'the run succeeded',
    1: 'the run failed, was interrupted, stopped or superseded, or the drop has no run: the message says why and what to do',
    2: true,
    5: true,
    124: true,
    130: true,
  },
};

export const runWaitCommand = targetCommand(WAIT_SPEC, async (args, target, io) => {
  const drop = args.positionals[0] ?? '';
  const timeoutMs = 1000 * (args.number('timeout') ?? WAIT_SECONDS.byDefault);
  const deadline = Date.now() + timeoutMs;
  const signal = stopSignal(io);
  let pause: number = LOOK_MS.first;
  // Every look but the last is followed by a pause of at least LOOK_MS.first.
  for (let look = 0; look <= timeoutMs / LOOK_MS.first; look++) {
    const run = await latestRun(target, drop);
    if (run !== null && run.state !== 'running') {
      const { state, status } = run;
      io.stdout.write(
        args.on('json')
          ? json({ drop, outcome: state, status })
          : `${drop}: ${state}\n${describeStatus(status, Date.now())}`,
      );
      return state === 'succeeded' ? EXIT.succeeded : state === 'timed_out' ? EXIT.timedOut : EXIT.failed;
    }
    const left = deadline - Date.now();
    if (left <= 0) break;
    if (await sleep(Math.min(pause, left), false, { signal }).catch(() => true)) {
      io.stderr.write('hopper wait: stopped\n');
      return EXIT.stopped;
    }
    pause = Math.min(pause * 1.5, LOOK_MS.max);
  }
  throw new CommandError(
    'still_running',
    `the latest run of "${drop}" had not ended after ${String(timeoutMs / 1000)} s: hopper status ${drop} shows where it is; wait again, with a longer --timeout`,
    EXIT.stillRunning,
  );
});

/** How a drop's latest run stands (its execution's word for one gone quiet), and its status file. */
interface LatestRun {
  readonly state: ListedRunState;
  readonly status: RunStatus;
}

/**
 * The drop's latest run, or null while the run of a newer upload of train.json has written no
 * status yet. A run whose status says running but whose execution ended without a report
 * (timed out, stopped) is as its execution says.
 */
async function latestRun(target: Target, drop: string): Promise<LatestRun | null> {
  const [status, uploaded] = await Promise.all([
    readStatus(target.s3, target.bucket, drop),
    trainJsonUploaded(target, drop),
  ]);
  if (status === null && uploaded === null) throw noRun(target, drop);
  // A run starts when its train.json arrived, which S3 keeps to the second.
  if (status === null || (uploaded !== null && Date.parse(status.started_at) < uploaded)) return null;
  if (status.state !== 'running' || target.stateMachine === null) return { state: status.state, status };
  const { client, arn } = target.stateMachine;
  const execution = await client
    .send(new DescribeExecutionCommand({ executionArn: executionArnOf(arn, status.run_id) }))
    .catch((error: unknown) => {
      // One Step Functions no longer keeps (or a stopped local mode's) says nothing.
      if ((error as Error).name === 'ExecutionDoesNotExist') return undefined;
      throw error;
    });
  return { state: listedRunState(execution?.status), status };
}

/** When the drop's train.json was last uploaded, or null without one. */
async function trainJsonUploaded({ s3, bucket }: Target, drop: string): Promise<number | null> {
  const head = await s3
    .send(new HeadObjectCommand({ Bucket: bucket, Key: inboxKey(drop, TRAIN_JSON) }))
    .catch(nullIfNotFound);
  return head?.LastModified?.getTime() ?? null;
}
