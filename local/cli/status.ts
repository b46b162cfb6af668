/**
 * `hopper status [drop]`: status/<drop>.json of one drop, or a table of every drop (state,
 * step, next_action, age, error code), newest first.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { readStatus, statusFiles, type RunStatus } from '../../lambdas/run/status.js';
import {
  CommandError,
  EXIT,
  formatAge,
  json,
  runCommand,
  table,
  TARGET_HELP,
  type CommandDeps,
  type CommandIo,
} from './command.js';

export const STATUS_HELP = `Usage: hopper status [drop] [options]

Shows the latest run of one drop (status/<drop>.json), or a table of every drop: its state, the
service's step and next_action, how long since the status changed, and the error code of a
failed run. Newest first.

Options:
${TARGET_HELP}
`;

export async function runStatusCommand(
  argv: readonly string[],
  io?: CommandIo,
  deps?: CommandDeps,
): Promise<number> {
  return runCommand(
    { name: 'status', help: STATUS_HELP, positionals: { min: 0, max: 1, what: 'drop' } },
    argv,
    async (parsed, target, out, { now = Date.now }) => {
      const drop = parsed.positionals[0];
      if (drop !== undefined) {
        const status = await readStatus(target.s3, target.bucket, drop);
        if (status === null) {
          throw new CommandError(
            `${target.label} has no run of "${drop}" (no s3://${target.bucket}/status/${drop}.json): drop a folder into inbox/${drop}/, train.json last`,
          );
        }
        out.stdout.write(parsed.json ? json(status) : describeStatus(status, now()));
        return EXIT.succeeded;
      }
      const statuses = await allStatuses(target.s3, target.bucket);
      if (parsed.json) out.stdout.write(json(statuses));
      else if (statuses.length === 0) out.stdout.write(`no drops yet in s3://${target.bucket}/\n`);
      else out.stdout.write(statusTable(statuses, now()));
      return EXIT.succeeded;
    },
    io,
    deps,
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
