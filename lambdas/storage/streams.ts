/**
 * Streaming reads and writes of large objects with constant memory: a read pinned to the
 * version that was validated, and a multipart write whose memory is bounded by part size times
 * queue size whatever the object's size.
 */
import { Readable } from 'node:stream';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { writeMultipart } from './multipart.js';
import { bareEtag, isNotFound, isPreconditionFailed } from './objects.js';

/** An object at the version (etag) a step validated. */
export interface PinnedObject {
  readonly bucket: string;
  readonly key: string;
  /** With or without quotes. */
  readonly etag: string;
}

/** The object is there, but it is no longer the version that was validated. */
export class ObjectChangedError extends Error {
  override readonly name = 'ObjectChangedError';
  constructor(
    readonly key: string,
    cause?: unknown,
  ) {
    super(`s3 object ${key} changed after it was validated`, { cause });
  }
}

/** The object is gone. */
export class ObjectMissingError extends Error {
  override readonly name = 'ObjectMissingError';
  constructor(
    readonly key: string,
    cause?: unknown,
  ) {
    super(`s3 object ${key} does not exist`, { cause });
  }
}

/**
 * A fresh stream of the object's bytes, refused (ObjectChangedError) when it is not the pinned
 * version any more. S3 enforces If-Match itself (412); the etag of the answer is checked too,
 * for S3-compatible servers that ignore If-Match on GET (s3rver does).
 */
export async function openPinnedObject(s3: S3Client, object: PinnedObject): Promise<Readable> {
  const expected = bareEtag(object.etag);
  const answer = await s3
    .send(new GetObjectCommand({ Bucket: object.bucket, Key: object.key, IfMatch: `"${expected}"` }))
    .catch((error: unknown) => {
      if (isPreconditionFailed(error)) throw new ObjectChangedError(object.key, error);
      if (isNotFound(error)) throw new ObjectMissingError(object.key, error);
      throw error;
    });
  const body = answer.Body;
  if (!(body instanceof Readable)) throw new Error(`GetObject ${object.key}: the answer has no body stream`);
  if (answer.ETag !== undefined && bareEtag(answer.ETag) !== expected) {
    body.destroy();
    throw new ObjectChangedError(object.key);
  }
  return body;
}

/** S3's floor for every part but the last. */
export const MIN_PART_BYTES = 5 * 1024 * 1024;
/** S3's ceiling on the parts of one upload. */
export const MAX_PARTS = 10_000;
export const DEFAULT_PART_BYTES = 8 * 1024 * 1024;
export const DEFAULT_QUEUE_SIZE = 2;

export interface StreamUploadOptions {
  /** Bytes per part (at least MIN_PART_BYTES); raised to fit `expectedBytes` in MAX_PARTS parts. */
  readonly partBytes?: number;
  /** Parts in flight at once. Memory is about (queueSize + 1) x partBytes. */
  readonly queueSize?: number;
  /** The body's size when known: only to choose the part size. */
  readonly expectedBytes?: number;
  readonly contentType?: string;
}

/** The part size for an upload: the configured one, or larger when the object needs it. */
export function partBytesFor(expectedBytes: number | undefined, partBytes = DEFAULT_PART_BYTES): number {
  const fitting = expectedBytes === undefined ? 0 : Math.ceil(expectedBytes / MAX_PARTS);
  return Math.max(MIN_PART_BYTES, partBytes, fitting);
}

/**
 * Writes `body` to the object with a multipart upload (one PUT when it fits in one part;
 * multipart.ts). Nothing is left behind on failure: the multipart upload is aborted (the
 * bucket's lifecycle rule catches an abort that fails) and the body is destroyed, releasing its
 * connection.
 */
export async function uploadStream(
  s3: S3Client,
  bucket: string,
  key: string,
  body: Readable,
  options: StreamUploadOptions = {},
): Promise<void> {
  // The body's own failure is the one to report (a download that failed), not what it caused.
  let bodyError: unknown;
  body.on('error', (error) => {
    bodyError ??= error;
  });
  try {
    await writeMultipart(s3, { bucket, key, contentType: options.contentType }, body, {
      partBytes: partBytesFor(options.expectedBytes, options.partBytes),
      queueSize: options.queueSize ?? DEFAULT_QUEUE_SIZE,
    });
  } catch (error) {
    body.destroy();
    throw bodyError ?? error;
  }
}
