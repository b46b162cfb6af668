/**
 * `hopper run <folder>`'s drop: every file of the folder uploaded under inbox/<folder name>/,
 * train.json last, since its arrival starts the run. Files go as they are (sub-folders too):
 * what a drop may hold is the pipeline's rule (docs/drop-format.md), so a folder that breaks
 * it fails the run with the same error it would get in the cloud. What the folder shows at once
 * is said before uploading: a symbolic link (nothing outside the folder is ever read, the
 * service is a third party), and more data files than the service takes.
 */
import { constants } from 'node:fs';
import { open, readdir, readFile, readlink, stat } from 'node:fs/promises';
import { basename, join, relative, resolve, sep } from 'node:path';
import { PutObjectCommand, type S3Client } from '@aws-sdk/client-s3';
import {
  MAX_FILES,
  MAX_TRAIN_JSON_BYTES,
  parseTrainJson,
  type TrainJson,
} from '../../lambdas/drop/train-json.js';
import { codedMessage } from '../../lambdas/run/errors/index.js';
import { listForMessage, quoted } from '../../lambdas/drop/user-text.js';
import { DEFAULT_LABELS_FILE, inboxKey, TRAIN_JSON } from '../../lambdas/storage/keys.js';

/** A folder that cannot be dropped at all; the message says why and what to do. */
export class DropFolderError extends Error {
  override readonly name = 'DropFolderError';
}

export interface DropFolder {
  /** The drop's name: the folder's own name. */
  readonly drop: string;
  /** Files to send, relative to the folder with `/` separators; train.json not among them. */
  readonly files: readonly { readonly name: string; readonly path: string; readonly bytes: number }[];
  readonly trainJsonPath: string;
  /** train.json, checked; undefined when it does not pass (the run's first step says why, as in AWS). */
  readonly trainJson: TrainJson | undefined;
}

/** Files uploaded at once. */
const UPLOAD_CONCURRENCY = 4;

/**
 * Which files a local drop folder holds, and whether it can be dropped at all: the one reader of
 * a folder for `hopper run` (and a `hopper check`).
 * @throws DropFolderError naming what is wrong and how to fix it
 */
export async function readDropFolder(folder: string): Promise<DropFolder> {
  const root = resolve(folder);
  const info = await stat(root).catch(() => null);
  if (info === null) throw new DropFolderError(`${folder}: no such folder`);
  if (!info.isDirectory()) {
    throw new DropFolderError(`${folder} is a file; give the folder that holds the data and train.json`);
  }
  const drop = basename(root);
  const entries = await readdir(root, { recursive: true, withFileTypes: true });
  const files: { name: string; path: string; bytes: number }[] = [];
  const links: string[] = [];
  let trainJsonPath: string | undefined;
  for (const entry of entries) {
    const path = join(entry.parentPath, entry.name);
    const name = relative(root, path).split(sep).join('/');
    if (entry.isSymbolicLink()) links.push(`${quoted(name)} -> ${quoted(await readlink(path))}`);
    if (!entry.isFile()) continue;
    if (name === TRAIN_JSON) trainJsonPath = path;
    else files.push({ name, path, bytes: (await stat(path)).size });
  }
  if (links.length > 0) {
    throw new DropFolderError(
      codedMessage(
        'linked_files',
        `${folder} holds symbolic links: ${listForMessage(links.sort(), String)}. Hopper sends only the files inside the drop folder and follows no link out of it: replace each link by a copy of what it points to, or move it out of the folder`,
      ),
    );
  }
  checkDropFiles(folder, trainJsonPath === undefined ? [] : [TRAIN_JSON]);
  files.sort((a, b) => a.name.localeCompare(b.name));
  const path = trainJsonPath ?? join(root, TRAIN_JSON);
  const small = (await stat(path)).size <= MAX_TRAIN_JSON_BYTES;
  const trainJson = small
    ? await readFile(path)
        .then(parseTrainJson)
        .catch(() => undefined)
    : undefined;
  checkDataFileCount(folder, files, trainJson);
  return { drop, files, trainJsonPath: path, trainJson };
}

/**
 * What makes a folder no drop at all, whoever sends it (`hopper run`, the console's page):
 * `names` are its files relative to it, with `/` separators. Everything else is the pipeline's
 * rule, checked by the run itself so the error is the one AWS would give.
 */
export function checkDropFiles(folder: string, names: readonly string[]): void {
  if (!names.includes(TRAIN_JSON)) {
    throw new DropFolderError(
      `${folder} has no ${TRAIN_JSON}, which starts a run: add one ({} is valid, see docs/drop-format.md)`,
    );
  }
}

/**
 * The service takes at most MAX_FILES files per dataset, so a folder that would send more is
 * refused before anything is uploaded. The count follows the pipeline's default (every plain
 * file but train.json and the labels file); a train.json that lists "files", or does not pass,
 * is left to the run's first step, which checks it as in the cloud.
 */
function checkDataFileCount(
  folder: string,
  files: readonly { readonly name: string }[],
  trainJson: TrainJson | undefined,
): void {
  if (trainJson === undefined || trainJson.files !== undefined) return;
  const labels = trainJson.labels ?? DEFAULT_LABELS_FILE;
  const count = files.filter((file) => !file.name.includes('/') && file.name !== labels).length;
  if (count <= MAX_FILES) return;
  throw new DropFolderError(
    `${folder} holds ${String(count)} data files and the service takes at most ${String(MAX_FILES)} per dataset: list the files to send in train.json "files", or split the folder into drops of at most ${String(MAX_FILES)} files`,
  );
}

/**
 * Uploads the folder to `bucket` and resolves to train.json's etag, which names the run
 * (lambdas/trigger/start-execution.ts). train.json goes up only once every other file is there.
 */
export async function uploadDropFolder(s3: S3Client, bucket: string, folder: DropFolder): Promise<string> {
  const queue = [...folder.files];
  const worker = async (): Promise<void> => {
    for (let file = queue.shift(); file !== undefined; file = queue.shift()) {
      await putFile(s3, bucket, inboxKey(folder.drop, file.name), file.path, file.bytes);
    }
  };
  await Promise.all(Array.from({ length: UPLOAD_CONCURRENCY }, worker));
  const trainJsonBytes = (await stat(folder.trainJsonPath)).size;
  return putFile(s3, bucket, inboxKey(folder.drop, TRAIN_JSON), folder.trainJsonPath, trainJsonBytes);
}

async function putFile(
  s3: S3Client,
  bucket: string,
  key: string,
  path: string,
  bytes: number,
): Promise<string> {
  // Opened first: a file that is gone or unreadable rejects here. A stream left to open it
  // itself would emit the error where no one listens (an uncaught exception) mid-request.
  // O_NOFOLLOW: a file made a link since the folder was read is not followed either.
  const file = await open(path, constants.O_RDONLY | constants.O_NOFOLLOW);
  try {
    const answer = await s3.send(
      new PutObjectCommand({ Bucket: bucket, Key: key, Body: file.createReadStream(), ContentLength: bytes }),
    );
    if (answer.ETag === undefined) throw new Error(`S3 returned no ETag for ${key}`);
    return answer.ETag;
  } finally {
    await file.close();
  }
}
