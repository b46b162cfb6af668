/**
 * A run cannot outlive local mode: when it stops, its executions stop with it. A status file
 * still `running` at the next start (`hopper local --data-dir`) belongs to such a run, and is
 * marked `interrupted` with the way to start it over, so nothing is left claiming to run.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { readStatus, statusFiles, writeStatus, type RunStatus } from '../../lambdas/run/status.js';

/** Marks every `running` status in `bucket` interrupted; resolves to the drops it marked. */
export async function markInterruptedRuns(s3: S3Client, bucket: string, now = Date.now()): Promise<string[]> {
  const marked: string[] = [];
  for await (const { drop } of statusFiles(s3, bucket)) {
    const status = await readStatus(s3, bucket, drop);
    if (status?.state !== 'running') continue;
    await writeStatus(s3, bucket, interruptedStatus(status, now));
    marked.push(drop);
  }
  return marked;
}

/**
 * The status of a run that was still `running` when local mode stopped: nothing runs it now, so
 * it says so, and how to start it over (the drop's files are still in the bucket).
 */
function interruptedStatus(status: RunStatus, now: number): RunStatus {
  const timestamp = new Date(now).toISOString();
  return {
    ...status,
    state: 'interrupted',
    updated_at: timestamp,
    finished_at: timestamp,
    error: {
      code: 'interrupted',
      message: `local mode stopped while this run was at ${status.hopper_step}, and nothing runs it now. Upload inbox/${status.drop}/train.json again to start it over: the drop's other files are still in the bucket`,
    },
  };
}
