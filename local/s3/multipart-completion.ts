/**
 * CompleteMultipartUpload as S3 does it, for the local S3's store (consistent-store.ts): the
 * object's ETag is the MD5 of the parts' MD5s with `-<part count>` (S3's multipart ETag),
 * computed from the parts' own digests, not by hashing the whole object again as s3rver does.
 * That second pass over every byte made completing a 1 GiB upload cost as much as receiving it
 * (docs/performance.md); real S3 completes in time proportional to the number of parts.
 */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Readable } from 'node:stream';

/** A part as CompleteMultipartUpload lists it (s3rver's shape). */
export interface CompletedPartRef {
  readonly number: number;
}

export interface CompletedObject {
  readonly key: string;
  readonly metadata: Record<string, string>;
  /** The parts' bytes in part-number order, read as they are consumed. */
  readonly content: Readable;
  /** S3's multipart ETag, without quotes. */
  readonly etag: string;
}

const READ_CHUNK_BYTES = 1024 * 1024;

/** The object a multipart upload in `uploadDirectory` (s3rver's layout) completes to. */
export async function completedObject(
  uploadDirectory: string,
  parts: readonly CompletedPartRef[],
): Promise<CompletedObject> {
  const ordered = [...parts].sort((a, b) => a.number - b.number);
  const [key, metadata, digests] = await Promise.all([
    readFile(join(uploadDirectory, 'key'), 'utf8'),
    readFile(join(uploadDirectory, 'metadata'), 'utf8').then(
      (text) => JSON.parse(text) as Record<string, string>,
    ),
    Promise.all(
      ordered.map(async (part) =>
        (await readFile(join(uploadDirectory, `${String(part.number)}.md5`), 'utf8')).trim(),
      ),
    ),
  ]);
  const etag = `${createHash('md5')
    .update(Buffer.concat(digests.map((hex) => Buffer.from(hex, 'hex'))))
    .digest('hex')}-${String(ordered.length)}`;
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const part of ordered) {
      const stream = createReadStream(join(uploadDirectory, String(part.number)), {
        highWaterMark: READ_CHUNK_BYTES,
      });
      for await (const chunk of stream) yield chunk as Buffer;
    }
  }
  return { key, metadata, content: Readable.from(bytes(), { objectMode: false }), etag };
}
