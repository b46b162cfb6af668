/**
 * What the console reads from the local bucket: every drop's status file (listed on each
 * request, re-read only when its ETag changed, so a list of hundreds of drops costs one
 * listing), the ended runs' records, model records, and model files streamed for download.
 */
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import type { Readable } from 'node:stream';
import type { ModelDocument } from '../../lambdas/steps/copy-model.js';
import {
  readRunRecord,
  readStatus,
  runRecordKeys,
  statusFiles,
  type RunStatus,
} from '../../lambdas/records/status/index.js';
import { MODELS_PREFIX, modelRecordKey } from '../../lambdas/storage/keys.js';
import { nullIfNotFound, readJson } from '../../lambdas/storage/objects.js';

export class BucketView {
  readonly #statuses = new Map<string, { etag: string; status: RunStatus | null }>();
  readonly #records = new Map<string, RunStatus | null>();

  constructor(
    private readonly s3: S3Client,
    private readonly bucket: string,
  ) {}

  /** Every drop's status; a file is read again only when its etag changed. */
  async statuses(): Promise<RunStatus[]> {
    const found: RunStatus[] = [];
    const seen = new Set<string>();
    for await (const { drop, etag } of statusFiles(this.s3, this.bucket)) {
      seen.add(drop);
      let cached = this.#statuses.get(drop);
      if (cached?.etag !== etag) {
        cached = { etag, status: await readStatus(this.s3, this.bucket, drop) };
        this.#statuses.set(drop, cached);
      }
      if (cached.status !== null) found.push(cached.status);
    }
    for (const drop of this.#statuses.keys()) if (!seen.has(drop)) this.#statuses.delete(drop);
    return found;
  }

  /**
   * Every ended run's record (status/.runs/): the runs a drop's later runs took the status file
   * from. A record is read once: it is written when its run ends.
   */
  async records(): Promise<RunStatus[]> {
    const found: RunStatus[] = [];
    for await (const key of runRecordKeys(this.s3, this.bucket)) {
      if (!this.#records.has(key)) this.#records.set(key, await readRunRecord(this.s3, this.bucket, key));
      const record = this.#records.get(key);
      if (record !== null && record !== undefined) found.push(record);
    }
    return found;
  }

  status(drop: string): Promise<RunStatus | null> {
    return readStatus(this.s3, this.bucket, drop);
  }

  /** models/<drop>/<model id>/model.json, or null when there is none. */
  async modelRecord(drop: string, modelId: string): Promise<ModelDocument | null> {
    const read = await readJson(this.s3, this.bucket, modelRecordKey(drop, modelId));
    return read?.value === undefined ? null : (read.value as ModelDocument);
  }

  /** A model file's bytes as a stream, with its size; null when there is no such object. */
  async modelFile(key: string): Promise<{ body: Readable; bytes: number } | null> {
    if (!key.startsWith(MODELS_PREFIX) || key.split('/').includes('..')) return null;
    const answer = await this.s3
      .send(new GetObjectCommand({ Bucket: this.bucket, Key: key }))
      .catch(nullIfNotFound);
    return answer?.Body === undefined
      ? null
      : { body: answer.Body as Readable, bytes: answer.ContentLength ?? 0 };
  }
}
