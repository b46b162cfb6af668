/**
 * `hopper local [options]`: local mode for any S3 client. Prints the training service's URL
 * and the S3 settings as lines a shell can eval (everything else on stdout is a `#` comment, so
 * all of it can be eval'd), then serves until Ctrl-C, showing each run's progress on stderr.
 */
import { messageOf } from '../../lambdas/run/errors.js';
import { consoleFor, untilStopped, type LocalConsole } from '../console/index.js';
import { LOCAL_S3_CREDENTIALS, LOCAL_S3_REGION } from '../s3/local-s3.js';
import { HOPPER_SERVICE_URL_ENV, HOPPER_STATE_MACHINE_ENV, SFN_ENDPOINT_ENV } from '../commands/settings.js';
import { formatRunEvent } from './event-bus.js';
import { startLocalMode, type LocalMode } from './local-mode.js';
import { CliUsageError, LOCAL_HELP, parseLocalArgs } from './options.js';
import { describeFailure } from '../../lambdas/run/lambda-error.js';
import { formatProgress, progressOf } from './progress.js';
import { EXIT, interruptSignal, processIo, type CommandIo } from './command-io.js';
import type { ExecutionOutcome } from './state-machine.js';

/**
 * The lines a shell can eval to point an S3 client (aws CLI, SDK) at local mode, and `hopper
 * status`, `runs`, `models` and `retry` (local/commands/) at it too. Never the API key.
 */
export function exportLines(
  local: Pick<LocalMode, 'bucket'> & { s3: { endpoint: string } } & Partial<
      Pick<LocalMode, 'executions' | 'serviceUrl'>
    >,
): string[] {
  return [
    `export AWS_ENDPOINT_URL=${local.s3.endpoint}`,
    `export AWS_ACCESS_KEY_ID=${LOCAL_S3_CREDENTIALS.accessKeyId}`,
    `export AWS_SECRET_ACCESS_KEY=${LOCAL_S3_CREDENTIALS.secretAccessKey}`,
    `export AWS_REGION=${LOCAL_S3_REGION}`,
    `export HOPPER_BUCKET=${local.bucket}`,
    ...(local.executions === undefined
      ? []
      : [
          `export ${SFN_ENDPOINT_ENV}=${local.executions.url}`,
          `export ${HOPPER_STATE_MACHINE_ENV}=${local.executions.stateMachineArn}`,
        ]),
    ...(local.serviceUrl === undefined ? [] : [`export ${HOPPER_SERVICE_URL_ENV}=${local.serviceUrl}`]),
  ];
}

export async function runLocalCommand(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: ReturnType<typeof parseLocalArgs>;
  try {
    parsed = parseLocalArgs(argv);
  } catch (error) {
    if (!(error instanceof CliUsageError)) throw error;
    io.stderr.write(`hopper local: ${error.message}\n`);
    return EXIT.usage;
  }
  if (parsed.kind === 'help') {
    io.stdout.write(LOCAL_HELP);
    return EXIT.succeeded;
  }
  const stop = io.signal ?? interruptSignal();
  let local: LocalMode;
  try {
    local = await startLocalMode(parsed.options.mode);
  } catch (error) {
    io.stderr.write(`hopper local: could not start: ${messageOf(error)}\n`);
    return EXIT.failed;
  }
  let console: LocalConsole | undefined;
  try {
    console = await consoleFor(local, parsed.options.console, parsed.options.mode);
  } catch (error) {
    await local.close();
    io.stderr.write(`hopper local: could not start the console: ${messageOf(error)}\n`);
    return EXIT.failed;
  }
  followRuns(local, io, parsed.options.mode.waitMs);
  const service = `${local.serviceUrl}${local.simulated === undefined ? '' : ' (simulated)'}`;
  io.stdout.write(
    [
      `# Hopper local mode is serving; Ctrl-C stops it.`,
      `# Training service: ${service}`,
      ...(console === undefined ? [] : [`# Console: ${console.url}`]),
      ...(parsed.options.mode.dataDir === undefined
        ? []
        : [`# Data directory: ${parsed.options.mode.dataDir} (the bucket is kept there across restarts)`]),
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
  await untilStopped(stop);
  io.stderr.write('hopper local: stopping\n');
  await console?.close();
  await local.close();
  return EXIT.succeeded;
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

function describeOutcome(outcome: ExecutionOutcome): string {
  if (outcome.status === 'SUCCEEDED') return 'succeeded: the model is under models/';
  if (outcome.status === 'ABORTED') return 'stopped';
  return `failed: ${describeFailure(outcome.error, outcome.cause)}`;
}
