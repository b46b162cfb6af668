/**
 * A run cannot outlive local mode: when it stops, its executions stop with it. A status file
 * still `running` at the next start (`hopper local --data-dir`) belongs to such a run, and is
 * marked `interrupted` with the way to start it over, so nothing is left claiming to run.
 */
import type { S3Client } from '@aws-sdk/client-s3';
import { interruptedStatus, readStatus, statusFiles, writeStatus } from '../../lambdas/run/status.js';

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
