/**
 * Small whole-object operations on the bucket: the size of an object, the objects under a prefix,
 * a JSON document read, written in one PUT or updated with conditional writes, a delete. Streams (a pinned read, a multipart
 * write) live in streams.ts.
 */
import {
  DeleteObjectCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  PutObjectCommand,
  type PutObjectCommandInput,
  type _Object,
  type S3Client,
} from '@aws-sdk/client-s3';

/** An object's size in bytes, or null when there is no such object. */
export async function objectSize(s3: S3Client, bucket: string, key: string): Promise<number | null> {
  try {
    const head = await s3.send(new HeadObjectCommand({ Bucket: bucket, Key: key }));
    return head.ContentLength ?? null;
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/**
 * The PutObject of `value` as pretty-printed JSON (small documents only: it is one buffered PUT),
 * under `condition` when given (If-Match, If-None-Match).
 */
export function putJsonCommand(
  bucket: string,
  key: string,
  value: unknown,
  condition?: Pick<PutObjectCommandInput, 'IfMatch' | 'IfNoneMatch'>,
): PutObjectCommand {
  const Body = `${JSON.stringify(value, null, 2)}\n`;
  return new PutObjectCommand({
    Bucket: bucket,
    Key: key,
    Body,
    ContentType: 'application/json',
    ...condition,
  });
}

export async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(putJsonCommand(bucket, key, value));
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
 * A small JSON object as read, with its ETag, or null when there is no such object; a body that
 * is not JSON reads as undefined (a caller treats it as no document of its kind).
 */
export async function readJson(
  s3: S3Client,
  bucket: string,
  key: string,
): Promise<{ readonly value: unknown; readonly etag: string } | null> {
  try {
    const answer = await s3.send(new GetObjectCommand({ Bucket: bucket, Key: key }));
    const text = (await answer.Body?.transformToString()) ?? '';
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      value = undefined;
    }
    return { value, etag: answer.ETag ?? '' };
  } catch (error) {
    if (isNotFound(error)) return null;
    throw error;
  }
}

/** A JSON document as read, with the ETag a conditional write over it names. */
export interface ReadWithEtag {
  readonly etag: string;
}

/** What `decide` makes of what it read: a document to write over it (or null, none), and a result. */
export interface JsonUpdate<T> {
  readonly write: unknown;
  readonly result: T;
}

export interface ConditionalUpdate<R extends ReadWithEtag, T> {
  readonly bucket: string;
  readonly key: string;
  /** Writes tried before giving up (each lost one means another writer came in between). */
  readonly attempts: number;
  /** The object as it is now, or null when there is none. */
  readonly read: () => Promise<R | null>;
  readonly decide: (current: R | null) => JsonUpdate<T> | Promise<JsonUpdate<T>>;
  /** The error to throw when every attempt lost to another writer. */
  readonly contended: (attempts: number, lastError: unknown) => Error;
}

/**
 * Read, decide, write one JSON object so that no other writer's document is overwritten unseen:
 * the write is conditional (`If-Match` the ETag read, `If-None-Match: *` when there was none),
 * and a write that lost to another writer is read and decided again, after a short random pause.
 */
export async function updateJsonConditionally<R extends ReadWithEtag, T>(
  s3: S3Client,
  update: ConditionalUpdate<R, T>,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    const current = await update.read();
    const { write, result } = await update.decide(current);
    if (write === null) return result;
    try {
      const condition = current === null ? { IfNoneMatch: '*' } : { IfMatch: current.etag };
      await s3.send(putJsonCommand(update.bucket, update.key, write, condition));
      return result;
    } catch (error) {
      if (!isLostRace(error, current !== null)) throw error;
      if (attempt >= update.attempts) throw update.contended(attempt, error);
      await new Promise((resolve) => setTimeout(resolve, Math.random() * 20 * attempt));
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
