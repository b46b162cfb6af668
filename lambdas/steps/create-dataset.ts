/**
 * create_dataset: declares the drop's data files to the service. The dataset comes back at
 * `upload_files`, and the Choice after this Task sends the run to UploadFiles. A resuming run
 * (train.json `"resume": true`), or one adopting an earlier run's work, takes that run's dataset
 * instead, and the Choice after this Task routes on where that dataset is
 * (lambdas/ownership/resume.ts); a dataset taken alone that no run can go on from any more is left
 * to its run, and this run creates its own.
 *
 * POST /v1/datasets is not idempotent and the interface has no idempotency key, so the dataset
 * is named for the run (runDatasetName, contract.ts), and that name is the intent: validate_drop's
 * status carries it (`dataset_name`) before this step asks for it. Every invocation looks for a
 * dataset of that name first (one page of the list, newest first, seldom more), and so does an
 * invocation whose creation answer is lost: a retried invocation, a kill between the request and
 * its answer, or a garbled answer never leave a second dataset at the service. A run resumed
 * after a restart that cut off the answer finds the dataset by its predecessor's name.
 *
 * Before it creates one, the step reads train.json's etag in the bucket: a run whose train.json
 * another upload has replaced stops here (`superseded`), creating nothing, even before S3's event
 * has reached the trigger that writes the newer run's first status (ownership/supersede.ts).
 */
import {
  mayHaveActed,
  runDatasetName,
  ServiceError,
  type Dataset,
  type NewDataset,
  type TrainingServiceClient,
} from '../service-client/index.js';
import { defineStep } from '../runtime/index.js';
import { resumableDataset, stopIfTrainJsonChanged } from '../ownership/index.js';
import { datasetSlot, type ResumeFrom, type RunConfig } from '../core/state/index.js';
import { RunError } from '../core/errors/index.js';

export const createDatasetStep = defineStep('create_dataset', async (state, env) => {
  const { config, run } = state;
  const client = await env.runtime.service();
  const from = config.resumeFrom === undefined ? undefined : await withDataset(client, config.resumeFrom);
  const dataset = from === undefined ? undefined : await goOnFrom(client, from, env.runtime.now(), config);
  if (dataset !== undefined) return datasetSlot(dataset, state.dataset, env.runtime.now());
  const wanted: NewDataset = {
    name: runDatasetName(config.name, run.runId),
    files: config.files.map((file) => ({ name: file.name, bytes: file.bytes })),
  };
  const askedAt = Date.parse(run.startedAt);
  const found = await client.findDataset(wanted.name, askedAt);
  if (found !== null) return datasetSlot(found, state.dataset, env.runtime.now());
  await stopIfTrainJsonChanged(env.runtime.s3, state, 'create_dataset');
  return datasetSlot(await createOnce(client, wanted, askedAt), state.dataset, env.runtime.now());
});

/**
 * The earlier run's dataset this run goes on from; undefined when it was taken for its dataset
 * alone (`datasetOnly`, the earlier run paid for nothing) and no run can go on from it any more:
 * this run then creates its own.
 * @throws RunError not_resumable when a resume or an adoption of paid work cannot go on from it
 */
async function goOnFrom(
  client: TrainingServiceClient,
  from: ResumeFrom,
  now: number,
  config: RunConfig,
): Promise<Dataset | undefined> {
  try {
    return await resumableDataset(client, from, now, config.files);
  } catch (error) {
    if (from.datasetOnly === true && error instanceof RunError && error.code === 'not_resumable')
      return undefined;
    throw error;
  }
}

/**
 * The run to resume with its dataset's id: a run interrupted while it created its dataset names
 * only the dataset's name, found at the service now; undefined when the service never created
 * it (the resumed run creates its own).
 */
async function withDataset(client: TrainingServiceClient, from: ResumeFrom): Promise<ResumeFrom | undefined> {
  if (from.datasetId !== '' || from.datasetName === undefined) return from;
  const found = await client.findDataset(from.datasetName, Date.parse(from.startedAt ?? ''));
  return found === null ? undefined : { ...from, datasetId: found.id };
}

/** POST /v1/datasets; after an answer lost once the request left, the dataset it may have made. */
async function createOnce(
  client: TrainingServiceClient,
  wanted: NewDataset,
  askedAt: number,
): Promise<Dataset> {
  try {
    return await client.createDataset(wanted);
  } catch (error) {
    if (!(error instanceof ServiceError && mayHaveActed(error))) throw error;
    const made = await client.findDataset(wanted.name, askedAt);
    if (made === null) throw error;
    return made;
  }
}
