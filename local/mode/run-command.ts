/**
 * `hopper run <folder> [options]` (and `npm start`): local mode for one drop. Starts the local
 * S3 server, the simulated service (unless --service-url) and the state machine; drops the
 * folder as inbox/<folder name>/, train.json last; shows the run's progress; and copies the
 * model to <out>/<drop>/. Exit codes: 0 succeeded, 1 failed, 2 bad command line, folder or
 * --out, 3 the model could not be saved to --out (it is kept and said where), 4 a training of
 * this folder's dataset is still under way at the service (an earlier run that was stopped), 130
 * stopped. Stopped, it says what it left at the service (left-at-service.ts).
 */
import { join, posix } from 'node:path';
import { defaultName } from '../../lambdas/drop/validate.js';
import { messageOf } from '../../lambdas/run/errors.js';
import type { LocalConsole } from '../console/index.js';
import { readStatus } from '../../lambdas/run/status.js';
import { copiedModel, type CopySlot, type RunState } from '../../lambdas/run/state.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import { DropFolderError, readDropFolder, uploadDropFolder, type DropFolder } from './drop-folder.js';
import type { LocalMode } from './local-mode.js';
import { copyModelOut, MODEL_FILES } from './model-out.js';
import { OutFolderError, prepareOutFolder, type OutFolder } from './out-folder.js';
import { CliUsageError, parseRunArgs, RUN_HELP } from './options.js';
import { describeFailure } from '../../lambdas/run/lambda-error.js';
import { formatBytes, progressOf, reporterFor } from './progress.js';
import type { ExecutionOutcome } from './state-machine.js';
import { EXIT, interruptSignal, processIo, type CommandIo } from './command-io.js';

/** How long train.json's upload may go without its run starting (the trigger is in-process). */
const START_TIMEOUT_MS = 30_000;

/** How long a stopped command spends finding out what it left at the service. */
const LEFTOVERS_TIMEOUT_MS = 20_000;

export async function runRunCommand(argv: readonly string[], io: CommandIo = processIo()): Promise<number> {
  let parsed: ReturnType<typeof parseRunArgs>;
  let folder: DropFolder;
  let out: OutFolder;
  try {
    parsed = parseRunArgs(argv);
    if (parsed.kind === 'help') {
      io.stdout.write(RUN_HELP);
      return EXIT.succeeded;
    }
    folder = await readDropFolder(parsed.folder);
    // Before the run: a model paid for must have somewhere to go.
    out = await prepareOutFolder(parsed.out, folder.drop);
  } catch (error) {
    if (!(
      error instanceof CliUsageError ||
      error instanceof DropFolderError ||
      error instanceof OutFolderError
    ))
      throw error;
    io.stderr.write(`hopper run: ${error.message}\n`);
    return EXIT.usage;
  }

  const startedAt = Date.now();
  const stop = io.signal ?? interruptSignal();
  let local: LocalMode | undefined;
  let console: LocalConsole | undefined;
  const reporter = reporterFor(io.stdout, startedAt);
  const datasetName = folder.trainJson?.name ?? defaultName(folder.drop);
  // The run's latest state, from the execution's events: the dataset it made, once it has.
  let latest: RunState | undefined;
  // Loaded only now: a refused command line or folder answers without loading local mode.
  const [{ startLocalMode }, { consoleFor, untilStopped }, { trainingsUnderWay }] = await Promise.all([
    import('./local-mode.js'),
    import('../console/index.js'),
    import('./left-at-service.js'),
  ]);
  try {
    const triggerFailed = new AbortController();
    local = await startLocalMode({
      ...parsed.options.mode,
      // hopper run uploads the folder itself, train.json last: nothing else arrives after it.
      dropQuietMs: 0,
      onTriggerError: (key, error) => {
        triggerFailed.abort(new Error(`the S3 event for ${key} started no run: ${messageOf(error)}`));
      },
    });
    console = await consoleFor(local, parsed.options.console, parsed.options.mode);
    if (console !== undefined) reporter.line(`hopper: console at ${console.url}`);
    reporter.line(
      `hopper: local mode: S3 at ${local.s3.endpoint} (bucket ${local.bucket}), training service at ${local.serviceUrl}${local.simulated === undefined ? '' : ' (simulated)'}`,
    );
    const waitMs = parsed.options.mode.waitMs;
    // Listening before the upload: the run starts while train.json's PutObject is answered.
    const execution = local.stateMachine.nextStarted(
      (started) => started.input.run.key === inboxKey(folder.drop, TRAIN_JSON),
      {
        signal: AbortSignal.any([stop, triggerFailed.signal]),
        onEvent: (event) => {
          const state = (event as { state?: { input?: unknown; output?: unknown } }).state;
          const seen = (state?.output ?? state?.input) as RunState | undefined;
          if (seen?.run !== undefined) latest = seen;
          const progress = progressOf(event, waitMs);
          if (progress !== null) reporter.update(progress);
        },
      },
    );
    // Awaited after the upload; a Ctrl-C during it must not count as an unhandled rejection.
    execution.catch(() => undefined);
    // An earlier `hopper run` of this folder, stopped, may have left its training going: a
    // second one would spend a second credit for the same drop.
    const underWay = await trainingsUnderWay(await local.service(), datasetName);
    const busy = underWay[0];
    if (busy !== undefined) {
      reporter.finish();
      io.stderr.write(
        `hopper run: a training of a dataset named "${datasetName}" is still under way at the training service (${local.serviceUrl}): model ${busy.model.id} (${busy.model.status}) of dataset ${busy.dataset.id}, started ${busy.model.created_at}, holding 1 credit; most likely an earlier \`hopper run\` of this folder that was stopped. Starting another would spend a second credit for the same drop, so nothing was started. Wait until it ends (\`hopper models --dataset ${busy.dataset.id}\`), then run again; or set another "name" in train.json to train alongside it\n`,
      );
      return EXIT.busy;
    }
    reporter.line(
      `hopper: dropping ${parsed.folder} as s3://${local.bucket}/inbox/${folder.drop}/ (${String(folder.files.length)} files, then ${TRAIN_JSON})`,
    );
    await uploadDropFolder(local.s3.client, local.bucket, folder);
    const noStart = setTimeout(() => {
      triggerFailed.abort(
        new Error(
          `${TRAIN_JSON} was uploaded but no run started within ${String(START_TIMEOUT_MS / 1000)} s`,
        ),
      );
    }, START_TIMEOUT_MS);
    const started = await execution.finally(() => {
      clearTimeout(noStart);
    });
    const outcome = await untilAborted(started.done, stop);
    reporter.finish();
    return await report(outcome, local, folder.drop, out.path, io, startedAt);
  } catch (error) {
    reporter.finish();
    if (stop.aborted) {
      io.stderr.write(
        `hopper run: stopped${stop.reason instanceof Error ? ` (${stop.reason.message})` : ''}\n`,
      );
      if (local !== undefined) await tellLeftovers(local, latest, datasetName, parsed.folder, startedAt, io);
      return EXIT.stopped;
    }
    io.stderr.write(`hopper run: ${messageOf(error)}\n`);
    return EXIT.failed;
  } finally {
    if (console !== undefined) {
      // --console: the page stays up after the run, until Ctrl-C.
      if (!stop.aborted) io.stderr.write(`hopper: the console stays up at ${console.url}; Ctrl-C stops it\n`);
      await untilStopped(stop);
      await console.close();
    }
    await local?.close();
    await out.release();
  }
}

async function report(
  outcome: ExecutionOutcome,
  local: LocalMode,
  drop: string,
  outFolder: string,
  io: CommandIo,
  startedAt: number,
): Promise<number> {
  const seconds = ((Date.now() - startedAt) / 1000).toFixed(1);
  if (outcome.status === 'SUCCEEDED') {
    const { copy: slot, model: trained } = outcome.output as RunState;
    const copy = copiedModel(slot);
    if (copy === undefined) throw new Error('the run succeeded without copying a model (a bug in Hopper)');
    let model;
    try {
      model = await copyModelOut(local.s3.client, local.bucket, copy, outFolder);
    } catch (error) {
      keepInBucket(local, trained?.id, copy, outFolder, error, io);
      return EXIT.notSaved;
    }
    io.stdout.write(
      `hopper: succeeded in ${seconds} s: ${model.onnx} (${formatBytes(model.bytes)}) and ${model.record}\n`,
    );
    return EXIT.succeeded;
  }
  if (outcome.status === 'ABORTED') {
    io.stderr.write('hopper run: stopped\n');
    return EXIT.stopped;
  }
  // The status file holds what the report step made of the failure; the execution's own error
  // stands in if even the report step failed.
  const status = await readStatus(local.s3.client, local.bucket, drop).catch(() => null);
  const error =
    status?.state === 'failed' && status.error !== null
      ? `${status.error.code}: ${status.error.message}`
      : describeFailure(outcome.error, outcome.cause);
  io.stderr.write(`hopper: the run failed after ${seconds} s: ${error}\n`);
  return EXIT.failed;
}

/**
 * A model the run paid for that could not be saved to `outFolder`: the local bucket's files are
 * left on disk when local mode closes, and the user is told the model id and how to copy it.
 */
function keepInBucket(
  local: LocalMode,
  modelId: string | undefined,
  copy: CopySlot,
  outFolder: string,
  error: unknown,
  io: CommandIo,
): void {
  local.s3.keep();
  // models/<drop>/<model id>/, from the key the model was copied to.
  const prefix = `${posix.dirname(copy.modelKey)}/`;
  const [onnx, record] = MODEL_FILES.map((name) => join(outFolder, name)) as [string, string];
  io.stderr.write(
    [
      `hopper run: the run succeeded, but the model could not be saved to ${outFolder}: ${messageOf(error)}`,
      `hopper run: model ${modelId ?? posix.basename(prefix)} is kept in the local bucket at s3://${local.bucket}/${prefix}, whose files stay on disk; copy them where you want the model, e.g.:`,
      `  cp ${shellQuoted(local.s3.objectFile(copy.modelKey))} ${shellQuoted(onnx)}`,
      `  cp ${shellQuoted(local.s3.objectFile(copy.recordKey))} ${shellQuoted(record)}`,
      `hopper run: and delete ${local.s3.directory} once they are copied`,
      '',
    ].join('\n'),
  );
}

/**
 * Says what the stopped run left at the service and what to do (bounded in time: the user has
 * asked to stop).
 */
async function tellLeftovers(
  local: LocalMode,
  latest: RunState | undefined,
  datasetName: string,
  folder: string,
  startedAt: number,
  io: CommandIo,
): Promise<void> {
  const known = latest?.dataset?.id;
  const { describeLeftovers, leftAtService } = await import('./left-at-service.js');
  try {
    const left = await untilTimeout(
      (async () =>
        leftAtService(await local.service(), {
          datasetName,
          knownIds: known === undefined ? [] : [known],
          // A minute's leeway for the service's clock.
          since: startedAt - 60_000,
        }))(),
      LEFTOVERS_TIMEOUT_MS,
    );
    io.stderr.write(`${describeLeftovers(left, local.serviceUrl, folder).join('\n')}\n`);
  } catch (error) {
    io.stderr.write(
      `hopper run: could not ask the training service (${local.serviceUrl}) what this run left there: ${messageOf(error)}. The run's dataset${known === undefined ? '' : ` (${known})`} and any training it started stay there: see \`hopper models\`\n`,
    );
  }
}

async function untilTimeout<T>(promise: Promise<T>, ms: number): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      promise,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => {
          reject(new Error(`no answer within ${String(ms / 1000)} s`));
        }, ms);
      }),
    ]);
  } finally {
    clearTimeout(timer);
  }
}

/** `text` as one word for a POSIX shell. */
function shellQuoted(text: string): string {
  return `'${text.replaceAll("'", "'\\''")}'`;
}

/** `promise`, or a rejection with the signal's reason once `signal` aborts. */
async function untilAborted<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  signal.throwIfAborted();
  return await new Promise<T>((resolve, reject) => {
    const onAbort = (): void => {
      reject(signal.reason instanceof Error ? signal.reason : new Error(String(signal.reason)));
    };
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(resolve, reject).finally(() => {
      signal.removeEventListener('abort', onAbort);
    });
  });
}
