/**
 * Small whole-object operations on the bucket: the size of an object, the objects under a prefix,
 * a JSON document read, written in one PUT or updated with conditional writes, a delete. Streams
 * (a pinned read, a multipart write) live in streams.ts and multipart.ts.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandOutput,
  type _Object,
  type S3Client,
} from '@aws-sdk/client-s3';

/** What HeadObject says of an object's version: its etag (unquoted), version id and upload time. */
export interface ObjectVersion {
  readonly etag: string;
  readonly versionId: string;
  readonly lastModified: Date;
}

/** The object's current version, or null when there is no such object. */
export async function objectVersion(
  s3: S3Client,
  bucket: string,
  key: string,
): Promise<ObjectVersion | null> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).catch(nullIfNotFound);
  if (head?.ETag === undefined) return null;
  return {
    etag: bareEtag(head.ETag),
    versionId: head.VersionId ?? '',
    lastModified: head.LastModified ?? new Date(0),
  };
}

/** An object's size in bytes, or null when there is no such object. */
export async function objectSize(s3: S3Client, bucket: string, key: string): Promise<number | null> {
  const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key })).catch(nullIfNotFound);
  return head === null ? null : (head.ContentLength ?? null);
}

/**
 * Writes `value` as pretty-printed JSON (small documents only: it is one buffered PUT), under the
 * conditions given (`IfNoneMatch: '*'`, `IfMatch: <etag>`).
 */
export function putJson(
  s3: S3Client,
  bucket: string,
  key: string,
  value: unknown,
  condition: { readonly IfMatch?: string; readonly IfNoneMatch?: string } = {},
): Promise<PutObjectCommandOutput> {
  const Body = `${JSON.stringify(value, null, 2)}\n`;
  return s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: key, Body, ContentType: 'application/json', ...condition }),
  );
}

/** Every object whose key begins with `prefix`, page by page (ListObjectsV2). */
export async function* objectsUnder(s3: S3Client, bucket: string, prefix: string): AsyncGenerator<_Object> {
  let token: string | undefined;
  do {
    const page = await s3.send(
      new ListObjectsV2Command({ Bucket: bucket, Prefix: prefix, ContinuationToken: token }),
    );
    yield* page.Contents ?? [];
    token = page.IsTruncated === true ? page.NextContinuationToken : undefined;
  } while (token !== undefined);
}

/**
 * A JSON object's value (undefined when its body is not JSON) and ETag, or null when there is no
 * such object.
 */
export async function readJson(s3: S3Client, bucket: string, key: string): Promise<JsonRead | null> {
  const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key })).catch(nullIfNotFound);
  if (answer === null) return null;
  const text = (await answer.Body?.transformToString()) ?? '';
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch {
    // Not JSON: no value, which each reader takes as it must.
  }
  return { value, etag: answer.ETag ?? '' };
}

/** A JSON document as read, with the ETag a conditional write over it names. */
export interface JsonRead {
  readonly value: unknown;
  readonly etag: string;
}

/** What `decide` makes of what it read: a document to write over it (or null, none), and a result. */
export interface JsonUpdate<T, W = unknown> {
  readonly write: W | null;
  readonly result: T;
}

export interface ConditionalUpdate<R extends Pick<JsonRead, 'etag'>, T> {
  readonly bucket: string;
  readonly key: string;
  /** Writes tried before giving up (each lost one means another writer came in between). Default 8. */
  readonly attempts?: number;
  /** The object as it is now, or null when there is none. */
  readonly read: () => Promise<R | null>;
  readonly decide: (current: R | null) => JsonUpdate<T> | Promise<JsonUpdate<T>>;
  /** The error to throw when every attempt lost to another writer. */
  readonly contended: (attempts: number, lastError: unknown) => Error;
}

/**
 * Read, decide, write one JSON object so that no other writer's document is overwritten unseen:
 * the write is conditional (`If-Match` the ETag read, `If-None-Match: *` when there was none),
 * and a write that lost to another writer is read and decided again, after a random pause that
 * doubles with each loss (full jitter, at most 2 s): many writers at once spread out.
 */
export async function updateJsonConditionally<R extends Pick<JsonRead, 'etag'>, T>(
  s3: S3Client,
  update: ConditionalUpdate<R, T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const current = await update.read();
    const { write, result } = await update.decide(current);
    if (write === null) return result;
    try {
      const condition = current === null ? { IfNoneMatch: '*' } : { IfMatch: current.etag };
      await putJson(s3, update.bucket, update.key, write, condition);
      return result;
    } catch (error) {
      if (!isLostRace(error, current !== null)) throw error;
      if (attempt >= (update.attempts ?? 8)) throw update.contended(attempt, error);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * Math.min(2_000, 10 * 2 ** attempt)));
    }
  }
}

/**
 * True when a conditional write lost to another writer: 412, S3's 409 for conditional writes at
 * once, or (`ifMatch`) 404 NoSuchKey when the object was removed since it was read.
 */
export function isLostRace(error: unknown, ifMatch: boolean): boolean {
  const name = s3ErrorName(error) ?? '';
  return (
    isPreconditionFailed(error) || name === 'ConditionalRequestConflict' || (ifMatch && name === 'NoSuchKey')
  );
}

export async function deleteObject(s3: S3Client, bucket: string, key: string): Promise<void> {
  await s3.send(new DeleteObjectCommand({ Bucket: bucket, Key: key }));
}

/** An etag without its quotes (S3 sends `"abc"`, events and states carry `abc`). */
export function bareEtag(etag: string): string {
  return etag.replaceAll('"', '');
}

/** A request's failure as null when it is S3's "no such object" (isNotFound); any other is thrown. */
export function nullIfNotFound(error: unknown): null {
  if (isNotFound(error)) return null;
  throw error;
}

/** S3's "no such object": NoSuchKey from GET, a bare 404 (NotFound) from HEAD. */
export function isNotFound(error: unknown): boolean {
  return s3ErrorName(error) === 'NoSuchKey' || s3ErrorName(error) === 'NotFound' || httpStatus(error) === 404;
}

/** S3's answer to a request whose If-Match no longer holds: 412 PreconditionFailed. */
export function isPreconditionFailed(error: unknown): boolean {
  return s3ErrorName(error) === 'PreconditionFailed' || httpStatus(error) === 412;
}

function s3ErrorName(error: unknown): string | undefined {
  return error instanceof Error ? error.name : undefined;
}

function httpStatus(error: unknown): number | undefined {
  if (typeof error !== 'object' || error === null || !('$metadata' in error)) return undefined;
  const metadata = (error as { $metadata?: { httpStatusCode?: number } }).$metadata;
  return metadata?.httpStatusCode;
}
