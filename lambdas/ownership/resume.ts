/**
 * Resuming a failed run (train.json `"resume": true`, or `hopper retry`): the new run takes the
 * dataset the drop's failed run left at the service instead of creating and uploading another.
 * validate_drop finds that dataset in the drop's status file (resumeTarget), before the new run
 * overwrites the file; create_dataset checks it at the service (resumableDataset) and hands it
 * to the RouteDataset Choice, which goes on from wherever the dataset is: UploadFiles sends the
 * files not completed yet, the polls, structure, decisions and labels carry on, and a dataset
 * ready to train goes to StartTraining. StartTraining adopts a model of the dataset already
 * queued, training or done, so a resumed run never pays twice for a training.
 */
import type { Dataset, TrainingServiceClient } from '../service-client/index.js';
import { NotFoundError } from '../service-client/errors.js';
import { resumableAfter } from '../core/errors/codes.js';
import { adoptsWorkOf } from './adoption.js';
import { RunError } from '../core/errors/errors.js';
import type { DropFile, ResumeFrom } from '../core/state/state.js';
import type { RunPhase } from '../core/state/vocabulary.js';
import { DATASET_STEPS, stepUnderWay } from '../records/status/under-way.js';
import type { RunStatus } from '../records/status/status.js';

const START_OVER = 'upload train.json (without "resume") to start over';

/** A run of the drop as status/<drop>.json names it: the file's own run, or an older one. */
type RunOfDrop = Pick<
  RunStatus,
  | 'run_id'
  | 'state'
  | 'hopper_step'
  | 'next_action'
  | 'dataset_id'
  | 'dataset_name'
  | 'started_at'
  | 'model_id'
  | 'model'
  | 'error'
  | 'paid_model'
  | 'training_intent'
  | 'config_fingerprint'
  | 'resumed_from'
>;

/** Runs that have ended and that nothing runs any more. */
const ENDED: readonly RunPhase[] = ['failed', 'interrupted'];

/**
 * The drop's runs the status file names but `runId`, newest first, less those another run has
 * taken over (`resumed_from`): their work is that run's now, so it is resumed or adopted there,
 * never a second time from the run that left it.
 */
function runsOf(status: RunStatus | null, runId: string): RunOfDrop[] {
  if (status === null) return [];
  const others = [status, ...(status.superseded_runs ?? [])].filter((run) => run.run_id !== runId);
  const taken = new Set(others.map((run) => run.resumed_from ?? null));
  return others.filter((run) => !taken.has(run.run_id));
}

function resumeFrom(run: RunOfDrop): ResumeFrom {
  const from = {
    runId: run.run_id,
    datasetId: run.dataset_id ?? '',
    errorCode: run.error?.code ?? null,
    ...(run.paid_model === null ? {} : { paidModelId: run.paid_model.id }),
    ...(run.config_fingerprint === null ? {} : { configFingerprint: run.config_fingerprint }),
  };
  // Cut off before the service's answer named its dataset: it is looked for by its name.
  const named = run.dataset_id === null && typeof run.dataset_name === 'string';
  return named ? { ...from, datasetName: run.dataset_name ?? '', startedAt: run.started_at } : from;
}

/** The newest run that ended holding a paid model. */
function paidRun(status: RunStatus | null, runId: string): RunOfDrop | undefined {
  return runsOf(status, runId).find(
    (run) => ENDED.includes(run.state) && run.paid_model !== null && run.dataset_id !== null,
  );
}

/**
 * The earlier run of the drop whose work a new run with the same settings (configFingerprint)
 * adopts (adoption.ts adoptsWorkOf): the newest one that holds a paid model, or that was about to
 * start its training, or has a dataset past its uploads, and runs still or was interrupted. The
 * new run resumes from that run's dataset, and its start_training adopts the model it finds there,
 * so the same train.json uploaded again never pays twice (after a restart of local mode, a lost
 * answer to the training's start, a run that failed while its model trained, or while the first
 * run is still at it) and makes no second dataset. A dataset taken alone is `datasetOnly`.
 * Undefined when there is none.
 * @param status the drop's status before this run wrote it
 */
export function workToAdopt(
  status: RunStatus | null,
  runId: string,
  fingerprint: string,
): ResumeFrom | undefined {
  for (const run of runsOf(status, runId)) {
    const reason = adoptsWorkOf(run, fingerprint);
    if (reason === 'dataset') return { ...resumeFrom(run), datasetOnly: true };
    if (reason !== null) return resumeFrom(run);
  }
  return undefined;
}

/**
 * The run a resume (`hopper retry`, train.json `"resume": true`) takes its dataset from: the
 * newest run that ended holding a paid model (whose model it adopts), else the drop's latest run
 * when it failed or was interrupted after creating its dataset, with an error a resume can get
 * past (resumableAfter). The one rule: validate_drop asks it, and `hopper retry` before it
 * uploads anything.
 * @param status the drop's status before this run wrote it
 * @throws RunError not_resumable saying why there is no run to resume
 */
export function resumeTarget(status: RunStatus | null, drop: string, runId = ''): ResumeFrom {
  const paid = paidRun(status, runId);
  if (paid !== undefined) return resumeFrom(paid);
  const latest = runsOf(status, runId)[0];
  if (latest === undefined) {
    throw notResumable(
      `there is no earlier run of ${drop} to resume (status/${drop}.json names none): ${START_OVER}`,
    );
  }
  if (latest.state === 'running') {
    throw notResumable(
      `run ${latest.run_id} of ${drop} is still running (at ${stepUnderWay(latest)}): wait for it to end, and resume only if it fails`,
    );
  }
  if (!ENDED.includes(latest.state)) {
    throw notResumable(
      `the latest run ${latest.run_id} of ${drop} ${latest.state}: nothing to resume; ${START_OVER} and train anew`,
    );
  }
  const code = latest.error?.code;
  if (code !== undefined && !resumableAfter(code)) {
    throw notResumable(
      `run ${latest.run_id} of ${drop} failed with ${code}, which a resumed run would fail with again: ${latest.error?.message ?? ''}`,
    );
  }
  if (latest.dataset_id === null && typeof latest.dataset_name !== 'string') {
    throw notResumable(
      `the failed run ${latest.run_id} of ${drop}${code === undefined ? '' : ` (${code})`} ended before it created a dataset at the service, so nothing can be reused: fix what its error says, then ${START_OVER}`,
    );
  }
  return resumeFrom(latest);
}

/**
 * The earlier run's dataset, when the service still holds it where a run can go on from; one
 * still taking files must list the drop's files as validated now (`files`), as UploadFiles sends them.
 * @throws RunError not_resumable naming why not (gone, expired, unreadable, other files)
 */
export async function resumableDataset(
  client: TrainingServiceClient,
  from: ResumeFrom,
  now: number,
  files: readonly DropFile[],
): Promise<Dataset> {
  const dataset = await client.getDataset(from.datasetId).catch((error: unknown) => {
    if (!(error instanceof NotFoundError)) throw error;
    throw notResumable(
      `dataset ${from.datasetId} of run ${from.runId} is no longer at the training service: ${START_OVER}`,
      error,
    );
  });
  if (dataset.next_action === 'expired' || Date.parse(dataset.expires_at) <= now) {
    throw notResumable(
      `dataset ${dataset.id} of run ${from.runId} expired at the training service at ${dataset.expires_at}: ${START_OVER}`,
    );
  }
  // The next_actions RouteDataset goes on from (start_over and expired end a run).
  if (DATASET_STEPS[dataset.next_action] === undefined) {
    throw notResumable(
      `dataset ${dataset.id} of run ${from.runId} is at step ${String(dataset.step)} with next_action ${dataset.next_action}, which no run goes on from: ${START_OVER}`,
    );
  }
  const sameFiles =
    files.length === dataset.files.length &&
    dataset.files.every((file) => files.some((drop) => drop.name === file.name && drop.bytes === file.bytes));
  if (dataset.next_action === 'upload_files' && !sameFiles) {
    throw notResumable(
      `dataset ${dataset.id} of run ${from.runId} still takes files, and the drop's files are no longer the ones it was created with (${dataset.files.map((file) => file.name).join(', ')}): ${START_OVER}`,
    );
  }
  return dataset;
}

function notResumable(detail: string, cause?: unknown): RunError {
  return new RunError('not_resumable', detail, { cause });
}
