/**
 * Drops from the console's page: the page asks whether its folder can be a drop (the same
 * check as `hopper run`'s, see drop-folder.ts), then sends each file, train.json last, and
 * this puts each into inbox/<drop>/ as an S3 client would.
 */
import type { IncomingMessage } from 'node:http';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
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

/** Whether the folder `drop` holding `names` can be dropped; throws what is wrong otherwise. */
export function checkDrop(drop: string, names: readonly string[]): void {
  checkDropName(drop);
  for (const name of names) checkFileName(name);
  checkDropFiles(drop, names);
}

/** Whether `error` refuses what the page sent (a 400 with its message), rather than failing. */
export function isRefusal(error: unknown): boolean {
  return error instanceof UploadError || error instanceof URIError;
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
