/**
 * A run cannot outlive local mode: when it stops, its executions stop with it. A run still
 * `running` at the next start (`hopper local --data-dir`), the status file's own or an older one
 * it names, is marked `interrupted` with what `hopper retry` does for it (lambdas/core/errors/messages.ts),
 * and its record joins the drop's runs (`hopper runs`), so nothing is left claiming to run.
 *
 * A run stopped between its request to start a training and the answer names the training it was
 * about to start (`training_intent`): the restart looks for it among the dataset's models at the
 * service, and a model found there that holds a credit is recorded as the run's paid model, with
 * its credit, so `hopper status` tells it and `hopper retry` (or the same train.json again) adopts it.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { interruptedMessage } from '../../lambdas/core/errors/index.js';
import { readStatus, statusFiles, writeStatus, type RunStatus } from '../../lambdas/records/status/index.js';
import { stepUnderWay } from '../../lambdas/records/status/index.js';
import { runRecordKey } from '../../lambdas/storage/keys.js';
import { putJson } from '../../lambdas/storage/objects.js';
import { holdsCredit, type TrainingServiceClient } from '../../lambdas/service-client/index.js';
import { withTraining } from '../../lambdas/records/status/usage.js';

/**
 * Marks every `running` run in `bucket` interrupted; resolves to the drops whose latest run it marked.
 * @param service the training service, asked for the model of a run's training intent (none: not asked)
 */
export async function markInterruptedRuns(
  s3: S3Client,
  bucket: string,
  now = Date.now(),
  service?: () => Promise<TrainingServiceClient>,
): Promise<string[]> {
  const marked: string[] = [];
  for await (const { drop } of statusFiles(s3, bucket)) {
    const status = await readStatus(s3, bucket, drop);
    if (status === null) continue;
    // Older runs first: an older run's status lands in its entry, then the file's own on top.
    const older = (status.superseded_runs ?? []).filter((run) => run.state === 'running').reverse();
    for (const run of [...older, ...(status.state === 'running' ? [status] : [])]) {
      const found = service === undefined ? run : await withIntendedModel(run, status, service);
      const record = { ...found, drop, ...interrupted(found, drop, now) };
      await writeStatus(s3, bucket, { ...status, ...record });
      await putJson(s3, bucket, runRecordKey(drop, run.run_id), record);
    }
    if (status.state === 'running') marked.push(drop);
  }
  return marked;
}

/** What changes in the status of a run still `running` when local mode stopped. */
function interrupted(
  run: Pick<
    RunStatus,
    | 'hopper_step'
    | 'next_action'
    | 'model_id'
    | 'model'
    | 'paid_model'
    | 'dataset_id'
    | 'dataset_name'
    | 'config_fingerprint'
  >,
  drop: string,
  now: number,
): Pick<RunStatus, 'state' | 'updated_at' | 'finished_at' | 'error'> {
  const timestamp = new Date(now).toISOString();
  const message = interruptedMessage({
    drop,
    step: stepUnderWay(run),
    paidModel: run.paid_model,
    datasetId: run.dataset_id,
    datasetName: run.dataset_name,
    copiedModel:
      run.model_id === null || run.model === null ? null : { id: run.model_id, at: run.model.onnx },
  });
  return {
    state: 'interrupted',
    updated_at: timestamp,
    finished_at: timestamp,
    error: { code: 'interrupted', message },
  };
}

type IntendedRun = Pick<RunStatus, 'run_id' | 'training_intent' | 'paid_model' | 'model_id' | 'summary'>;

/**
 * `run` with the model its training intent started, when the service holds one that keeps its
 * credit: the newest such model of the intent's dataset (and encoder) that no other run of the
 * drop names (a resumed run's dataset has its predecessor's models too). Unchanged when the run
 * intends nothing, already names a paid model, or the service cannot be asked now (`hopper retry`
 * still finds the model through the dataset).
 */
async function withIntendedModel<R extends IntendedRun>(
  run: R,
  status: RunStatus,
  service: () => Promise<TrainingServiceClient>,
): Promise<R> {
  const intent = run.training_intent;
  if (intent === undefined || intent === null || run.paid_model !== null) return run;
  const others = [status, ...(status.superseded_runs ?? [])].filter((other) => other.run_id !== run.run_id);
  const named = new Set(others.flatMap((other) => [other.model_id, other.paid_model?.id ?? null]));
  try {
    const client = await service();
    const dataset = await client.getDataset(intent.dataset_id);
    for await (const model of client.modelsOfDataset(dataset.id, { datasetCreatedAt: dataset.created_at })) {
      if (named.has(model.id) || model.id === run.model_id) continue;
      if (intent.encoder !== null && model.encoder !== intent.encoder) continue;
      if (!holdsCredit(model.status, model.next_action)) return run;
      const training = { model_id: model.id, status: model.status, gpu_usd: null, jev_usd: null };
      return {
        ...run,
        model_id: model.id,
        paid_model: { id: model.id, status: model.status },
        training_intent: null,
        summary: run.summary === null ? null : withTraining(run.summary, training),
      };
    }
  } catch {
    // Unreachable or refusing now: the run is marked as it stands.
  }
  return run;
}
