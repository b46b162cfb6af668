/**
 * `hopper run <folder> [options]` (and `npm start`): local mode for one drop. Starts the local
 * S3 server, the simulated service (unless --service-url) and the state machine; drops the
 * folder as inbox/<folder name>/, train.json last; shows the run's progress; and copies the
 * model to <out>/<drop>/. Its exit codes are in RUN_SPEC (options.ts). Stopped, it says what it
 * left at the service (left-at-service.ts).
 */
import { join, posix } from 'node:path';
import { judgeDrop } from '../../lambdas/drop/validate.js';
import { describeFailure, messageOf } from '../../lambdas/core/errors/index.js';
import { copiedModel, type CopySlot, type RunState } from '../../lambdas/core/state/index.js';
import { readStatus } from '../../lambdas/records/status/index.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import type { LocalConsole } from '../console/index.js';
import type { LocalMode } from '../emulator/local-mode.js';
import type { ExecutionOutcome } from '../emulator/state-machine.js';
import { defineCommand, EXIT, stopSignal, untilStopped, type CommandIo } from './command.js';
import {
  leftOutText,
  readDropFolder,
  refusedFolder,
  uploadDropFolder,
  type DropFolder,
} from './drop-folder.js';
import { RUN_SPEC, runOptions, type LocalCommandOptions } from './options.js';
import { copyModelOut, MODEL_FILES, prepareOutFolder } from './out-folder.js';
import { formatBytes, progressOf, reporterFor, type ProgressReporter } from './progress.js';

/** How long train.json's upload may go without its run starting (the trigger is in-process). */
const START_TIMEOUT_MS = 30_000;

/** How long a stopped command spends finding out what it left at the service. */
const LEFTOVERS_TIMEOUT_MS = 20_000;

export const runRunCommand = defineCommand(RUN_SPEC, async (args, io, { env }) => {
  const { folder: path, out: outDir, options } = runOptions(args, env);
  // The run's own rules first, as hopper check applies them: a drop they refuse is not uploaded.
  const folder = await readDropFolder(path, 'run');
  const { config, leftOut } = await judgeDrop(folder).catch(refusedFolder);
  // Before the run: a model paid for must have somewhere to go.
  const out = await prepareOutFolder(outDir, folder.drop);
  try {
    const datasetName = config.name;
    return await runInLocalMode({ path, folder, leftOut, datasetName, out: out.path, options, io });
  } finally {
    await out.release();
  }
});

/** One `hopper run`: the folder, where its model goes, and what it prints to. */
interface RunOfFolder {
  /** The folder as the command line gave it. */
  readonly path: string;
  readonly folder: DropFolder;
  /** Files the default file list leaves out (judgeDrop's): not uploaded. */
  readonly leftOut: readonly string[];
  /** The dataset's name at the service: train.json's `name`, else the drop's default. */
  readonly datasetName: string;
  readonly out: string;
  readonly options: LocalCommandOptions;
  readonly io: CommandIo;
}

/** What the run's progress is told, and what it has seen. */
interface Watch {
  readonly stop: AbortSignal;
  readonly reporter: ProgressReporter;
  /** The run's latest state, from the execution's events: the dataset it made, once it has. */
  latest?: RunState;
}

async function runInLocalMode(run: RunOfFolder): Promise<number> {
  const { io, options } = run;
  const startedAt = Date.now();
  const watch: Watch = { stop: stopSignal(io), reporter: reporterFor(io.stdout, startedAt) };
  // Loaded only now: a refused command line or folder answers without loading local mode.
  const [{ startLocalMode }, { consoleFor }] = await Promise.all([
    import('../emulator/local-mode.js'),
    import('../console/index.js'),
  ]);
  const triggerFailed = new AbortController();
  let local: LocalMode | undefined;
  let console: LocalConsole | undefined;
  try {
    local = await startLocalMode({
      ...options.mode,
      // hopper run uploads the folder itself, train.json last: nothing else arrives after it.
      dropQuietMs: 0,
      onTriggerError: (key, error) => {
        triggerFailed.abort(new Error(`the S3 event for ${key} started no run: ${messageOf(error)}`));
      },
    });
    console = await consoleFor(local, options);
    if (console !== undefined) watch.reporter.line(`hopper: console at ${console.url}`);
    watch.reporter.line(
      `hopper: local mode: S3 at ${local.s3.endpoint} (bucket ${local.bucket}), training service at ${local.serviceUrl}${local.simulated === undefined ? '' : ' (simulated)'}`,
    );
    const outcome = await dropAndFollow(local, run, watch, triggerFailed);
    watch.reporter.finish();
    return outcome === 'busy' ? EXIT.busy : await report(outcome, local, run, startedAt);
  } catch (error) {
    watch.reporter.finish();
    if (!watch.stop.aborted) {
      io.stderr.write(`hopper run: ${messageOf(error)}\n`);
      return EXIT.failed;
    }
    const reason = watch.stop.reason instanceof Error ? ` (${watch.stop.reason.message})` : '';
    io.stderr.write(`hopper run: stopped${reason}\n`);
    if (local !== undefined) await tellLeftovers(local, watch.latest, run, startedAt);
    return EXIT.stopped;
  } finally {
    if (console !== undefined) {
      // --console: the page stays up after the run, until Ctrl-C.
      if (!watch.stop.aborted)
        io.stderr.write(`hopper: the console stays up at ${console.url}; Ctrl-C stops it\n`);
      await untilStopped(watch.stop);
      await console.close();
    }
    await local?.close();
  }
}

/**
 * Drops the folder (unless an earlier run's training of it is still under way: 'busy') and
 * follows its run to the end.
 */
async function dropAndFollow(
  local: LocalMode,
  { path, folder, leftOut, datasetName, options, io }: RunOfFolder,
  watch: Watch,
  triggerFailed: AbortController,
): Promise<ExecutionOutcome | 'busy'> {
  // Listening before the upload: the run starts while train.json's PutObject is answered.
  const execution = local.stateMachine.nextStarted(
    (started) => started.input.run.key === inboxKey(folder.drop, TRAIN_JSON),
    {
      signal: AbortSignal.any([watch.stop, triggerFailed.signal]),
      onEvent: (event) => {
        const state = (event as { state?: { input?: unknown; output?: unknown } }).state;
        const seen = (state?.output ?? state?.input) as RunState | undefined;
        if (seen?.run !== undefined) watch.latest = seen;
        const progress = progressOf(event, options.mode.waitMs);
        if (progress !== null) watch.reporter.update(progress);
      },
    },
  );
  // Awaited after the upload; a Ctrl-C during it must not count as an unhandled rejection.
  execution.catch(() => undefined);
  // A simulated service started by this command holds no training of an earlier one.
  if (local.simulated === undefined && (await trainingUnderWay(local, datasetName, io))) return 'busy';
  const files = folder.files.size - 1 - leftOut.length;
  const left = leftOut.length === 0 ? '' : `; left out: ${leftOutText(leftOut)}`;
  watch.reporter.line(
    `hopper: dropping ${path} as s3://${local.bucket}/inbox/${folder.drop}/ (${String(files)} ${files === 1 ? 'file' : 'files'}, then ${TRAIN_JSON}${left})`,
  );
  await uploadDropFolder(local.s3.client, local.bucket, folder, leftOut);
  const noStart = setTimeout(() => {
    triggerFailed.abort(
      new Error(`${TRAIN_JSON} was uploaded but no run started within ${String(START_TIMEOUT_MS / 1000)} s`),
    );
  }, START_TIMEOUT_MS);
  const started = await execution.finally(() => {
    clearTimeout(noStart);
  });
  return await untilAborted(started.done, watch.stop);
}

/**
 * Whether an earlier `hopper run` of this folder, stopped, left its training going (said on
 * stderr): a second one would spend a second credit for the same drop.
 */
async function trainingUnderWay(local: LocalMode, datasetName: string, io: CommandIo): Promise<boolean> {
  const { underWayRefusal } = await import('./left-at-service.js');
  const refusal = await underWayRefusal(await local.service(), datasetName, local.serviceUrl);
  if (refusal !== null) io.stderr.write(`hopper run: ${refusal}\n`);
  return refusal !== null;
}

async function report(
  outcome: ExecutionOutcome,
  local: LocalMode,
  { folder, out: outFolder, io }: RunOfFolder,
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
  const status = await readStatus(local.s3.client, local.bucket, folder.drop).catch(() => null);
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
  { path, datasetName, io }: RunOfFolder,
  startedAt: number,
): Promise<void> {
  const known = latest?.dataset?.id;
  if (local.simulated !== undefined) {
    // Started by this command, it ends with it: nothing is left anywhere.
    const made =
      known === undefined
        ? 'what the run made there'
        : `the run's dataset ${known} and any training it started`;
    io.stderr.write(
      `hopper run: the simulated training service stopped with this command, and ${made} went with it: no credit of a real service was spent. \`hopper run ${path}\` again starts over.\n`,
    );
    return;
  }
  const { describeLeftovers, leftAtService } = await import('./left-at-service.js');
  try {
    const asked = local.service().then((client) =>
      leftAtService(client, {
        datasetName,
        knownIds: known === undefined ? [] : [known],
        // A minute's leeway for the service's clock.
        since: startedAt - 60_000,
      }),
    );
    const left = await untilAborted(asked, AbortSignal.timeout(LEFTOVERS_TIMEOUT_MS));
    io.stderr.write(`${describeLeftovers(left, local.serviceUrl, path).join('\n')}\n`);
  } catch (error) {
    io.stderr.write(
      `hopper run: could not ask the training service (${local.serviceUrl}) what this run left there: ${messageOf(error)}. The run's dataset${known === undefined ? '' : ` (${known})`} and any training it started stay there: see \`hopper models\`\n`,
    );
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
