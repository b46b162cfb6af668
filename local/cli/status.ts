/**
 * `hopper status [drop]`: status/<drop>.json of one drop, or a table of every drop (state,
 * step, next_action, age, error code), newest first. `hopper wait` (wait.ts) reads the same
 * status until the drop's latest run ends.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { readCreditUse, type WindowUse } from '../../lambdas/ownership/index.js';
import { readStatus, statusFiles, type RunStatus } from '../../lambdas/records/status/index.js';
import { CliUsageError, CommandError, EXIT, formatAge, json, table, type CommandSpec } from './command.js';
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

/** The error of a drop without a run: nothing under status/ for it. */
export function noRun(target: Target, drop: string): CommandError {
  return new CommandError(
    'not_found',
    `${target.label} has no run of "${drop}" (no s3://${target.bucket}/status/${drop}.json): drop a folder into inbox/${drop}/, train.json last`,
  );
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
