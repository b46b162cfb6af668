/**
 * Small whole-object operations on the bucket: the size of an object, a JSON document written in
 * one PUT, a delete. Streams (a pinned read, a multipart write) live in streams.ts.
 */
import { DeleteObjectCommand, HeadObjectCommand, PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';

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

/** Writes `value` as pretty-printed JSON (small documents only: it is one buffered PUT). */
export async function putJson(s3: S3Client, bucket: string, key: string, value: unknown): Promise<void> {
  await s3.send(
    new PutObjectCommand({
      Bucket: bucket,
      Key: key,
      Body: `${JSON.stringify(value, null, 2)}\n`,
      ContentType: 'application/json',
    }),
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
