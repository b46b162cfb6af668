/**
 * Drops from the console's page: the page asks whether its folder can be a drop, sending its
 * files' names and sizes and train.json's bytes, which the run's own rules judge as `hopper
 * check` does (lambdas/drop/validate.ts's judgeDrop); then it sends each file, train.json last,
 * and this puts each into inbox/<drop>/ as an S3 client would. The page does not send the other
 * files' bytes first: the labels file's content is judged by the run when it starts.
 */
import type { IncomingMessage } from 'node:http';
import { Readable } from 'node:stream';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listingOf } from '../../lambdas/drop/listing.js';
import { judgeDrop } from '../../lambdas/drop/validate.js';
import { RunError } from '../../lambdas/core/errors/index.js';
import type { DropFile } from '../../lambdas/core/state/index.js';
import { inboxKey } from '../../lambdas/storage/keys.js';
import { checkDropFiles, DropFolderError as UploadError } from '../cli/drop-folder.js';

/** A drop or file name the console refuses (a 400 with this message), as `hopper run` would. */
export { UploadError };

/** A drop name is one folder: `inbox/<drop>/train.json` must be the key the rule matches. */
export function checkDropName(drop: string): void {
  if (drop === '' || drop === '.' || drop === '..' || /[/\\]/.test(drop) || drop.length > 200) {
    throw new UploadError(`"${drop}" cannot be a drop's name: give a folder name of 1 to 200 characters`);
  }
}

/** A file's name relative to the drop: `/`-separated, no empty, `.` or `..` part. */
export function checkFileName(name: string): void {
  if (name.split('/').some((part) => part === '' || part === '.' || part === '..')) {
    throw new UploadError(`"${name}" is not a file name inside the folder`);
  }
}

/** A file of the folder as the page lists it: its name relative to the folder, and its size. */
export function isPageFile(value: unknown): value is Pick<DropFile, 'name' | 'bytes'> {
  const file = value as Partial<DropFile> | null;
  return typeof file?.name === 'string' && Number.isSafeInteger(file.bytes);
}

/**
 * Whether the folder `drop` holding `files` can be a drop; throws what is wrong otherwise.
 * @throws UploadError, or RunError with the code and message the run would fail with
 */
export async function checkDrop(
  drop: string,
  files: readonly Pick<DropFile, 'name' | 'bytes'>[],
  trainJson: Buffer,
): Promise<void> {
  const names = files.map((file) => file.name);
  checkDropName(drop);
  for (const name of names) checkFileName(name);
  checkDropFiles(drop, names);
  // The etag S3 gives a file put whole is 32 hex digits: what the run's state will carry of it.
  const listing = listingOf(files.map(({ name, bytes }) => ({ name, bytes, etag: '0'.repeat(32) })));
  await judgeDrop({ drop, ...listing, trainJson: () => Promise.resolve(Readable.from([trainJson])) });
}

/** Whether `error` refuses what the page sent (a 400 with its message), rather than failing. */
export function isRefusal(error: unknown): boolean {
  return error instanceof UploadError || error instanceof URIError || error instanceof RunError;
}

/** Streams the request's body to inbox/<drop>/<name>; resolves to the object's ETag. */
export async function putDropFile(
  s3: S3Client,
  bucket: string,
  drop: string,
  name: string,
  request: IncomingMessage,
): Promise<string> {
  checkDropName(drop);
  checkFileName(name);
  const length = Number(request.headers['content-length']);
  // S3 takes no upload of unknown length in one PutObject (s3rver would, unlike S3).
  if (!Number.isSafeInteger(length) || length < 0)
    throw new UploadError('send the file with a Content-Length');
  const answer = await s3.send(
    new PutObjectCommand({ Bucket: bucket, Key: inboxKey(drop, name), Body: request, ContentLength: length }),
  );
  return answer.ETag ?? '';
}
