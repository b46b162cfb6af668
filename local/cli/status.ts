/**
 * `hopper status [drop]`: status/<drop>.json of one drop, or a table of every drop (state,
 * step, next_action, age, error code), newest first. `hopper wait <drop>`: the same status read
 * until the drop's latest run ends.
 */
import { HeadObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { DescribeExecutionCommand } from '@aws-sdk/client-sfn';
import { setTimeout as sleep } from 'node:timers/promises';
import { readCreditUse, type WindowUse } from '../../lambdas/run/lock/index.js';
import { listedRunState } from '../../lambdas/run/state/index.js';
import { readStatus, statusFiles, type RunStatus } from '../../lambdas/run/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { nullIfNotFound } from '../../lambdas/storage/objects.js';
import { executionArnOf } from '../../lambdas/trigger/start-execution.js';
import {
  CliUsageError,
  CommandError,
  EXIT,
  formatAge,
  json,
  stopSignal,
  table,
  type CommandSpec,
} from './command.js';
import { consoleLinks } from './stack-hoppers.js';
import { targetCommand, TARGET_FLAGS, type Target } from './target.js';

export const STATUS_SPEC: CommandSpec = {
  name: 'status',
  usage: '[drop] [options]',
  about:
    "Shows the latest run of one drop (status/<drop>.json), or a table of every drop: its state, the service's step and next_action, how long since the status changed, and the error code of a failed run, newest first, and the credit budget's use.",
  flags: {
    links: {
      help: "with --stack: print the AWS console's pages of the stack's Hopper instead (state machine, dashboard, bucket)",
    },
    ...TARGET_FLAGS,
  },
  positionals: { min: 0, max: 1, what: 'drop', hint: 'hopper status reviews' },
  exits: { 0: true, 1: true, 2: true },
};

export const runStatusCommand = targetCommand(STATUS_SPEC, async (args, target, out, { now = Date.now }) => {
  const drop = args.positionals[0];
  const asJson = args.on('json');
  if (args.on('links')) {
    if (target.stackHopper === null)
      throw new CliUsageError("--links shows a deployed stack's pages: give --stack NAME");
    const links = consoleLinks(target.stackHopper);
    out.stdout.write(
      asJson
        ? json(links)
        : table(
            ['PAGE', 'URL'],
            Object.entries(links).map(([page, url]) => [LINK_NAMES[page] ?? page, url]),
          ),
    );
    return EXIT.succeeded;
  }
  if (drop !== undefined) {
    const status = await readStatus(target.s3, target.bucket, drop);
    if (status === null) throw noRun(target, drop);
    out.stdout.write(asJson ? json(status) : describeStatus(status, now()));
    return EXIT.succeeded;
  }
  const statuses = await allStatuses(target.s3, target.bucket);
  if (asJson) out.stdout.write(json(statuses));
  else if (statuses.length === 0) out.stdout.write(`no drops yet in s3://${target.bucket}/\n`);
  else out.stdout.write(statusTable(statuses, now()));
  if (!asJson) out.stdout.write(budgetLines(await readCreditUse(target.s3, target.bucket, now())));
  return EXIT.succeeded;
});

const LINK_NAMES: Readonly<Record<string, string>> = {
  stateMachine: 'state machine',
  dashboard: 'dashboard',
  bucket: 'bucket',
};

function noRun(target: Target, drop: string): CommandError {
  return new CommandError(
    'not_found',
    `${target.label} has no run of "${drop}" (no s3://${target.bucket}/status/${drop}.json): drop a folder into inbox/${drop}/, train.json last`,
  );
}

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

/**
 * The drop's latest run, or null while the run of a newer upload of train.json has written no
 * status yet. A run whose status says running but whose execution ended without a report
 * (timed out, stopped) is as its execution says.
 */
async function latestRun(target: Target, drop: string) {
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

/** Every drop's status, newest change first. */
export async function allStatuses(s3: S3Client, bucket: string): Promise<RunStatus[]> {
  const statuses: RunStatus[] = [];
  for await (const { drop } of statusFiles(s3, bucket)) {
    const status = await readStatus(s3, bucket, drop);
    if (status !== null) statuses.push(status);
  }
  return statuses.sort((a, b) => b.updated_at.localeCompare(a.updated_at));
}

export function statusTable(statuses: readonly RunStatus[], now: number): string {
  return table(
    ['DROP', 'STATE', 'STEP', 'NEXT_ACTION', 'AGE', 'ERROR'],
    statuses.map((status) => [
      status.drop,
      status.state,
      status.step === null ? '-' : String(status.step),
      status.next_action ?? '-',
      formatAge(now - Date.parse(status.updated_at)),
      status.error?.code ?? '',
    ]),
  );
}

/** The credit budget's use, a line per window, from its ledger (none before a credit was taken). */
function budgetLines(uses: readonly WindowUse[]): string {
  return uses
    .map(({ window, limit, used, freesAt }) => {
      const share = `${String(Math.round((100 * used) / limit))}%${used < limit ? '' : `; used up until ${freesAt}`}`;
      return `credit budget: ${String(used)} of ${String(limit)} credits taken in the last ${window} (${share})\n`;
    })
    .join('');
}

export function describeStatus(status: RunStatus, now: number): string {
  const lines: [string, string][] = [
    ['drop', status.drop],
    ['run', status.run_id],
    ['state', status.state],
    ['hopper_step', status.hopper_step],
    ['step', status.step === null ? '-' : String(status.step)],
    ['next_action', status.next_action ?? '-'],
    ['dataset', status.dataset_id ?? '-'],
    ['model', status.model_id ?? '-'],
    ['attempts', `${String(status.attempts)} of ${String(status.max_attempts ?? '?')}`],
    ['started', status.started_at],
    ['updated', `${status.updated_at} (${formatAge(now - Date.parse(status.updated_at))} ago)`],
  ];
  if (status.error !== null) lines.push(['error', `${status.error.code}: ${status.error.message}`]);
  const putOff = status.copy_put_off;
  if (putOff != null) {
    lines.push([
      'copy put off',
      `failing since ${putOff.failing_since} (${putOff.reason}); next try ${putOff.next_try_at}, files kept until ${putOff.files_deadline}`,
    ]);
  }
  if (status.model !== null)
    lines.push(['model.onnx', status.model.onnx], ['model.json', status.model.record]);
  const width = Math.max(...lines.map(([label]) => label.length));
  return `${lines.map(([label, value]) => `${label.padEnd(width)}  ${value}`).join('\n')}\n`;
}
