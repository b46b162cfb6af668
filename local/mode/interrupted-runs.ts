/**
 * A run cannot outlive local mode: when it stops, its executions stop with it. A status file
 * still `running` at the next start (`hopper local --data-dir`) belongs to such a run, and is
 * marked `interrupted` with the way to start it over, so nothing is left claiming to run.
 */
import { ListObjectsV2Command, type S3Client } from '@aws-sdk/client-s3';
import { interruptedStatus, readStatus, writeStatus } from '../../lambdas/run/status.js';
import { STATUS_PREFIX } from '../../lambdas/storage/keys.js';

/** Marks every `running` status in `bucket` interrupted; resolves to the drops it marked. */
export async function markInterruptedRuns(s3: S3Client, bucket: string, now = Date.now()): Promise<string[]> {
  const marked: string[] = [];
  // One page: s3rver cannot continue a listing on Node 20 (docs/local-mode.md, Limits).
  const listed = await s3.send(new ListObjectsV2Command({ Bucket: bucket, Prefix: STATUS_PREFIX }));
  for (const { Key: key } of listed.Contents ?? []) {
    const drop = key?.slice(STATUS_PREFIX.length).replace(/\.json$/, '');
    if (drop === undefined || drop === '' || drop.includes('/')) continue;
    const status = await readStatus(s3, bucket, drop);
    if (status?.state !== 'running') continue;
    await writeStatus(s3, bucket, interruptedStatus(status, now));
    marked.push(drop);
  }
  return marked;
}
