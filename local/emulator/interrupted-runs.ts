/**
 * A run cannot outlive local mode: when it stops, its executions stop with it. A run still
 * `running` at the next start (`hopper local --data-dir`), the status file's own or an older one
 * it names, is marked `interrupted` with what `hopper retry` does for it (lambdas/run/errors/messages.ts),
 * and its record joins the drop's runs (`hopper runs`), so nothing is left claiming to run.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { interruptedMessage } from '../../lambdas/run/errors/index.js';
import { readStatus, statusFiles, writeStatus, type RunStatus } from '../../lambdas/run/status/index.js';
import { stepUnderWay } from '../../lambdas/run/state/index.js';
import { runRecordKey } from '../../lambdas/storage/keys.js';
import { putJson } from '../../lambdas/storage/objects.js';

/** Marks every `running` run in `bucket` interrupted; resolves to the drops whose latest run it marked. */
export async function markInterruptedRuns(s3: S3Client, bucket: string, now = Date.now()): Promise<string[]> {
  const marked: string[] = [];
  for await (const { drop } of statusFiles(s3, bucket)) {
    const status = await readStatus(s3, bucket, drop);
    if (status === null) continue;
    // Older runs first: an older run's status lands in its entry, then the file's own on top.
    const older = (status.superseded_runs ?? []).filter((run) => run.state === 'running').reverse();
    for (const run of [...older, ...(status.state === 'running' ? [status] : [])]) {
      const record = { ...run, drop, ...interrupted(run, drop, now) };
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
    'hopper_step' | 'next_action' | 'model_id' | 'model' | 'paid_model' | 'dataset_id' | 'dataset_name'
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
  });
  return {
    state: 'interrupted',
    updated_at: timestamp,
    finished_at: timestamp,
    error: { code: 'interrupted', message },
  };
}
