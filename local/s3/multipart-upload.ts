/**
 * Multipart uploads in the local S3's store (consistent-store.ts) at S3's cost: each part's bytes
 * are written once, and completing the upload does not touch them again.
 *
 * s3rver writes each part to a file of its own and completes by copying every part into the
 * object's file and hashing the whole object: completing a 1 GiB upload cost as much as receiving
 * it (docs/performance.md). Here the parts go into one file, each at its place: part n at
 * (n - 1) x the upload's part size, the length of the first part to arrive (clients send parts of
 * one size and a shorter last one). A completion of parts 1..n, each starting where the one
 * before ends, is that file cut to the object's length, renamed into place by the store. A part that
 * does not fit its place (longer than the part size, or of unknown length) goes to a file of its
 * own, and a completion of any other layout copies the parts' bytes into the object as s3rver does.
 * The ETag is S3's multipart ETag, the MD5 of the parts' MD5s with `-<part count>`, from the
 * parts' own digests.
 */
import { createHash, type Hash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { constants, open, readdir, readFile, rm, stat, truncate, writeFile } from 'node:fs/promises';
import type { IncomingMessage } from 'node:http';
import { join } from 'node:path';
import { Readable } from 'node:stream';
import { pipeline } from 'node:stream/promises';
import type { PartChecksum, StoredChecksum } from './checksums.js';

/** A part as CompleteMultipartUpload lists it (s3rver's shape). */
export interface PartRef {
  readonly number: number;
}

/** A part's record: `offset` in PARTS_FILE, or null when the part is in a file named by its number. */
interface StoredPart {
  readonly md5: string;
  readonly size: number;
  readonly offset: number | null;
  /** The checksum the part came with (checksums.ts), null when none. */
  readonly checksum: StoredChecksum | null;
}

const PARTS_FILE = 'parts';
const READ_CHUNK_BYTES = 1024 * 1024;

/**
 * The part size of each upload a store started (since it was made), by the upload's folder: null
 * until the first part arrives, and cleared at completion.
 */
export type PartSizes = Map<string, number | null>;

/** Where part `number` of `length` bytes goes: its offset in PARTS_FILE, or null for a file of its own. */
function placeOf(partSizes: PartSizes, uploadDirectory: string, number: number, length: number) {
  if (!partSizes.has(uploadDirectory) || !Number.isSafeInteger(number) || number < 1 || !(length > 0))
    return null;
  const partSize = partSizes.get(uploadDirectory) ?? length;
  partSizes.set(uploadDirectory, partSize);
  return length <= partSize ? (number - 1) * partSize : null;
}

const recordOf = (uploadDirectory: string, number: number) => join(uploadDirectory, `${String(number)}.json`);

/** Pipes `source` into `to`, adding its bytes to `md5`; returns how many there were. */
export async function writeCounted(source: Readable, to: NodeJS.WritableStream, md5?: Hash): Promise<number> {
  let size = 0;
  async function* counted(chunks: AsyncIterable<Buffer>): AsyncGenerator<Buffer> {
    for await (const chunk of chunks) {
      md5?.update(chunk);
      size += chunk.length;
      yield chunk;
    }
  }
  await pipeline(source, counted, to);
  return size;
}

/** The headers of the upload's CreateMultipartUpload (s3rver keeps them as its metadata). */
export const uploadHeaders = async (uploadDirectory: string): Promise<Record<string, unknown>> =>
  JSON.parse(await readFile(join(uploadDirectory, 'metadata'), 'utf8')) as Record<string, unknown>;

/** An UploadPart: `verified` checks its bytes once they are written, and gives their checksum. */
export interface PartUpload {
  readonly number: number;
  readonly content: IncomingMessage;
  readonly verified: () => Promise<StoredChecksum | null>;
}

/**
 * UploadPart: the request's body stored as its part, once verified (one request per part at a
 * time: the store's lock).
 */
export async function writePart(partSizes: PartSizes, uploadDirectory: string, upload: PartUpload) {
  const { number, content } = upload;
  const offset = placeOf(partSizes, uploadDirectory, number, Number(content.headers['content-length']));
  const ownFile = join(uploadDirectory, String(number));
  // An earlier upload of the part is gone first: a part that fails midway is no part.
  await Promise.all([rm(recordOf(uploadDirectory, number), { force: true }), rm(ownFile, { force: true })]);
  const path = offset === null ? ownFile : join(uploadDirectory, PARTS_FILE);
  const file = await open(path, constants.O_WRONLY | constants.O_CREAT);
  const md5 = createHash('md5');
  const size = await writeCounted(content, file.createWriteStream({ start: offset ?? 0 }), md5);
  // A part refused here has no record: it is no part, as after a failure midway.
  const part: StoredPart = { md5: md5.digest('hex'), size, offset, checksum: await upload.verified() };
  await writeFile(recordOf(uploadDirectory, number), JSON.stringify(part));
  return part;
}

/** The object's checksum from its parts' and the upload's headers; it throws to refuse the completion. */
export type CompletionCheck = (
  parts: readonly PartChecksum[],
  uploadHeaders: Readonly<Record<string, unknown>>,
) => Promise<StoredChecksum | null>;

/**
 * The object a multipart upload in `uploadDirectory` (s3rver's layout) completes to: its ETag,
 * size and checksum (`check`, before anything is changed), and either the file that holds exactly
 * its bytes or its bytes, read as they are consumed.
 */
export async function completedObject(
  uploadDirectory: string,
  parts: readonly PartRef[],
  check: CompletionCheck,
) {
  const ordered = [...parts].sort((a, b) => a.number - b.number);
  const [key, headers, stored] = await Promise.all([
    readFile(join(uploadDirectory, 'key'), 'utf8'),
    uploadHeaders(uploadDirectory),
    Promise.all(
      ordered.map(async ({ number }) => ({
        number,
        ...(JSON.parse(await readFile(recordOf(uploadDirectory, number), 'utf8')) as StoredPart),
      })),
    ),
  ]);
  const checksum = await check(stored, headers);
  const metadata = headers as Record<string, string>;
  const digests = Buffer.concat(stored.map((part) => Buffer.from(part.md5, 'hex')));
  const etag = `${createHash('md5').update(digests).digest('hex')}-${String(ordered.length)}`;
  let size = 0;
  let inPlace = true;
  for (const [index, part] of stored.entries()) {
    inPlace &&= part.number === index + 1 && part.offset === size;
    size += part.size;
  }
  const file = join(uploadDirectory, PARTS_FILE);
  // Parts uploaded past the last one completed, if any, are cut off.
  if (inPlace)
    return { key, metadata, etag, size, checksum, file: await truncate(file, size).then(() => file) };
  async function* bytes(): AsyncGenerator<Buffer> {
    for (const { number, size, offset } of stored) {
      const start = offset ?? 0;
      const options = { start, end: start + size - 1, highWaterMark: READ_CHUNK_BYTES };
      if (size > 0)
        yield* createReadStream(offset === null ? join(uploadDirectory, String(number)) : file, options);
    }
  }
  return { key, metadata, etag, size, checksum, content: Readable.from(bytes(), { objectMode: false }) };
}

/** The upload's stored parts in order (ListParts), with their last-modified time. */
export async function storedParts(uploadDirectory: string) {
  const records = (await readdir(uploadDirectory)).filter((name) => /^\d+\.json$/.test(name));
  const parts = await Promise.all(
    records.map(async (name) => {
      const path = join(uploadDirectory, name);
      const [text, { mtime }] = await Promise.all([readFile(path, 'utf8'), stat(path)]);
      return { number: Number.parseInt(name, 10), modified: mtime, ...(JSON.parse(text) as StoredPart) };
    }),
  );
  return parts.sort((a, b) => a.number - b.number);
}
