/**
 * `hopper local [options]`: local mode for any S3 client. Prints the training service's URL
 * and the S3 settings as lines a shell can eval (everything else on stdout is a `#` comment, so
 * all of it can be eval'd), then serves until Ctrl-C, showing each run's progress on stderr.
 */
import { describeFailure, messageOf } from '../../lambdas/core/errors/index.js';
import type { RunState } from '../../lambdas/core/state/index.js';
import { consoleFor, type LocalConsole } from '../console/index.js';
import { formatRunEvent } from '../emulator/event-bus.js';
import { startLocalMode, type LocalMode, type LocalModeOptions } from '../emulator/local-mode.js';
import type { ExecutionOutcome } from '../emulator/state-machine.js';
import { LOCAL_S3_CREDENTIALS, LOCAL_S3_REGION } from '../s3/local-s3.js';
import { CommandError, defineCommand, EXIT, stopSignal, untilStopped, type CommandIo } from './command.js';
import { LOCAL_SPEC, localModeOptions } from './options.js';
import { formatProgress, progressOf } from './progress.js';
import {
  HOPPER_BUCKET_ENV,
  HOPPER_SERVICE_URL_ENV,
  HOPPER_STATE_MACHINE_ENV,
  LOCAL_EXPORTS,
  S3_ENDPOINT_ENV,
  SFN_ENDPOINT_ENV,
} from './target.js';

/**
 * The lines a shell can eval to point an S3 client (aws CLI, SDK) at local mode, and `hopper
 * status`, `runs`, `models` and `retry` (local/cli/) at it too. Never the API key.
 */
export function exportLines(local: LocalMode): string[] {
  const values: Readonly<Record<string, string>> = {
    [S3_ENDPOINT_ENV]: local.s3.endpoint,
    AWS_ACCESS_KEY_ID: LOCAL_S3_CREDENTIALS.accessKeyId,
    AWS_SECRET_ACCESS_KEY: LOCAL_S3_CREDENTIALS.secretAccessKey,
    AWS_REGION: LOCAL_S3_REGION,
    [HOPPER_BUCKET_ENV]: local.bucket,
    [SFN_ENDPOINT_ENV]: local.executions.url,
    [HOPPER_STATE_MACHINE_ENV]: local.executions.stateMachineArn,
    [HOPPER_SERVICE_URL_ENV]: local.serviceUrl,
  };
  return LOCAL_EXPORTS.map((name) => `export ${name}=${String(values[name])}`);
}

export const runLocalCommand = defineCommand(LOCAL_SPEC, async (args, io, { env }) => {
  const options = localModeOptions(args, env, true);
  const stop = stopSignal(io);
  let local: LocalMode;
  try {
    local = await startLocalMode(options.mode);
  } catch (error) {
    throw new CommandError('failed', `could not start: ${messageOf(error)}`);
  }
  let console: LocalConsole | undefined;
  try {
    console = await consoleFor(local, options);
  } catch (error) {
    await local.close();
    throw new CommandError('failed', `could not start the console: ${messageOf(error)}`);
  }
  serve(local, console, options.mode, io);
  await untilStopped(stop);
  io.stderr.write('hopper local: stopping\n');
  await console?.close();
  await local.close();
  return EXIT.succeeded;
});

/** Prints what local mode serves and its export lines, and follows its runs. */
function serve(
  local: LocalMode,
  console: LocalConsole | undefined,
  { dataDir, waitMs }: LocalModeOptions,
  io: CommandIo,
): void {
  followRuns(local, io, waitMs);
  const service = `${local.serviceUrl}${local.simulated === undefined ? '' : ' (simulated)'}`;
  io.stdout.write(
    [
      `# Hopper local mode is serving; Ctrl-C stops it.`,
      `# Training service: ${service}`,
      ...(console === undefined ? [] : [`# Console: ${console.url}`]),
      ...(dataDir === undefined
        ? []
        : [`# Data directory: ${dataDir} (the bucket is kept there across restarts)`]),
      ...local.interrupted.map(
        (drop) =>
          `# Run of ${drop} interrupted by the last stop: hopper retry ${drop} resumes it (hopper status ${drop} says how)`,
      ),
      `# Drop a folder (train.json last), e.g. with the aws CLI after eval'ing the lines below:`,
      `#   aws --endpoint-url "$AWS_ENDPOINT_URL" s3 cp --recursive --exclude train.json <folder> "s3://$HOPPER_BUCKET/inbox/<drop>/"`,
      `#   aws --endpoint-url "$AWS_ENDPOINT_URL" s3 cp <folder>/train.json "s3://$HOPPER_BUCKET/inbox/<drop>/"`,
      ...exportLines(local),
      '',
    ].join('\n'),
  );
}

/**
 * A line per Task or Wait state of every run, one when a run ends, and one per run event put on
 * the local bus (all on stderr: stdout stays eval-able).
 */
function followRuns(local: LocalMode, io: CommandIo, waitMs: number | undefined): void {
  local.events.on('event', (event) => {
    io.stderr.write(`${event.detail.drop}  ${formatRunEvent(event)}\n`);
  });
  local.stateMachine.on('event', (execution, event) => {
    const progress = progressOf(event, waitMs);
    if (progress === null) return;
    const elapsed = Date.now() - execution.startedAt;
    io.stderr.write(`${execution.input.run.drop}  ${formatProgress(elapsed, progress)}\n`);
  });
  local.stateMachine.on('done', (execution, outcome) => {
    io.stderr.write(`${execution.input.run.drop}  ${describeOutcome(outcome)} (run ${execution.name})\n`);
  });
}

/** The line `hopper local` prints when a run ends. */
export function describeOutcome(outcome: ExecutionOutcome): string {
  if (outcome.status === 'SUCCEEDED') {
    // A run a newer train.json took over ends in a Succeed state too (Superseded), with its report.
    const report = (outcome.output as Pick<RunState, 'report'> | null)?.report;
    if (report?.outcome === 'superseded')
      return `superseded: ${report.error?.message ?? 'a newer train.json took over'}`;
    return 'succeeded: the model is under models/';
  }
  if (outcome.status === 'ABORTED') return 'stopped';
  return `failed: ${describeFailure(outcome.error, outcome.cause)}`;
}
