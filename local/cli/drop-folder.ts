/**
 * A local drop folder, read once as the bucket lists a drop (plain files with their size and the
 * etag S3 gives a file put whole, the MD5 of its bytes; names in sub-folders), so that the run's
 * own rules judge it (lambdas/drop/validate.ts's judgeDrop) before anything is sent: the one
 * reader of a folder for `hopper check` (check.ts) and `hopper run`. Nothing outside the folder is
 * ever read (the service is a third party): a symbolic link is refused, and no file is opened
 * through one. `hopper run` uploads a folder the rules let through under inbox/<folder name>/,
 * train.json last, since its arrival starts the run.
 */
import { createHash } from 'node:crypto';
import { constants } from 'node:fs';
import { open, readdir, readlink, stat, type FileHandle } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import { listingOf } from '../../lambdas/drop/listing.js';
import type { DropFile } from '../../lambdas/core/state/index.js';
import { listForMessage, quoted } from '../../lambdas/drop/user-text.js';
import { inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';
import type { DropSource } from '../../lambdas/drop/validate.js';
import { codedMessage, RunError } from '../../lambdas/core/errors/index.js';
import { CommandError } from './command.js';

/**
 * A folder refused before anything is sent (exit 1, as a run that fails): its `code` (not_a_drop,
 * linked_files, or the run's own), said in the text too, and a message saying why and what to do.
 */
export class DropFolderError extends CommandError {
  override readonly name: string = 'DropFolderError';

  constructor(message: string, code = 'not_a_drop') {
    super(code, message);
  }

  override get text(): string {
    return codedMessage(this.code, this.message);
  }
}

/** The run's rules refusing a folder, as hopper check and hopper run report it. */
export function refusedFolder(error: unknown): never {
  throw error instanceof RunError ? new DropFolderError(error.detail, error.code) : error;
}

/** A local folder as a drop: what the rules read, and where its files are. */
export interface DropFolder extends DropSource {
  /** The folder's absolute path. */
  readonly root: string;
}

/** Files uploaded at once. */
const UPLOAD_CONCURRENCY = 4;
/** Files up to this size are read whole for their etag. */
const READ_WHOLE_BYTES = 8 * 1024 * 1024;

/**
 * Lists the folder as the bucket would list its drop, each plain file read once for its etag. A
 * refusal's advice names the folder as given and the `command` to run again.
 * @throws DropFolderError naming what is wrong and how to fix it
 */
export async function readDropFolder(folder: string, command: 'check' | 'run' = 'run'): Promise<DropFolder> {
  const root = resolve(folder);
  const info = await stat(root).catch(() => null);
  if (info === null) throw new DropFolderError(`${folder}: no such folder`);
  if (!info.isDirectory()) {
    throw new DropFolderError(`${folder} is a file; give the folder that holds the data and train.json`);
  }
  const found: DropFile[] = [];
  const links: string[] = [];
  for (const entry of await readdir(root, { recursive: true, withFileTypes: true })) {
    const path = join(entry.parentPath, entry.name);
    const name = relative(root, path).split(sep).join('/');
    if (entry.isSymbolicLink()) links.push(`${quoted(name)} -> ${quoted(await readlink(path))}`);
    // A file in a sub-folder is only named (the rules refuse it): not read.
    else if (entry.isFile())
      found.push({ name, ...(name.includes('/') ? { bytes: 0, etag: '' } : await digestOf(path)) });
  }
  if (links.length > 0) {
    throw new DropFolderError(
      `${folder} holds symbolic links: ${listForMessage(links.sort(), String)}. Hopper sends only the files inside the drop folder and follows no link out of it: replace each link by a copy of what it points to, or move it out of the folder`,
      'linked_files',
    );
  }
  const listing = listingOf(found);
  checkDropFiles(folder, [...listing.files.keys()]);
  const read = async (name: string) => (await openInside(join(root, name))).createReadStream();
  return {
    root,
    drop: basename(root),
    place: { folder: folder.endsWith('/') ? folder : `${folder}/`, sendAgain: `run hopper ${command} again` },
    ...listing,
    trainJson: () => read(TRAIN_JSON),
    open: (file) => read(file.name),
  };
}

/**
 * What makes a folder no drop at all, whoever sends it (`hopper run`, the console's page):
 * `names` are its files relative to it, with `/` separators.
 */
export function checkDropFiles(folder: string, names: readonly string[]): void {
  if (!names.includes(TRAIN_JSON)) {
    throw new DropFolderError(
      `${folder} has no ${TRAIN_JSON}, which starts a run: add one ({} is valid, see docs/drop-format.md)`,
    );
  }
}

/** O_NOFOLLOW: a file made a link since the folder was read is not followed either. */
function openInside(path: string): Promise<FileHandle> {
  return open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
}

/** A file's size and the etag S3 gives it put whole: the MD5 of its bytes, in hex. */
async function digestOf(path: string): Promise<{ bytes: number; etag: string }> {
  const file = await openInside(path);
  try {
    const hash = createHash('md5');
    const { size } = await file.stat();
    // A small file in one read (a stream costs twice the time a file); a large one streamed.
    if (size <= READ_WHOLE_BYTES) hash.update(await file.readFile());
    else for await (const chunk of file.createReadStream({ autoClose: false })) hash.update(chunk as Buffer);
    return { bytes: size, etag: hash.digest('hex') };
  } finally {
    await file.close();
  }
}

/**
 * Uploads the folder's plain files but those `leftOut` (judgeDrop's) to `bucket` and resolves to
 * train.json's etag, which names the run (lambdas/trigger/start-execution.ts). train.json goes up
 * only once every other file is there.
 */
export async function uploadDropFolder(
  s3: S3Client,
  bucket: string,
  folder: DropFolder,
  leftOut: readonly string[] = [],
): Promise<string> {
  const queue = [...folder.files.values()].filter(
    (file) => file.name !== TRAIN_JSON && !leftOut.includes(file.name),
  );
  const worker = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      await putFile(s3, bucket, folder, file);
    }
  };
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
  const trainJson = folder.files.get(TRAIN_JSON);
  if (trainJson === undefined) throw new DropFolderError(`${folder.root} has no ${TRAIN_JSON}`);
  return putFile(s3, bucket, folder, trainJson);
}

async function putFile(s3: S3Client, bucket: string, folder: DropFolder, file: DropFile): Promise<string> {
  // Opened first: a file that is gone or unreadable rejects here, not in a stream mid-request.
  const handle = await openInside(join(folder.root, file.name));
  try {
    const answer = await s3.send(
      new PutObjectCommand({
        Bucket: bucket,
        Key: inboxKey(folder.drop, file.name),
        Body: handle.createReadStream(),
        ContentLength: file.bytes,
      }),
    );
    if (answer.ETag === undefined) throw new Error(`S3 returned no ETag for ${file.name}`);
    return answer.ETag;
  } finally {
    await handle.close();
  }
}

/** Files left out of the default file list, and why, as `hopper check` and `hopper run` say it. */
export function leftOutText(names: readonly string[]): string {
  return `${listForMessage(names)} (files operating systems leave in folders; name them in train.json "files" to send them)`;
}
