/**
 * A streaming read of a large object pinned to the version that was validated (the streaming
 * write, with constant memory, is multipart.ts).
 */
import { Readable } from 'node:stream';
import { GetObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { bareEtag, isNotFound, isPreconditionFailed } from './objects.js';

/** An object at the version (etag) a step validated. */
export interface PinnedObject {
  readonly bucket: string;
  readonly key: string;
  /** With or without quotes. */
  readonly etag: string;
}

/** The class of an error about the pinned object at `key`: its message says it `happened`. */
function pinnedObjectError(name: string, happened: string) {
  return class extends Error {
    override readonly name = name;
    constructor(
      readonly key: string,
      cause?: unknown,
    ) {
      super(`s3 object ${key} ${happened}`, { cause });
    }
  };
}

/** The object is there, but it is no longer the version that was validated. */
export class ObjectChangedError extends pinnedObjectError(
  'ObjectChangedError',
  'changed after it was validated',
) {}
/** The object is gone. */
export class ObjectMissingError extends pinnedObjectError('ObjectMissingError', 'does not exist') {}

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
